"""What characters a value may hold, by where it goes; each refusal is one line.

Row ids, variants and other names reach file names, job names and `#SBATCH` lines, so they
take a fixed set; free text (notes, sources, env values) takes anything printable. A line
break is what turns a value into a second line of an sbatch script, so no value anywhere
may hold a control character, a lone surrogate (undecodable input), a Unicode line or
paragraph separator, or a bidirectional override (text that reads differently from what a
reviewer sees).
"""

from __future__ import annotations

import re
import unicodedata

from perfgate import limits, secrets
from perfgate.errors import ConfigError

# Names: row ids and variants, GPU/task/precision/backend tokens. Model keys are snake_case.
NAME = re.compile(r"[A-Za-z0-9._-]+")
MODEL = re.compile(r"[a-z0-9_]+")
# Lowercase names are allowed: http_proxy and no_proxy are spelled that way by convention.
ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# Override paths: recipe attribute paths and Automodel YAML paths (list indices included).
DOTTED = re.compile(r"[A-Za-z0-9_-]+(?:\.[A-Za-z0-9_-]+)*")

RULES = {
    NAME: "only letters, digits, '.', '_' and '-' are allowed",
    MODEL: "only lowercase letters, digits and '_' are allowed",
    ENV_NAME: "an environment variable name is a letter or '_', then letters, digits, '_'",
    DOTTED: "a dotted path of letters, digits, '_' and '-' (e.g. model.config.tp) is expected",
}
_CHARS = {
    NAME: re.compile(r"[A-Za-z0-9._-]"),
    MODEL: re.compile(r"[a-z0-9_]"),
    ENV_NAME: re.compile(r"[A-Za-z0-9_]"),
    DOTTED: re.compile(r"[A-Za-z0-9._-]"),
}
_BIDI = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
SHOWN_CHARS = 40


def shown(value: object, limit: int = SHOWN_CHARS) -> str:
    """repr of a value for an error line, cut to about `limit` characters."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def bad_field(where: str, name: str, problem: str, value: object) -> ConfigError:
    """The catalog's one-line error: "<where>: field 'x': <problem>, not <value>" (value cut)."""
    return ConfigError(f"{where}: field {name!r}: {problem}, not {shown(value, 80)}")


def bad_char(text: str) -> str | None:
    """The first control, surrogate, line-separator or bidi-override character, or None."""
    for ch in text:
        if ch in _BIDI or unicodedata.category(ch) in ("Cc", "Cs", "Zl", "Zp"):
            return ch
    return None


def check_length(where: str, field: str, value: str, cap: int, what: str) -> None:
    """A one-line error when value is longer than cap characters (its start shown)."""
    if len(value) > cap:
        raise ConfigError(
            f"{where}: field {field!r} = {shown(value)}: {what} has at most {cap:,} characters, "
            f"not {len(value):,}"
        )


def check_name(where: str, field: str, value: str, rule: re.Pattern[str] = NAME) -> str:
    """value when it matches rule (NAME, MODEL, ENV_NAME or DOTTED) and is at most
    MAX_NAME_CHARS long; a one-line error if not."""
    check_length(where, field, value, limits.MAX_NAME_CHARS, "a name")
    if not rule.fullmatch(value):
        stray = next((ch for ch in value if not _CHARS[rule].fullmatch(ch)), None)
        not_this = f", not {stray!r}" if stray is not None else ""
        raise ConfigError(f"{where}: field {field!r} = {shown(value)}: {RULES[rule]}{not_this}")
    return value


def check_text(where: str, field: str, value: str, secret: bool = False) -> str:
    """value when it holds no control character and is at most MAX_TEXT_CHARS long; secret
    values are never shown."""
    if len(value) > limits.MAX_TEXT_CHARS:
        what = "(a secret, not shown)" if secret else shown(value)
        raise ConfigError(
            f"{where}: field {field!r} = {what}: a value has at most "
            f"{limits.MAX_TEXT_CHARS:,} characters, not {len(value):,}"
        )
    ch = bad_char(value)
    if ch is not None:
        what = "(a secret, not shown)" if secret else shown(value)
        raise ConfigError(
            f"{where}: field {field!r} = {what}: control character {ch!r} is not allowed"
        )
    return value


def check_tree(where: str, field: str, value: object) -> None:
    """Every string (and key) inside a JSON value (override values, nested objects)."""
    if isinstance(value, str):
        check_text(where, field, value)
    elif isinstance(value, list):
        for i, item in enumerate(value):
            check_tree(where, f"{field}[{i}]", item)
    elif isinstance(value, dict):
        for key, item in value.items():
            check_text(where, f"{field} key", str(key))
            check_tree(where, f"{field}.{key}", item)


# What a terminal acts on instead of showing: C0 controls but \t and \n (ESC starts a screen
# clear or an OSC 52 clipboard write, \r overwrites a line), DEL and C1 controls, line and
# paragraph separators, bidi overrides, and lone surrogates (undecodable bytes).
_UNPRINTABLE = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff" + "".join(sorted(_BIDI)) + "]"
)


def printable(text: str) -> str:
    """text safe to print on a terminal: every character it would act on shown as an escape
    (ESC -> \\x1b, U+202E -> \\u202e); line breaks and tabs kept. For all log and job text."""
    return _UNPRINTABLE.sub(_escape, text)


def _escape(m: re.Match[str]) -> str:
    code = ord(m.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def one_line(text: str) -> str:
    """text as one terminal line: printable, and a newline or tab shown as \\n, \\t too, so an
    outside value can never cut a line meant to be pasted (an --exclude= list, an error)."""
    return printable(text).replace("\n", "\\n").replace("\t", "\\t")


def for_terminal(text: str, line: bool = False) -> str:
    """The one rule for outside text (logs, job messages, names, a file's values) on a
    terminal: secrets masked (perfgate.secrets.redact), then printable, or one_line when
    `line` (a value inside a line)."""
    masked = secrets.redact(text)
    return one_line(masked) if line else printable(masked)
