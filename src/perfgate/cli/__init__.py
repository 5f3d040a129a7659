"""The `perfgate` command: one module of this package per verb, each with `add(sub)` to
register it and the function it runs; this module only builds the parser and dispatches.

Every subcommand prints JSON with --json. Bad input is one line on stderr and exit status 2.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

from perfgate import notices
from perfgate.charset import for_terminal, printable
from perfgate.cli import (
    bisect,
    calibrate,
    compare,
    dashboard,
    flops,
    fmt,
    history,
    list_rows,
    nodes,
    parse,
    report,
    validate,
)
from perfgate.errors import PerfgateError

# In the order `perfgate --help` lists them (flops registers mfu too).
VERBS = (
    flops,
    parse,
    compare,
    report,
    list_rows,
    validate,
    fmt,
    history,
    calibrate,
    nodes,
    dashboard,
    bisect,
)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the `perfgate` command."""
    parser = argparse.ArgumentParser(
        prog="perfgate", description="NeMo LLM training performance: numbers and verdicts."
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for verb in VERBS:
        verb.add(sub)
    return parser


class _Escaped:
    """A terminal stream that shows what a terminal would act on (ESC, OSC, BEL, CR, ...) as
    escapes (charset.printable): the last guard, whatever a command prints from outside."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        return self._stream.write(printable(text))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the exit status (2 for bad input)."""
    notices.reset()
    out, err = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = _Escaped(out), _Escaped(err)
    try:
        with notices.routed(lambda line: print(line, file=sys.stderr, flush=True)):
            return _main(argv)
    finally:
        sys.stdout, sys.stderr = out, err


def _main(argv: Sequence[str] | None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except PerfgateError as e:
        line = for_terminal(str(e), line=True)
        print(f"perfgate {args.command}: error: {line}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0
