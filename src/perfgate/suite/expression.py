"""pytest's -m / -k expressions (`h100 and not fp8`, `(lora or sft) and llama`) outside pytest.

pytest parses them with `_pytest.mark.expression.Expression`, which is private, so `perfgate
list` evaluates them here with the same grammar (or, and, not, parentheses, identifiers of
word characters and : + - . [ ] \\ /; `and` binds tighter than `or`). What an identifier
matches is the caller's: a row's marker names for -m, substrings of its id and markers for -k.
Marker arguments (pytest >= 8.3's `-m "mark(x=1)"`) are not supported: rows' markers have none.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from perfgate.errors import ConfigError

_TOKEN = re.compile(r"\s*(?:(\()|(\))|([\w:+\-.\[\]\\/]+))")
_KEYWORDS = ("and", "or", "not")
_CALL = re.compile(r"([\w:+\-.\[\]\\/]+)\s*\(")  # mark(args): pytest >= 8.3 only


def _tokens(text: str, option: str) -> list[str]:
    call = _CALL.search(text)
    if call and call.group(1) not in _KEYWORDS:
        raise ConfigError(f"{option} {text!r}: marker arguments are not supported")
    out: list[str] = []
    pos = 0
    while pos < len(text):
        if not text[pos:].strip():
            break
        m = _TOKEN.match(text, pos)
        if not m:
            raise ConfigError(f"{option} {text!r}: unexpected character {text[pos:].strip()[0]!r}")
        out.append(m.group(m.lastindex or 0))
        pos = m.end()
    return out


def identifiers(text: str, option: str = "-m") -> list[str]:
    """The identifiers an expression names, in order (keywords and parentheses left out)."""
    return [t for t in _tokens(text, option) if t not in ("(", ")", *_KEYWORDS)]


def matches(text: str, has: Callable[[str], bool], option: str = "-m") -> bool:
    """Evaluate an expression; has(identifier) says whether the identifier matches."""
    tokens = _tokens(text, option)
    if not tokens:
        return True  # pytest: an empty expression selects everything
    pos = 0

    def fail(what: str) -> ConfigError:
        return ConfigError(f"{option} {text!r}: {what}")

    def peek() -> str | None:
        return tokens[pos] if pos < len(tokens) else None

    def take() -> str:
        nonlocal pos
        if pos >= len(tokens):
            raise fail("unexpected end of expression")
        pos += 1
        return tokens[pos - 1]

    def chain(op: str, operand: Callable[[], bool]) -> bool:
        """operand (op operand)*: every operand is parsed, so any syntax error is found."""
        values = [operand()]
        while peek() == op:
            take()
            values.append(operand())
        return any(values) if op == "or" else all(values)

    def expr() -> bool:
        return chain("or", conjunction)

    def conjunction() -> bool:
        return chain("and", negation)

    def negation() -> bool:
        tok = take()
        if tok == "not":
            return not negation()
        if tok == "(":
            value = expr()
            if take() != ")":
                raise fail("expected ')'")
            return value
        if tok == ")" or tok in _KEYWORDS:
            raise fail(f"unexpected {tok!r}")
        if peek() == "(":
            raise fail("marker arguments are not supported")
        return has(tok)

    value = expr()
    if pos != len(tokens):
        raise fail(f"unexpected {tokens[pos]!r}")
    return value
