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

import itertools
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

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
_NUMBER = r"([-+.0-9eE]+|[-+]?(?:nan|NaN|inf))"


def _unit(per: float) -> int:
    """0: as logged, 1: divided by per, 2: milliseconds (milli's decimal shift)."""
    return 0 if per == 1.0 else 2 if per == 1000.0 else 1


@dataclass
class Template:
    """One learned line shape of a dense kind, and how its groups become a record."""

    kind: str
    # The whole line: prefix (rank label group first, if any), the anchor regex, the fields.
    rx: re.Pattern[str]
    labelled: bool
    anchor: slice  # the anchor regex's groups among rx's
    names: tuple[str, ...]  # the record values read, in the order read() returns them
    values: tuple[tuple[int, int, float], ...]  # (rx group, _unit code, unit) per name
    step_keys: tuple[tuple[str, int], ...]  # (key, rx group) read for the step number
    step_of: Callable[[tuple[str | None, ...], dict[str, float]], int]
    steps_of: Callable[[list[list[str]], dict[str, list[float]]], list[int]]
    floats: tuple[int, ...]  # the rx groups that hold numbers
    checked: int = 0  # lines compared with the record path so far

    def read(self, line: str) -> tuple[int, int, list[float]] | None:
        """(rank or NO_RANK, step, values in names' order) of a line of this shape, or None."""
        m = self.rx.fullmatch(line)
        if m is None:
            return None
        g = m.groups()
        try:
            x = {i: float(g[i]) for i in self.floats}  # float's grammar is NUM's here
        except ValueError:  # characters of a number, but not one (1.2.3)
            return None
        values = [
            x[i] if code == 0 else x[i] / per if code == 1 else milli(g[i] or "")
            for i, code, per in self.values
        ]
        step = self.step_of(g[self.anchor], {key: x[i] for key, i in self.step_keys})
        if abs(step) > MAX_STEP:
            return None  # the record path drops it: let it say so
        return (int(g[0] or 0) if self.labelled else NO_RANK), step, values

    def columns(
        self, found: list[re.Match[str]]
    ) -> tuple[list[int], list[int], list[list[float]]] | None:
        """(ranks, steps, value columns in names' order) of lines this template matched
        (rx.fullmatch), or None when one holds no number where it must. Group extraction and
        number conversion run in C, a column at a time."""

        def column(i: int) -> list[str]:  # groups() index i is group i + 1
            return list(map(re.Match.group, found, itertools.repeat(i + 1)))

        text = {i: column(i) for i in {*self.floats, *(i for i, c, _ in self.values if c == 2)}}
        try:
            x = {i: list(map(float, text[i])) for i in self.floats}
        except ValueError:
            return None
        values = [
            x[i] if code == 0 else [v / per for v in x[i]] if code == 1 else _millis(text[i])
            for i, code, per in self.values
        ]
        anchor = [column(i) for i in range(self.anchor.start, self.anchor.stop)]
        steps = self.steps_of(anchor, {key: x[i] for key, i in self.step_keys})
        if max(steps) > MAX_STEP or min(steps) < -MAX_STEP:
            return None
        ranks = list(map(int, column(0))) if self.labelled else [NO_RANK] * len(found)
        return ranks, steps, values


def _millis(texts: list[str]) -> list[float]:
    """milli() of each text; plain decimals in C (`5444.9` + `e-3`), others one by one."""
    try:
        return list(map(float, map("{}e-3".format, texts)))
    except ValueError:
        return list(map(milli, texts))


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
    parts = _fields(clean, end + dense.fields_at)
    if parts is None:
        return None
    lead, found_fields, trailer = parts
    keys = [f.key for f in found_fields]
    last = {k: i for i, k in enumerate(keys)}  # a key given twice: the last one counts
    wanted: dict[int, tuple[int, float]] = {}  # field position -> (unit code, unit)
    names: dict[int, str] = {}
    for name, by_precedence, per in dense.values:
        key = next((k for k in by_precedence if k in last), None)
        if key is not None:
            wanted[last[key]], names[last[key]] = (_unit(per), per), name
    step_at = {last[k]: k for k in dense.step_keys if k in last}
    read = sorted({*wanted, *step_at})
    # Groups: the label (if any), the anchor's, then the fields read, in field order.
    first = int(labelled) + shape.regex.groups
    group = {pos: first + g for g, pos in enumerate(read)}  # field position -> rx group
    fields = [
        r"\|"
        + _blank(f.after_pipe)
        + re.escape(f.key)
        + _blank(f.before_colon)
        + ":"
        + _blank(f.after_colon)
        + (_NUMBER + _blank(f.after_value) if i in group else _OTHER)
        for i, f in enumerate(found_fields)
    ]
    if dense.fields_at == -1:  # the anchor ends with the first field's `|`: it is consumed
        fields[0] = fields[0].removeprefix(r"\|")
    tail = r"\|" + _blank(trailer[1:]) if trailer else ""  # "" or `|` and blanks
    rx = head + "(?:" + shape.regex.pattern + ")" + _blank(lead) + "".join(fields) + tail
    t = Template(
        kind=shape.kind,
        rx=re.compile(rx, shape.regex.flags),
        labelled=labelled,
        anchor=slice(int(labelled), first),
        names=tuple(names[pos] for pos in wanted),
        values=tuple((group[pos], code, per) for pos, (code, per) in wanted.items()),
        step_keys=tuple((key, group[pos]) for pos, key in step_at.items()),
        step_of=dense.step_of,
        steps_of=dense.steps_of,
        # The groups float() reads: milliseconds are read from their text (milli) instead.
        floats=tuple(group[pos] for pos in read if pos in step_at or wanted[pos][0] != 2),
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


class _Field(NamedTuple):
    """One `| key: value` field of a learned line, with the blanks around its parts."""

    key: str
    value: str
    after_pipe: str
    before_colon: str
    after_colon: str
    after_value: str


def _fields(line: str, pos: int) -> tuple[str, list[_Field], str] | None:
    """(blanks before the first `|`, the fields, what follows the last) from pos to the
    line's end, when nothing else is there."""
    rest = line[pos:]
    lead = len(rest) - len(rest.lstrip())
    at = lead
    out = []
    for m in _FIELD.finditer(rest, lead):
        if m.start() != at:
            return None
        colon = rest.index(":", m.end(1))
        out.append(
            _Field(
                m.group(1),
                m.group(2),
                rest[m.start() + 1 : m.start(1)],
                rest[m.end(1) : colon],
                rest[colon + 1 : m.start(2)],
                rest[m.end(2) : m.end()],
            )
        )
        at = m.end()
    trailer = rest[at:]
    if trailer.strip() not in ("", "|") or not out:
        return None
    return rest[:lead], out, trailer


def _blank(text: str) -> str:
    """The regex of blanks as the learned line has them: none or one exactly (a literal is
    faster to match), more as any run of blanks (padded numbers change width)."""
    return re.escape(text) if len(text) <= 1 else r"\s*"
