"""Fixtures of the plugin's pytester tests (see pytester_suite.py)."""

from .pytester_suite import suite  # noqa: F401  (the fixture)
