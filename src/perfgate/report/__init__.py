"""The sign-off report: pytest-html columns and extras, plots, results.json, benchmark feed.

Only this package knows HTML. results.json (perfgate.report.results) is the single source:
the pytest-html hooks and `perfgate report` render the same records.
"""
