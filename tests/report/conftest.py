"""Fixtures of the report's pytester tests (the suite copy of tests/plugin/suite.py)."""

from plugin.suite import suite  # noqa: F401  (the fixture)
