"""The programs under programs/ import torch: they are loaded by test_porting.py (once as
written, once with tpx imports), never collected or imported on their own."""

collect_ignore_glob = ["programs/*.py"]
