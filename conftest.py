"""Root conftest: it only loads the perfgate plugin (options, rows as tests, report)."""

pytest_plugins = ["perfgate.suite.plugin"]
