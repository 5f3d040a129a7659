"""Fixtures of the plugin's pytester tests (see suite.py)."""

from .suite import suite  # noqa: F401  (the fixture)
