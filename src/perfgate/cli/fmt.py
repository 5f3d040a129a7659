"""`perfgate fmt`: rewrite baselines files in the canonical form --update-baselines writes, so
a hand edit or a plain JSON dump leaves no noise in the next diff."""

from __future__ import annotations

import argparse
from pathlib import Path

from perfgate.catalog import load_catalog
from perfgate.catalog.store import format_file


def add(sub: argparse._SubParsersAction) -> None:
    """Register `perfgate fmt`."""
    p = sub.add_parser(
        "fmt",
        help="rewrite baselines files in their canonical form (what --update-baselines writes)",
        description="Load, validate and rewrite baselines files in the one canonical form: "
        "a JSON list, 2-space indent, keys in the schema's order with defaults left out, "
        "non-ASCII kept, one final newline. Atomic and locked like --update-baselines.",
    )
    p.add_argument(
        "paths", nargs="*", default=["baselines"], metavar="PATH",
        help="folder of <gpu>.json files, or one such file (default: baselines)",
    )  # fmt: skip
    p.add_argument(
        "--check",
        action="store_true",
        help="write nothing; list the files not in canonical form and exit 1 if any",
    )
    p.set_defaults(func=run)


def _files(path: str) -> list[Path]:
    if path.endswith(".json"):
        return [Path(path)]
    cat = load_catalog(path)  # validates the folder: names, ids unique across files
    return sorted(set(cat.files.values()))


def run(args: argparse.Namespace) -> int:
    """Rewrite (or, with --check, list) the files that are not in canonical form."""
    changed = [
        f for path in args.paths for f in _files(path) if format_file(f, write=not args.check)
    ]
    verb = "not canonical" if args.check else "rewritten"
    for f in changed:
        print(f"{f}: {verb}")
    if not changed:
        print("every file is in canonical form")
    return 1 if args.check and changed else 0
