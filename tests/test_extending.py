"""docs/extending.md is true: its recipes, followed on a copy of the source tree, add a log
format, a workload backend and an executor that `perfgate parse`, `pytest --dry-run` and a
real local run go through, with nothing else changed."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from testutil import REPO

DOC = REPO / "docs" / "extending.md"

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


def _edit(path: Path, old: str, new: str) -> None:
    """One registration line, as the recipe says, at an anchor that must exist."""
    text = path.read_text()
    assert old in text, f"{path}: the recipe's anchor {old!r} is gone: update docs/extending.md"
    path.write_text(text.replace(old, new, 1))


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of src/ with the three recipes of docs/extending.md followed."""
    doc = DOC.read_text()
    root = tmp_path_factory.mktemp("extended")
    src = root / "src" / "perfgate"
    shutil.copytree(REPO / "src" / "perfgate", src, ignore=shutil.ignore_patterns("__pycache__"))
    # A log format: one new file, then FAMILIES and FORMATS in formats/__init__.py.
    assert "src/perfgate/logs/formats/<family>.py" in doc
    (src / "logs" / "formats" / "toy.py").write_text(TOY_FORMAT)
    init = src / "logs" / "formats" / "__init__.py"
    anchor = "from perfgate.logs.formats.automodel import AUTOMODEL\n"
    _edit(init, anchor, "from perfgate.logs.formats import toy\n" + anchor)
    _edit(init, "    torchtitan.FAMILY,\n)", "    torchtitan.FAMILY,\n    toy.FAMILY,\n)")
    _edit(init, '    "torchtitan",\n)', '    "torchtitan",\n    "toy",\n)')
    # A backend: a package with face.py and job.py, then FACES and BACKEND_TRAITS.
    assert "`FACES`" in doc and "`BACKEND_TRAITS`" in doc
    pkg = src / "workload" / "toy"
    pkg.mkdir()
    (pkg / "__init__.py").write_text('"""The toy backend."""\n')
    (pkg / "face.py").write_text(TOY_FACE)
    (pkg / "job.py").write_text(TOY_JOB)
    _edit(
        src / "workload" / "backends.py",
        '    "command": "perfgate.workload.command.face",\n',
        '    "command": "perfgate.workload.command.face",\n'
        '    "toy": "perfgate.workload.toy.face",\n',
    )
    _edit(
        src / "catalog" / "rows.py",
        '    "command": BackendTraits(),\n',
        '    "command": BackendTraits(),\n    "toy": BackendTraits(),\n',
    )
    # An executor: a copy of the local one under a new name, both halves registered.
    assert "`REGISTRY`" in doc and "`ALLOCATIONS`" in doc
    ex = (src / "launch" / "executors" / "local.py").read_text()
    (src / "launch" / "executors" / "toybox.py").write_text(
        ex.replace('name = "local"', 'name = "toybox"')
    )
    al = (src / "launch" / "allocation" / "local.py").read_text()
    (src / "launch" / "allocation" / "toybox.py").write_text(al)
    _edit(
        src / "launch" / "executors" / "__init__.py",
        '    "local": LocalExecutor,\n',
        '    "local": LocalExecutor,\n    "toybox": __import__('
        '"perfgate.launch.executors.toybox", fromlist=["x"]).LocalExecutor,\n',
    )
    _edit(
        src / "launch" / "allocation" / "__init__.py",
        '    "local": LocalAllocation,\n',
        '    "local": LocalAllocation,\n    "toybox": __import__('
        '"perfgate.launch.allocation.toybox", fromlist=["x"]).LocalAllocation,\n',
    )
    return root


def _env(tree: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(tree / "src"), "PYTHONDONTWRITEBYTECODE": "1"}


def _project(tree: Path, tmp_path: Path) -> Path:
    """The suite (conftest, pytest.ini, benchmarks/) with one toy-backend row."""
    proj = tmp_path / "suite"
    proj.mkdir()
    for name in ("conftest.py", "pytest.ini"):
        shutil.copy(REPO / name, proj / name)
    shutil.copytree(REPO / "benchmarks", proj / "benchmarks")
    (proj / "baselines").mkdir()
    row = {
        "id": "pretrain-llama3_8b-h100-bf16-1gpu-tp1-toy",
        "task": "pretrain",
        "model": "llama3_8b",
        "gpu": "h100",
        "precision": "bf16",
        "num_gpus": 1,
        "gbs": 8,
        "mbs": 1,
        "seq_len": 1024,
        "backend": "toy",
        "steps": 30,
    }
    (proj / "baselines" / "h100.json").write_text(json.dumps([row]))
    return proj


def test_the_toy_log_format_is_parsed(tree: Path, tmp_path: Path) -> None:
    log = tmp_path / "toy.log"
    log.write_text("".join(f"noise\ntoy step {i} took {1.5 + i / 100:.2f} s\n" for i in range(6)))
    out = subprocess.run(
        [sys.executable, "-m", "perfgate", "parse", str(log), "--json"],
        env=_env(tree),
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    data = json.loads(out)
    assert data["format"] == "toy"
    assert [s["step_time_s"] for s in data["steps"]] == [1.5, 1.51, 1.52, 1.53, 1.54, 1.55]


def test_a_dry_run_goes_through_the_toy_backend_and_executor(tree: Path, tmp_path: Path) -> None:
    proj = _project(tree, tmp_path)
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "--dry-run", "--executor", "toybox", "-v",
         "-p", "no:cacheprovider", "-k", "toy"],
        cwd=proj, env=_env(tree), capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-3000:]
    assert "toy trainer: 30 steps of 1024 tokens" in out  # the backend's describe()
    assert "toy overrides: any path" in out  # its check_overrides()
    assert "RANK=0..0 WORLD_SIZE=1" in out  # the executor's render()
    assert "1 passed" in out


def test_a_real_local_run_goes_through_the_toy_backend_and_executor(
    tree: Path, tmp_path: Path
) -> None:
    proj = _project(tree, tmp_path)
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "--executor", "toybox", "-k", "toy", "--yes",
         "-p", "no:cacheprovider", "--poll-interval", "0.5", "--history", "off"],
        cwd=proj, env=_env(tree), capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-3000:]
    rec = json.loads((proj / "perfgate-results" / "results.json").read_text())
    (row,) = rec["rows"].values()
    assert row["verdict"] == "NO_BASELINE" and row["measured"]["step_time_s"] == 1.0
    assert rec["session"]["options"]["executor"] == "toybox"
