"""Fixtures of the report's pytester tests (the suite copy of tests/suite/pytester_suite.py)."""

from suite.pytester_suite import suite  # noqa: F401  (the fixture)
