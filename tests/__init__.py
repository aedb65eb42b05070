"""The test suite, a package: shared helpers are imported as ``tests.helpers.<name>``."""
