"""The one exception type users see: a single line naming the file, field and value."""

from __future__ import annotations


class PerfgateError(Exception):
    """A user-facing error whose message is one line and needs no traceback to act on."""

    def __init__(self, message: str) -> None:
        # Keep it to one line: pytest, the CLI and the report all print it verbatim.
        super().__init__(" ".join(str(message).split()))


class ConfigError(PerfgateError):
    """Bad input: a malformed baseline file, an unknown model/gpu/precision, a bad option."""


class LogParseError(PerfgateError):
    """A log that cannot be read or holds no step times."""
