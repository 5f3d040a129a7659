#!/usr/bin/env python3
"""Benchmark the history at scale, on either store (issue #32's figures).

Two synthetic histories per store, written through the store's own import path (one
transaction per session), each at 1x and 10x:

    matrix   ROWS rows x NIGHTS nights, one run a row a night (1x: 1,000 x 365 = 365k runs;
             10x: 1,000 x 3,650), runs on 1-8 of 1,024 nodes (4 of them 3% slow), a new
             container every 60 nights with its versions, 1 row in 20 stepping +-3-4% at
             two nights
    long     10 rows x LONG nights (1x: 1,095; 10x: 10,950), 6 steps of 3-4% each

Figures (each measured in a process of its own: wall, its CPU, its peak resident memory):
    verdict   one stepped row of `long`: its points read, tonight's run judged with them
              (change-point search included), as the suite does
    night     every row of `matrix` judged once, as a session's controller does: slow nodes
              read once, then per row its points, its verdict, its runs for results.json
              (the report's own trend plot is left out: issue #34 reuses the verdict's)
    nodes     the slow-node list of `matrix` (aggregated by the store)
    history   `perfgate history ROW` on the stepped row of `long` (a CLI process)
    dashboard `perfgate dashboard` on `matrix` (every row's page)

    python scripts/bench_history.py --store sqlite|postgresql://user@host/db [--scale 1|10]
        [--dir DIR] [--reuse] [--only verdict,night,...] [--json]

With a PostgreSQL URL each history gets a database of its own (created and dropped; the
URL names the database to connect to for that). The figures are in docs/history.md.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
ROWS, NIGHTS, LONG = 1000, 365, 1095
SLOW = {"gpu0007", "gpu0123", "gpu0456", "gpu0789"}


FIRST = datetime(2023, 1, 1, 1, 0, tzinfo=timezone.utc)


def row_id(r: int) -> str:
    """The r-th synthetic row's id (canonical shape: task-model-gpu-precision-Ngpu-layout)."""
    return f"pretrain-model{r % 40}_{r}-{('h100', 'b200', 'gb200')[r % 3]}-bf16-64gpu-tp1"


def _open(where: str):
    from perfgate.history.stores import open_store

    return open_store(where)


def fill(where: str, rows: int, nights: int, stepped_every: int, steps: int, seed: int) -> int:
    """Write a synthetic history into the store at `where`; the runs written."""
    from perfgate.history.store import Dump, new_uid

    rng = random.Random(seed)
    store = _open(where)
    base = [1.0 + 9.0 * rng.random() for _ in range(rows)]
    level = [0.0] * rows
    cuts = {nights * (k + 1) // (steps + 1) for k in range(steps)}
    ids = [row_id(r) for r in range(rows)]
    written = 0
    for night in range(nights):
        container = f"nvcr.io/nvidia/nemo:{24 + night // 60 // 12}.{1 + night // 60 % 12:02d}"
        versions = {"nemo": f"2.{night // 60}.0", "te": f"2.{night // 120}", "nccl": "2.21.5"}
        stamp = (FIRST + timedelta(days=night)).isoformat()
        uid = new_uid()
        session = {
            "uid": uid,
            "started_at": stamp,
            "host": "login1",
            "cluster": "eos",
            "mode": "live",
            "images": [container],
            "perfgate_version": "0.1.0",
            "git_describe": "v0.1-12-gabc",
            "command": "pytest -m nightly",
        }
        runs = []
        for r in range(rows):
            stepped = stepped_every and r % stepped_every == 0
            if stepped and night in cuts:
                level[r] += rng.choice((0.03, -0.03, 0.04))
            nodes = sorted(
                {f"gpu{rng.randrange(1024):04d}" for _ in range(rng.choice((1, 2, 4, 8)))}
            )
            t = base[r] * math.exp(level[r] + rng.gauss(0, 0.005))
            t *= 1.03 if SLOW.intersection(nodes) else 1.0
            runs.append(
                {
                    "session_uid": uid,
                    "row_id": ids[r],
                    "mode": "stored",
                    "label": "baseline",
                    "launch": 1,
                    "job_id": f"{night}{r:05d}",
                    "attempt": 1,
                    "recorded_at": stamp,
                    "step_time_s": t,
                    "rel_se": 0.002,
                    "steady": True,
                    "n_steady": 40,
                    "tokens_per_s_per_gpu": 1e6 / t,
                    "mfu": 0.4 / t * base[r],
                    "nodes": nodes,
                    "image": container,
                    "image_digest": None,
                    "versions": versions,
                    "verdict": "PASS",
                    "cause": None,
                    "delta": t / base[r] - 1,
                    "baseline_s": base[r],
                    "tolerance": 0.05,
                }
            )
        store.load(Dump([session], [{"session_uid": uid, "finished_at": stamp}], runs, []))
        written += len(runs)
    store.close()
    return written


def _usage() -> dict[str, float]:
    me = resource.getrusage(resource.RUSAGE_SELF)
    return {"cpu_s": me.ru_utime + me.ru_stime, "peak_mb": me.ru_maxrss / 1024}


def measure(figure: str, where: str, row: str, out: str) -> dict[str, float]:
    """One figure, in this process (run by `main` in a process of its own)."""
    from perfgate.catalog.rows import Baseline, Provenance, Row
    from perfgate.history import nodes as hnodes
    from perfgate.history.trend import off_slow_nodes
    from perfgate.report.trend import trend_record
    from perfgate.stats import Noise, summarize_run
    from perfgate.verdicts import nightly

    store = _open(where)
    start = time.perf_counter()
    tonight = [summarize_run([2.0 * (1 + 0.001 * (i % 7)) for i in range(60)])]
    base = Baseline(2.0, Provenance("perfgate run", date="2023-01-01"), n_runs=3, tolerance=0.05)
    rowobj = Row(row, "pretrain", "model", "h100", "bf16", 64, 8, 128, 1, 4096)

    def judge(row_id: str, slow: frozenset[str]) -> str:
        points = off_slow_nodes(store.points(row_id, "eos"), slow)
        return nightly.judge(rowobj, base, tonight, 0.05, "auto", Noise(), points).verdict

    if figure == "verdict":
        judge(row, frozenset())
    elif figure == "night":
        slow = frozenset(f.node for f in hnodes.findings(store.node_totals("eos")) if f.flagged)
        for rid in store.row_ids():
            judge(rid, slow)
            trend_record(store.runs(rid))  # the row's results.json trend (suite.state)
    elif figure == "nodes":
        found = hnodes.findings(store.node_totals("eos"))
        assert {f.node for f in found if f.flagged} >= SLOW, found[:6]
    elif figure == "history":
        subprocess.run(
            [sys.executable, "-m", "perfgate", "history", row, "--history", where],
            check=True,
            stdout=subprocess.DEVNULL,
        )
    elif figure == "dashboard":
        from perfgate.report import dashboard

        dashboard.build(store, Path(out))
    wall = time.perf_counter() - start
    use = _usage()
    if figure == "history":  # the CLI's own process
        child = resource.getrusage(resource.RUSAGE_CHILDREN)
        use = {"cpu_s": child.ru_utime + child.ru_stime, "peak_mb": child.ru_maxrss / 1024}
    store.close()
    return {"wall_s": round(wall, 3), **{k: round(v, 2) for k, v in use.items()}}


def _place(store: str, folder: Path, name: str) -> str:
    """Where one synthetic history goes: a file in folder, or a fresh PostgreSQL database."""
    if not store.startswith("postgres"):
        return str(folder / f"{name}.sqlite")
    import psycopg

    db = f"bench_{name}"
    with psycopg.connect(store, autocommit=True) as con:
        con.execute(f'DROP DATABASE IF EXISTS "{db}"')
        con.execute(f'CREATE DATABASE "{db}"')
    return store.rsplit("/", 1)[0] + f"/{db}"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--store", required=True, help="sqlite, or a postgresql:// URL")
    p.add_argument("--scale", type=int, default=1, choices=(1, 10))
    p.add_argument("--dir", help="where sqlite files and the dashboard go (default: a temp dir)")
    p.add_argument("--only", default="verdict,night,nodes,history,dashboard")
    p.add_argument("--reuse", action="store_true", help="sqlite: keep histories already in --dir")
    p.add_argument("--json", action="store_true")
    p.add_argument("--measure", nargs=4, help=argparse.SUPPRESS)  # FIGURE WHERE ROW OUT
    args = p.parse_args(argv)
    if args.measure:
        print(json.dumps(measure(*args.measure)))
        return 0
    folder = Path(args.dir or tempfile.mkdtemp(prefix="perfgate-bench-"))
    folder.mkdir(parents=True, exist_ok=True)
    kind = "sqlite" if not args.store.startswith("postgres") else "postgresql"
    wanted = args.only.split(",")
    results: dict[str, dict] = {"store": {"kind": kind}, "scale": {"x": args.scale}}
    where: dict[str, str] = {}
    for name, rows, nights, every, steps in (
        ("long", 10, LONG * args.scale, 1, 6),
        ("matrix", ROWS, NIGHTS * args.scale, 20, 2),
    ):
        if name == "long" and not {"verdict", "history"} & set(wanted):
            continue
        if name == "matrix" and not {"night", "nodes", "dashboard"} & set(wanted):
            continue
        where[name] = _place(args.store, folder, f"{name}{args.scale}")
        if args.reuse and Path(where[name]).exists():
            continue
        t0 = time.perf_counter()
        n = fill(where[name], rows, nights, every, steps, seed=32)
        size = Path(where[name]).stat().st_size / 2**20 if kind == "sqlite" else None
        results[f"fill {name}"] = {
            "runs": n,
            "wall_s": round(time.perf_counter() - t0, 1),
            **({"file_mb": round(size, 1)} if size else {}),
        }
        print(f"{name}: {n} runs written", file=sys.stderr)
    stepped = row_id(0)
    for figure in wanted:
        history = where["long" if figure in ("verdict", "history") else "matrix"]
        out = str(folder / "site")
        env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
        proc = subprocess.run(
            [
                sys.executable,
                __file__,
                "--store",
                args.store,
                "--measure",
                figure,
                history,
                stepped,
                out,
            ],
            check=True,
            capture_output=True,
            text=True,
            env=env,
        )
        results[figure] = json.loads(proc.stdout.strip().splitlines()[-1])
        print(f"{figure}: {results[figure]}", file=sys.stderr)
    if args.json:
        print(json.dumps(results, indent=1))
    else:
        for k, v in results.items():
            print(f"{k}: {v}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
