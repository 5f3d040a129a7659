#!/usr/bin/env python3
"""Benchmark `pytest --dry-run --all-rows` on the real catalog and on synthetic ones.

The synthetic catalogs repeat the rows of baselines/*.json with a variant suffix
(`-s1`, `-s2`, ...) until they hold N rows, so each row plans exactly as a real one does
(sbatch script, srun line, workload spec, recipe description, results record). Each
catalog is dry-run in a fresh pytest process from the repository root (the suite's own
conftest and benchmarks/) with a fresh --results-dir, `--repeat` times; the best wall time
and pytest's own "in X s" are printed with the time per row, so a cost growing faster than
the rows shows as a growing per-row figure. Python's bytecode cache is left on (a user's
second run), which the first, warming run fills.

    python scripts/bench_dry_run.py [--rows 145,500,1000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def synthetic_catalog(folder: Path, n: int) -> int:
    """baselines/<gpu>.json files of n rows made from the real ones; returns n."""
    real: dict[str, list[dict]] = {
        p.stem: json.loads(p.read_text())
        for p in sorted((REPO / "baselines").glob("*.json"))
        if p.stem != "noise-prior"  # the site's noise prior, not rows
    }
    rows = [(gpu, r) for gpu, rs in real.items() for r in rs]
    out: dict[str, list[dict]] = {gpu: [] for gpu in real}
    for i in range(n):
        gpu, row = rows[i % len(rows)]
        copy = dict(row)
        k = i // len(rows)
        if k:
            copy["variant"] = "-".join(x for x in (row.get("variant"), f"s{k}") if x)
            copy["id"] = f"{row['id']}-s{k}"
        out[gpu].append(copy)
    folder.mkdir(parents=True, exist_ok=True)
    for gpu, rs in out.items():
        if rs:
            (folder / f"{gpu}.json").write_text(json.dumps(rs, indent=1))
    return n


def dry_run(baselines: Path, results: Path) -> tuple[float, float, int]:
    """(wall seconds, pytest's own seconds, rows passed) of one dry run of the catalog."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO / "src"), env.get("PYTHONPATH", "")])
    cmd = [sys.executable, "-m", "pytest", "--dry-run", "--all-rows", "-q"]
    cmd += ["-p", "no:cacheprovider"]
    cmd += [f"--baselines-dir={baselines}", f"--results-dir={results}", "--history=off"]
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - start
    m = re.search(r"(\d+) passed in ([0-9.]+)s", proc.stdout)
    if proc.returncode != 0 or m is None:
        sys.exit(f"dry run failed (exit {proc.returncode}):\n{proc.stdout[-3000:]}{proc.stderr}")
    return wall, float(m.group(2)), int(m.group(1))


def main(argv: list[str] | None = None) -> int:
    """Print one line per catalog size: rows, best wall and pytest time, ms per row."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", default="real,500,1000", help="catalog sizes; real: baselines/")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="perfgate-bench-") as tmp:
        base = Path(tmp)
        dry_run(REPO / "baselines", base / "warm")  # fills the bytecode cache
        print(f"{'rows':>6} {'wall s':>8} {'pytest s':>9} {'ms/row':>7}   (best of {args.repeat})")
        for size in args.rows.split(","):
            folder = REPO / "baselines" if size == "real" else base / f"cat{size}"
            if size != "real":
                synthetic_catalog(folder, int(size))
            runs = [dry_run(folder, base / f"r{size}-{i}") for i in range(args.repeat)]
            wall, inner, n = min(runs)
            if size != "real" and n != int(size):
                sys.exit(f"{n} rows ran, expected {size}")
            print(f"{n:>6} {wall:>8.2f} {inner:>9.2f} {1000 * inner / n:>7.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
