"""Warnings about what perfgate read from outside and left out: one line each, said once.

The readers at the door (node names, the history, results.json, steps.json, log lines) leave
a bad item out and go on; each says so here, naming the source, the field and what was
expected. A line is masked and escaped by the terminal rule (charset.for_terminal), so a
hostile value can neither act on the terminal nor leak a secret, and said once per process
(a history read for every row must not repeat its warning for every row).

Where it goes: stderr (the perfgate command), or the sink a pytest session routes it to (its
terminal reporter), while `routed` is in force.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from perfgate.charset import for_terminal

Sink = Callable[[str], None]
MAX_CHARS = 400  # a warning line is about one item, never its whole value
_seen: dict[str, None] = {}
_sinks: list[Sink] = []


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def warn(message: str) -> None:
    """Say one line (masked, escaped, cut) unless it was said already in this process."""
    line = for_terminal(message, line=True)
    if len(line) > MAX_CHARS:
        line = line[: MAX_CHARS - 1] + "…"
    if line in _seen:
        return
    _seen[line] = None
    (_sinks[-1] if _sinks else _stderr)(f"perfgate: warning: {line}")


def said() -> list[str]:
    """Every warning said so far in this process, oldest first."""
    return list(_seen)


def reset() -> None:
    """Forget what was said (a new command in the same process says it again)."""
    _seen.clear()


@contextmanager
def routed(sink: Sink) -> Iterator[None]:
    """Send warnings to sink while the block runs (a pytest session: its terminal)."""
    _sinks.append(sink)
    try:
        yield
    finally:
        _sinks.remove(sink)


def route(sink: Sink) -> None:
    """Send warnings to sink from now on (a pytest session's configure; unroute at its end)."""
    _sinks.append(sink)


def unroute(sink: Sink) -> None:
    """Stop sending warnings to sink."""
    if sink in _sinks:
        _sinks.remove(sink)
