"""The edits a site makes to its clone, each as docs/extending.md says, on a copy of the tree.

A site adds rows, GPUs, log formats, backends and executors, drops rows, re-measures baselines
and re-saves its files with its own tools; the suite's own tests must stay green through all of
it (#28). tests/test_extending.py applies these to a copy and runs the recipes' products and
the registry tests there; `.ci/run` applies them all to the copy it tests with nothing beside it:

    python tests/siteedits.py DEST [--position first|last]

DEST is a copy of the repository (src/, tests/, baselines/, ...). `position` is where each
registration goes in its table: a recipe must hold wherever the new entry is placed.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

TOY_FORMAT = '''"""A toy log format: `toy step N took X s`."""

import re

from perfgate.logs.formats.base import Family, LogFormat, Record, Shape, Span, count_of, records_of
from perfgate.logs.formats.fields import put

TOY = "toy"
_ANCHOR = re.compile(r"toy step (\\d+) took ")


def _step(span: Span) -> Record | None:
    v: dict[str, float] = {}
    put(v, "step_time_s", span.line[span.end : span.stop].split()[0])
    return Record(TOY, int(span.match.group(1)), v) if v else None


FAMILY = Family(
    markers=(b"toy step",),
    shapes=(Shape("toy step", TOY, _ANCHOR, _step),),
    formats=(LogFormat("toy", score=count_of(TOY), records=records_of(TOY)),),
)
'''

TOY_FACE = '''"""The toy backend on a login node."""

from perfgate.workload.backend import Backend
from perfgate.workload.overrides import merged_overrides


def _path(path: str) -> str:
    return path


def check_overrides(row, overrides, mock_data=False, use_framework=None):
    merged_overrides(row.overrides, overrides, _path)
    return "toy overrides: any path"


def describe(row, steps, overrides, use_framework=None):
    return f"toy trainer: {steps} steps of {row.seq_len} tokens\\n"


BACKEND = Backend(
    name="toy",
    job="perfgate.workload.toy.job",
    check_overrides=check_overrides,
    describe=describe,
)
'''

TOY_JOB = '''"""The toy backend in the job: rank 0 records the row's steps, 1 s each."""

from perfgate.logs import Step


def run(spec, rank, recorder):
    for i in range(spec.steps):
        if recorder is not None:
            recorder.add_step(Step(step=i, step_time_s=1.0))
'''

# A GPU with the H100's peaks under another name (an H800-like part), 8 to a node.
TOY_GPU = "h800"
TOY_GPU_SPEC = (
    f'    "{TOY_GPU}": GpuSpec("{TOY_GPU}", {{"bf16": 989.0, "fp8": 1979.0}}, 8, 80.0, False),\n'
)
TOY_ROW_ID = "pretrain-llama3_8b-h100-bf16-1gpu-tp1-toy"
# The row of docs/extending.md's row recipe: a shipped 8-GPU row at 16 GPUs.
SCALED_FROM = "pretrain-llama3_8b-h200-bf16-8gpu-tp1cp2"
DROPPED = "pretrain-nemotron4_15b-h100-fp8ds-2048gpu-tp2"
REMEASURED = "pretrain-nemotron4_15b-h100-bf16-64gpu-tp2"


def register(path: Path, table: str, line: str, position: str) -> None:
    """Put one entry into the literal `table` of a module, first or last, as a site would."""
    text = path.read_text()
    for opener in (f"{table}: ", f"{table} = "):
        start = text.find(opener)
        if start >= 0:
            break
    else:
        raise AssertionError(f"{path}: table {table} is gone: update docs/extending.md")
    open_at = min(i for i in (text.find("(\n", start), text.find("{\n", start)) if i >= 0)
    if position == "first":
        at = open_at + 2
    else:
        close = {"(": "\n)", "{": "\n}"}[text[open_at]]
        at = text.index(close, open_at) + 1
    path.write_text(text[:at] + line + text[at:])


def add_log_format(root: Path, position: str) -> None:
    """docs/extending.md, "A log format": one new file, then FAMILIES and FORMATS."""
    formats = root / "src" / "perfgate" / "logs" / "formats"
    (formats / "toy.py").write_text(TOY_FORMAT)
    init = formats / "__init__.py"
    text = init.read_text()
    anchor = "from perfgate.logs.formats.base import ("
    init.write_text(text.replace(anchor, "from perfgate.logs.formats import toy\n" + anchor, 1))
    register(init, "FAMILIES", "    toy.FAMILY,\n", position)
    register(init, "FORMATS", '    "toy",\n', position)


def add_backend(root: Path, position: str) -> None:
    """docs/extending.md, "A workload backend": a package with face.py and job.py."""
    src = root / "src" / "perfgate"
    pkg = src / "workload" / "toy"
    pkg.mkdir()
    (pkg / "__init__.py").write_text('"""The toy backend."""\n')
    (pkg / "face.py").write_text(TOY_FACE)
    (pkg / "job.py").write_text(TOY_JOB)
    face = '    "toy": "perfgate.workload.toy.face",\n'
    register(src / "workload" / "backends.py", "FACES", face, position)
    traits = '    "toy": BackendTraits(),\n'
    register(src / "catalog" / "rows.py", "BACKEND_TRAITS", traits, position)


def add_executor(root: Path, position: str) -> None:
    """docs/extending.md, "An executor": both halves, registered under one name."""
    src = root / "src" / "perfgate" / "launch"
    ex = (src / "executors" / "local.py").read_text()
    (src / "executors" / "toybox.py").write_text(ex.replace('name = "local"', 'name = "toybox"'))
    (src / "allocation" / "toybox.py").write_text((src / "allocation" / "local.py").read_text())
    register(src / "executors" / "__init__.py", "REGISTRY",
             '    "toybox": __import__("perfgate.launch.executors.toybox", fromlist=["x"])'
             ".LocalExecutor,\n", position)  # fmt: skip
    register(src / "allocation" / "__init__.py", "ALLOCATIONS",
             '    "toybox": __import__("perfgate.launch.allocation.toybox", fromlist=["x"])'
             ".LocalAllocation,\n", position)  # fmt: skip


def add_gpu(root: Path, position: str) -> None:
    """docs/extending.md, "A GPU": a GpuSpec in hardware.GPUS, then its baselines file."""
    register(root / "src" / "perfgate" / "hardware.py", "GPUS", TOY_GPU_SPEC, position)


def _rows(path: Path) -> list[dict]:
    return json.loads(path.read_text()) if path.exists() else []


def add_rows(root: Path) -> None:
    """docs/extending.md, "A row": a shipped row at twice the GPUs, a row on the new GPU and
    the toy backend's row, each an object in baselines/<gpu>.json."""
    base = root / "baselines"
    h200 = _rows(base / "h200.json")
    eight = next(r for r in h200 if r["id"] == SCALED_FROM)
    h200.append({**eight, "num_gpus": 16, "id": SCALED_FROM.replace("8gpu", "16gpu")})
    (base / "h200.json").write_text(json.dumps(h200, indent=2))
    new = {**eight, "gpu": TOY_GPU, "id": SCALED_FROM.replace("h200", TOY_GPU)}
    (base / f"{TOY_GPU}.json").write_text(json.dumps([new], indent=2))
    toy = {
        "id": TOY_ROW_ID, "task": "pretrain", "model": "llama3_8b", "gpu": "h100",
        "precision": "bf16", "num_gpus": 1, "gbs": 8, "mbs": 1, "seq_len": 1024,
        "backend": "toy", "steps": 30,
    }  # fmt: skip
    (base / "h100.json").write_text(json.dumps([*_rows(base / "h100.json"), toy], indent=2))


def drop_row(root: Path) -> None:
    """A site that never runs 2,048 GPUs drops the row."""
    path = root / "baselines" / "h100.json"
    path.write_text(json.dumps([r for r in _rows(path) if r["id"] != DROPPED], indent=2))


_REMEASURE = """
import sys
from perfgate import catalog
from perfgate.catalog import Baseline, BaselineRun, Provenance
runs = tuple(BaselineRun(step_time_s=t, rel_se=0.002) for t in (2.71, 2.69, 2.70))
b = Baseline(step_time_s=2.7, step_time_spread_s=0.01, n_runs=3, runs=runs,
             provenance=Provenance(source="perfgate run", container="nemo.sqsh"))
print(catalog.update_baselines(sys.argv[1], {sys.argv[2]: b}))
"""


def remeasure(root: Path) -> None:
    """A stored baseline replaced as `--update-baselines --repeat 3` does (the copy's code)."""
    env = {**os.environ, "PYTHONPATH": str(root / "src")}
    cmd = [sys.executable, "-c", _REMEASURE, str(root / "baselines"), REMEASURED]
    subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL)


def resave_plain(root: Path) -> None:
    """Every baselines file re-saved by a site's own script: json.dump, its defaults."""
    for path in (root / "baselines").glob("*.json"):
        data = json.loads(path.read_text())
        with path.open("w") as f:
            json.dump(data, f, indent=2)


def apply_all(root: Path, position: str = "last") -> None:
    """Every edit, in the order a site might make them."""
    add_log_format(root, position)
    add_backend(root, position)
    add_executor(root, position)
    add_gpu(root, position)
    add_rows(root)
    drop_row(root)
    remeasure(root)
    resave_plain(root)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dest", type=Path, help="a copy of the repository to edit")
    parser.add_argument("--position", choices=("first", "last"), default="last")
    args = parser.parse_args()
    apply_all(args.dest, args.position)
    print(f"siteedits: {args.dest}: every recipe of docs/extending.md applied ({args.position})")


if __name__ == "__main__":
    main()
