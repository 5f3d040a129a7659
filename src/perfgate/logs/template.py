"""Dense logs in bulk: a step line's shape learned from one line, then matched whole.

A pretraining log prints one line per step, millions of them, all alike but for their
numbers. Reading each through the record path (anchor search, field split, a Record with a
dict of values) costs ~40 us a line. A Template is learned from a line whose record the
record path built (perfgate.logs.lines.extract): its prefix (timestamp and rank label, digit
runs kept at their width), the shape's own anchor regex, then its `| key: value` fields with
the keys as literals and the values as groups. A later line that matches it is read from the
groups in a few microseconds, straight into columns.

Why a match gives what the record path would: the variable parts of a template hold digits
(prefix, anchor), numbers (the values read) or text without letters other than e/E (the
values not read), so no line matching it can hold an anchor or gate that the learned line
did not; the learned line held exactly one anchor. Each template is checked against the record
path on its first VERIFY lines and dropped at the first difference.
Pure stdlib (the workload imports it inside the container).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass

from perfgate.logs.formats import MAX_STEP, Record
from perfgate.logs.formats.fields import milli
from perfgate.logs.lines import anchors, rank_label
from perfgate.logs.table import NO_RANK

VERIFY = 16  # lines of each template also read the slow way, and compared
MAX_TEMPLATES = 8  # per file: rank label widths, key sets that change after the first steps
MAX_FAILED = 8  # lines that yielded no template before learning stops (a log it cannot read)

_FIELD = re.compile(r"\|\s*([A-Za-z][^|:]*?)\s*:\s*([^|]*?)\s*(?=\||$)")
_DIGITS = re.compile(r"\d+")
# A value the record is not read from: anything without `|` or a letter other than e/E, so
# that no gate or anchor can hide in it (greedy: it takes the blanks before the next `|`).
_OTHER = r"[^|A-DF-Za-df-z]*"
# A value read: the characters of a number, or a signed nan/inf (twice as fast as NUM's
# alternation); float() then accepts exactly the strings of these that NUM spells in full.
_NUMBER = r"([-+.0-9eE]+|[-+]?(?:nan|NaN|inf))\s*"


def _unit(per: float) -> int:
    """0: as logged, 1: divided by per, 2: milliseconds (milli's decimal shift)."""
    return 0 if per == 1.0 else 2 if per == 1000.0 else 1


@dataclass
class Template:
    """One learned line shape of a dense kind, and how its groups become a record."""

    kind: str
    head: re.Pattern[str]  # prefix (rank label group first, if any) + the anchor regex
    fields: re.Pattern[str]  # the `| key: value` fields, matched from the anchor's end on
    fields_at: int
    labelled: bool  # the head's first group is the rank label
    anchor_groups: int  # groups of the anchor regex, after the label group
    names: tuple[str, ...]  # the record values read, in the order read() returns them
    values: tuple[tuple[int, int, float], ...]  # (fields group, _unit code, unit) per name
    step_keys: tuple[tuple[str, int], ...]  # (key, fields group) read for the step number
    step_of: Callable[[tuple[str | None, ...], dict[str, float]], int]
    checked: int = 0  # lines compared with the record path so far

    def read(self, line: str) -> tuple[int, int, list[float]] | None:
        """(rank or NO_RANK, step, values in names' order) of a line of this shape, or None."""
        h = self.head.match(line)
        if h is None:
            return None
        f = self.fields.fullmatch(line, h.end() + self.fields_at)
        if f is None:
            return None
        groups = h.groups()
        rank = NO_RANK
        if self.labelled:
            rank = int(groups[0])
            groups = groups[1:]
        g = f.groups()
        try:
            x = list(map(float, g))  # float's grammar for digits, point, exponent is NUM's
        except ValueError:  # characters of a number, but not one (1.2.3)
            return None
        values = [
            x[i] if code == 0 else x[i] / per if code == 1 else milli(g[i])
            for i, code, per in self.values
        ]
        read = {key: x[i] for key, i in self.step_keys} if self.step_keys else {}
        step = self.step_of(groups, read)
        if abs(step) > MAX_STEP:
            return None  # the record path drops it: let it say so
        return rank, step, values


def learn(line: str, rec: Record) -> Template | None:
    """The template of the line rec was read from (one dense record on it), or None."""
    if "\x1b" in line:
        return None
    _, clean, found = anchors(line)
    if len(found) != 1:
        return None
    start, end, shape, _ = found[0]
    dense = shape.dense
    if dense is None or shape.kind != rec.kind:
        return None
    head, labelled = _prefix(clean[:start])
    if head is None:
        return None
    fields_at = end + dense.fields_at
    parts = _fields(clean, fields_at)
    if parts is None:
        return None
    keys = [k for k, _ in parts]
    last = {k: i for i, k in enumerate(keys)}  # a key given twice: the last one counts
    wanted: dict[int, tuple[int, float]] = {}  # field position -> (unit code, unit)
    names: dict[int, str] = {}
    for name, by_precedence, per in dense.values:
        key = next((k for k in by_precedence if k in last), None)
        if key is not None:
            wanted[last[key]], names[last[key]] = (_unit(per), per), name
    step_at = {last[k]: k for k in dense.step_keys if k in last}
    group = {pos: g for g, pos in enumerate(sorted({*wanted, *step_at}))}  # position -> group
    values = tuple((group[pos], code, per) for pos, (code, per) in wanted.items())
    step_keys = tuple((key, group[pos]) for pos, key in step_at.items())
    fields = "".join(
        r"\|\s*" + re.escape(k) + r"\s*:\s*" + (_NUMBER if i in group else _OTHER)
        for i, k in enumerate(keys)
    )
    tail = r"(?:\|\s*)?"
    t = Template(
        kind=shape.kind,
        head=re.compile(head + "(?:" + shape.regex.pattern + ")", shape.regex.flags),
        fields=re.compile(r"\s*" + fields + tail, re.DOTALL),
        fields_at=dense.fields_at,
        labelled=labelled,
        anchor_groups=shape.regex.groups,
        names=tuple(names[pos] for pos in wanted),
        values=values,
        step_keys=step_keys,
        step_of=dense.step_of,
    )
    got = t.read(line)
    if got is None or not same(t, got, rec):
        return None  # the template does not read its own line as the record path did
    return t


def same(t: Template, got: tuple[int, int, list[float]], rec: Record) -> bool:
    """True when a template read what the record path did (NaN equals NaN here)."""
    rank, step, read = got
    values = dict(zip(t.names, read, strict=True))
    if (rank, step) != (NO_RANK if rec.rank is None else rec.rank, rec.step):
        return False
    if values.keys() != rec.values.keys():
        return False
    return all(_equal(values[k], rec.values[k]) for k in values)


def _equal(a: float, b: float) -> bool:
    return a == b or (math.isnan(a) and math.isnan(b))


def _prefix(text: str) -> tuple[str | None, bool]:
    """The regex of what precedes the anchor: digit runs at their width, the label as a group."""
    label = rank_label(text)
    if label is None:
        return _literal(text), False
    if label.end() != len(text) and _DIGITS.search(text, label.end()):
        return None, False  # digits after the label: a second label or a counter, read slowly
    group = label.lastindex or 1
    inner = r"\s*(\d{1,6}): " if group == 1 else _torchrun(text[label.start() : label.end()])
    return _literal(text[: label.start()]) + inner + _literal(text[label.end() :]), True


def _torchrun(label: str) -> str:
    word = "default" if label.startswith("[default") else "rank"
    return r"\[" + word + r"(\d{1,6})\]:"


def _literal(text: str) -> str:
    out, pos = [], 0
    for m in _DIGITS.finditer(text):
        out.append(re.escape(text[pos : m.start()]) + rf"\d{{{len(m.group())}}}")
        pos = m.end()
    return "".join(out) + re.escape(text[pos:])


def _fields(line: str, pos: int) -> list[tuple[str, str]] | None:
    """The (key, value) fields from pos to the line's end, when nothing else is there."""
    rest = line[pos:]
    lead = len(rest) - len(rest.lstrip())
    at = lead
    out = []
    for m in _FIELD.finditer(rest, lead):
        if m.start() != at:
            return None
        out.append((m.group(1), m.group(2)))
        at = m.end()
    trailer = rest[at:]
    if trailer.strip() not in ("", "|") or not out:
        return None
    return out
