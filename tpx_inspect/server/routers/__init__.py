"""The API's routers: runs (and the live feed), graphs (views, nodes, checks, exports), diff."""
