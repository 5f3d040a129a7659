"""Node names: the one grammar every name perfgate reads from outside must fit.

Names come from Slurm (sacct's and squeue's NodeList, scontrol, SLURM_JOB_NODELIST), from
training logs (NVRx straggler reports), from steps.json and from a shared history, and they
go back out: into a confirmation's `#SBATCH --exclude=`, onto the terminal, into the report.
A name is a Slurm host name: dot-separated labels of letters, digits, '_' and '-', each
starting and ending with a letter, digit or '_', at most MAX_NAME_CHARS long. That leaves out
everything sbatch or a terminal would read as more than one name: ',' (two names), '/' (sbatch
reads an --exclude holding one as a file name), '[' (a host range), whitespace, quotes and
control characters (a second line).

A host *list* (what Slurm itself prints: `gpu[001-003,007],login1`, `rack[1-2]-n[1-2]`,
'None assigned' for none) is expanded by Slurm's rules (the width of a range's lower bound
pads its numbers; several bracket groups multiply) into at most MAX_NODES names, or refused.
Where a single name is expected (a history's or steps.json's list, a log line), a host range
is not a name: it is refused, never expanded (one name must not widen an exclude list).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from perfgate import limits
from perfgate.charset import one_line

MAX_NAME_CHARS = 253  # a DNS name's limit; Slurm's NodeName is a host name
MAX_NODES = int(limits.NODES.value)
MAX_LIST_CHARS = 1 << 20  # a host list of MAX_NODES short names, compressed, is far shorter
_LABEL = r"[A-Za-z0-9_](?:[A-Za-z0-9_-]*[A-Za-z0-9_])?"
NAME = re.compile(rf"{_LABEL}(?:\.{_LABEL})*")
# What Slurm prints for "no node" (sacct: 'None assigned'; scontrol: '(null)').
NO_NODE = frozenset({"", "none assigned", "(null)", "none", "n/a"})
_NOT_NAMES = frozenset({"none", "null", "assigned"})  # words of "no node", never a host
_GROUP = re.compile(r"\[([^\[\]]*)\]")
_RANGE = re.compile(r"(\d+)(?:-(\d+))?")


class BadNodes(ValueError):
    """A host list or node name outside the grammar: why, in words (one line)."""


def why_not(name: object) -> str | None:
    """Why name is not one Slurm host name (a phrase), or None when it is."""
    if not isinstance(name, str):
        return f"a node name is a string, not {type(name).__name__}"
    if not name:
        return "an empty name"
    if len(name) > MAX_NAME_CHARS:
        return f"a node name has at most {MAX_NAME_CHARS} characters, not {len(name):,}"
    if "[" in name or "," in name:
        return "a host range or list, not one name"
    if name.lower() in _NOT_NAMES:
        return "a word of Slurm's 'no node', not a host"
    if not NAME.fullmatch(name):
        stray = next((c for c in name if not re.fullmatch(r"[A-Za-z0-9_.-]", c)), None)
        what = f"{stray!r} is not allowed" if stray is not None else "misplaced '.' or '-'"
        return f"not a host name ({what})"
    return None


def is_name(name: object) -> bool:
    """True for one Slurm host name (why_not's answer, without building the reason)."""
    return (
        isinstance(name, str)
        and len(name) <= MAX_NAME_CHARS
        and NAME.fullmatch(name) is not None
        and name.lower() not in _NOT_NAMES
    )


def _shown(value: object) -> str:
    text = repr(value)
    return one_line(text if len(text) <= 60 else text[:59] + "…")


def expand(hostlist: str, limit: int = MAX_NODES) -> list[str]:
    """The names of a Slurm host list, as `scontrol show hostnames` gives them; [] for Slurm's
    "no node" words; BadNodes (one line) for anything else outside the grammar or above limit."""
    if not isinstance(hostlist, str):
        raise BadNodes(f"a host list is a string, not {type(hostlist).__name__}")
    text = hostlist.strip()
    if text.lower() in NO_NODE:
        return []
    if len(text) > MAX_LIST_CHARS:
        raise BadNodes(f"a host list of {len(text):,} characters (at most {MAX_LIST_CHARS:,})")
    out: list[str] = []
    for part in _split_top_level(text):
        if part.lower() in NO_NODE:
            continue
        groups = _GROUP.findall(part)
        if part.count("[") != len(groups) or part.count("]") != len(groups):
            raise BadNodes(f"{_shown(part)}: unbalanced '[' ']' in a host list")
        ranges = [_numbers(g, part) for g in groups]
        count = 1
        for r in ranges:
            count *= sum(len(x) for x in r)
        if len(out) + count > limit:
            raise BadNodes(
                f"{_shown(part)}: more than {limit:,} nodes in one host list ({limits.NODES.why})"
            )
        pieces = _GROUP.split(part)  # prefix, group, text, group, ..., suffix
        names = [pieces[0]]
        for i, r in enumerate(ranges):
            tail = pieces[2 * i + 2]
            names = [n + num + tail for n in names for rng in r for num in rng]
        for name in names:
            why = why_not(name)
            if why is not None:
                raise BadNodes(f"{_shown(name)}: {why}")
        out.extend(names)
    return out


def _numbers(group: str, part: str) -> list[range | list[str]]:
    """The numbers of one bracket group, as lists of zero-padded strings (built lazily)."""
    out: list = []
    for item in group.split(","):
        m = _RANGE.fullmatch(item.strip())
        if not m:
            raise BadNodes(f"{_shown(part)}: {_shown(item)} is not a number or a range n-m")
        lo, hi = m.group(1), m.group(2)
        if hi is None:
            out.append([lo])
            continue
        if len(lo) > 9 or len(hi) > 9 or int(hi) < int(lo):
            raise BadNodes(f"{_shown(part)}: range {lo}-{hi} is not low-high")
        out.append(_Padded(int(lo), int(hi), len(lo)))
    return out


@dataclass(frozen=True)
class _Padded:
    """lo..hi, each padded to width (a range's numbers are as wide as its lower bound)."""

    lo: int
    hi: int
    width: int

    def __len__(self) -> int:
        return self.hi - self.lo + 1

    def __iter__(self):  # type: ignore[no-untyped-def]
        return (f"{i:0{self.width}d}" for i in range(self.lo, self.hi + 1))


def _split_top_level(text: str) -> Iterable[str]:
    """The items of a host list: split at ',' and whitespace outside brackets."""
    depth, start = 0, 0
    for i, ch in enumerate(text):
        depth += ch == "["
        depth -= ch == "]"
        if (ch == "," or ch.isspace()) and depth == 0:
            if text[start:i]:
                yield text[start:i]
            start = i + 1
    if text[start:]:
        yield text[start:]


Warn = Callable[[str], None]


def names(values: object, source: str, warn: Warn) -> tuple[str, ...]:
    """The node names of a list read from outside (a history's, steps.json's, a record's),
    duplicates dropped, in order; each value that is not one host name is left out, with one
    warning naming source and how many were left out. A value that is not a list: () and a
    warning."""
    if values is None:
        return ()
    if not isinstance(values, (list, tuple)):
        warn(f"{source}: node names are a list, not {type(values).__name__}: {_shown(values)}")
        return ()
    good: dict[str, None] = {}
    bad: list[tuple[object, str]] = []
    for v in values:
        why = why_not(v)
        if why is None:
            good[v] = None  # type: ignore[index]
        else:
            bad.append((v, why))
    if bad:
        v, why = bad[0]
        more = f" (and {len(bad) - 1} more)" if len(bad) > 1 else ""
        warn(f"{source}: node name {_shown(v)} left out: {why}{more}")
    return tuple(good)


def host_list(text: object, source: str, warn: Warn) -> tuple[str, ...]:
    """A host list read from Slurm or the environment, expanded (expand); a list outside the
    grammar is () with one warning naming source."""
    if text is None:
        return ()
    try:
        return tuple(dict.fromkeys(expand(text)))  # type: ignore[arg-type]
    except BadNodes as e:
        warn(f"{source}: host list left out: {e}")
        return ()


def exclude_value(nodes: Iterable[str]) -> str:
    """The value of sbatch's --exclude for these names (sorted, each checked: a name outside
    the grammar here is a bug, never sent)."""
    listed = sorted(set(nodes))
    for n in listed:
        why = why_not(n)
        if why is not None:
            raise BadNodes(f"{_shown(n)}: {why}")
    return ",".join(listed)
