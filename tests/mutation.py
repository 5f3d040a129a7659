"""Single-field mutations of a JSON document, for the readers' fuzz tests and scripts.

paths() lists every field path of a document (every key of every object; of a list, its
first two items and its last: the rest repeat them); mutated() gives the document with one
path's value replaced; HOSTILE is what replaces it: the 13 values a reader meets in
hand-edited, truncated or hostile files.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

Path = tuple[Any, ...]
ESCAPES = "\x1b]0;pwned\x07\x1b[2J\r\n#SBATCH --exclude=../../etc/passwd"
HOSTILE: tuple[Any, ...] = (
    None,
    True,
    0,
    -1,
    1e308,
    2**70,
    "",
    "x",
    ESCAPES,
    "A" * 100_000,
    [],
    {},
    {"a": [None, {"b": "\x1b[2J"}]},
)


def paths(doc: Any, prefix: Path = ()) -> Iterator[Path]:
    """Every field path of doc, outermost first (lists: items 0, 1 and the last)."""
    if isinstance(doc, dict):
        for k, v in doc.items():
            yield (*prefix, k)
            yield from paths(v, (*prefix, k))
    elif isinstance(doc, list):
        for i in sorted({0, 1, len(doc) - 1} & set(range(len(doc)))):
            yield (*prefix, i)
            yield from paths(doc[i], (*prefix, i))


def mutated(doc: Any, path: Path, value: Any) -> Any:
    """A deep copy of doc with the value at path replaced by value."""
    out = copy.deepcopy(doc)
    target = out
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = copy.deepcopy(value)
    return out


def shown(path: Path) -> str:
    """A path as a reader names a field: rows.x.runs[0].steps."""
    out = ""
    for key in path:
        out += f"[{key}]" if isinstance(key, int) else (f".{key}" if out else str(key))
    return out
