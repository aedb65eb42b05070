"""Helpers shared by several test folders (case tables, checkers, small scripts)."""
