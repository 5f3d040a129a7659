"""`perfgate list`: the rows a selection picks, with their baseline and their last result.

The selection is the suite's (perfgate.suite.listing.select); the last result is the row's
record in a results.json.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from perfgate import catalog
from perfgate.catalog import Row
from perfgate.errors import ConfigError
from perfgate.report import sessionfiles
from perfgate.rowrecord import RowRecord
from perfgate.suite.listing import select


def add(sub: argparse._SubParsersAction) -> None:
    """Register `perfgate list`."""
    p = sub.add_parser(
        "list",
        help="rows with their baseline, provenance and last result",
        description="One line per row of baselines/*.json that the selection keeps: id, GPUs "
        "and nodes, backend, baseline (step time, tokens/s/GPU, provenance) or NO_BASELINE, "
        "and the row's last result in results.json.",
    )
    p.add_argument("-m", dest="markexpr", default="", help="marker expression, as pytest -m")
    p.add_argument("-k", dest="keyword", default="", help="row id expression, as pytest -k")
    p.add_argument("--gpus", metavar="SPEC", help="GPU counts: 64, 8,16 or 8-64")
    p.add_argument(
        "--baselines-dir", metavar="DIR", default="baselines", help="default: ./baselines"
    )
    p.add_argument(
        "--results",
        metavar="JSON",
        default="perfgate-results/results.json",
        help="last results (default perfgate-results/results.json; absent: none shown)",
    )
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=run)


def entry(row: Row, record: RowRecord | None) -> dict[str, Any]:
    """What `perfgate list` says about one row (its --json form)."""
    b = row.baseline
    base = None
    if b is not None:
        p = b.provenance
        base = {
            "step_time_s": b.step_time_s,
            "tokens_per_s_per_gpu": b.tokens_per_s_per_gpu,
            "source": p.source,
            "container": p.container,
            "date": p.date,
        }
    last = None
    if record is not None:
        measured = record.get("measured") or {}
        last = {
            "verdict": record.get("verdict"),
            "step_time_s": measured.get("step_time_s"),
            "finished": record.get("finished"),
        }
    return {
        "id": row.id,
        "num_gpus": row.num_gpus,
        "nodes": row.nodes,
        "backend": row.backend,
        "baseline": base,
        "last": last,
    }


def line(e: dict[str, Any]) -> str:
    """One row for people."""
    text = f"{e['id']}  {e['num_gpus']} GPUs/{e['nodes']} node(s)  {e['backend']}  "
    b = e["baseline"]
    if b is None:
        text += "NO_BASELINE"
    else:
        tok = b["tokens_per_s_per_gpu"]
        tok_text = f", {tok:,.0f} tok/s/GPU" if tok else ""
        where = ", ".join(str(x) for x in (b["source"], b["container"], b["date"]) if x)
        text += f"baseline {b['step_time_s']:.3f} s{tok_text} ({where})"
    last = e["last"]
    if last is not None:
        step = last["step_time_s"]
        text += f"  last: {last['verdict']}" + (f" {step:.3f} s" if step else "")
    return text


def _records(path: Path) -> tuple[dict[str, Any], str | None]:
    """Row records of a results.json and when its session finished ({} when absent)."""
    if not path.exists():
        return {}, None
    data = sessionfiles.read(str(path))
    session = data.get("session") or {}
    return data.get("rows") or {}, session.get("finished") or session.get("started")


def run(args: argparse.Namespace) -> int:
    """`perfgate list`: print the selected rows; exit 0 (also when none match)."""
    folder = Path(args.baselines_dir)
    if not folder.is_dir():
        raise ConfigError(f"--baselines-dir {folder}: no such folder (run from the repository)")
    cat = catalog.load_catalog(folder)
    rows = select(list(cat.rows), args.markexpr, args.keyword, args.gpus)
    records, when = _records(Path(args.results))
    entries = []
    for row in rows:
        rec = records.get(row.id)
        if rec is not None:
            rec = {**rec, "finished": when}
        entries.append(entry(row, rec))
    if args.json:
        print(json.dumps({"results": args.results if records else None, "rows": entries}, indent=2))
        return 0
    for e in entries:
        print(line(e))
    print(f"{len(entries)} of {len(cat.rows)} rows", end="")
    print(f"; last results: {args.results} ({when})" if records else "")
    return 0
