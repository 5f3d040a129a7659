"""docs/extending.md is true: its recipes, followed on a copy of the tree with every new entry
first and then last in its table (tests/siteedits.py), add a row, a GPU, a log format, a
workload backend and an executor that `perfgate validate`, `perfgate parse`, `pytest --dry-run`
and a real local run go through, and the suite's registry tests stay green there."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import siteedits
from testutil import REPO

pytestmark = pytest.mark.long
DOC = REPO / "docs" / "extending.md"
# The tests that name registries (GPUs, formats, backends, executors, the catalog schema): run
# on the edited copy with each new entry first, they show none holds today's tables instead of
# code. (.ci/run runs every CPU test on such a copy with the entries last.)
REGISTRY_TESTS = (
    "tests/catalog/test_catalog.py",
    "tests/catalog/test_provenance.py",
    "tests/logs/test_logs_registry.py",
    "tests/launch/test_executors.py",
    "tests/workload/test_command.py",
    "tests/flops/test_cli_flops.py",
    "tests/suite/test_selection.py",
    "tests/test_layering.py",
)


@pytest.fixture(scope="module", params=["first", "last"])
def tree(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the repository with every recipe of docs/extending.md followed."""
    doc = DOC.read_text()
    for heading in ("## A row", "## A GPU", "## A log format", "## A workload backend",
                    "## An executor", "`FACES`", "`BACKEND_TRAITS`", "`REGISTRY`",
                    "`ALLOCATIONS`", "`FAMILIES`", "`FORMATS`", "`GPUS`"):  # fmt: skip
        assert heading in doc, f"docs/extending.md no longer says {heading!r}"
    root = tmp_path_factory.mktemp(f"extended-{request.param}")
    ignore = shutil.ignore_patterns("__pycache__", ".venv*", ".containers", ".local-slurm")
    for name in ("src", "tests", "benchmarks", "baselines", "docs", "scripts"):
        shutil.copytree(REPO / name, root / name, ignore=ignore)
    for name in ("conftest.py", "pytest.ini", "pyproject.toml", ".gitignore"):
        shutil.copy(REPO / name, root / name)
    siteedits.apply_all(root, request.param)
    return root


def _env(tree: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(tree / "src"), "PYTHONDONTWRITEBYTECODE": "1"}


def _run(tree: Path, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, *args], cwd=cwd or tree, env=_env(tree), capture_output=True,
        text=True, timeout=600,
    )  # fmt: skip


def test_the_sites_folder_validates_and_provenance_names_the_dropped_row(tree: Path) -> None:
    proc = _run(tree, "-m", "perfgate", "validate", "--json")
    assert proc.returncode == 0, proc.stderr
    counts = json.loads(proc.stdout)["rows"]["baselines"]
    assert counts == 147 + 3 - 1  # a scaled row, a row on the new GPU, the toy row; one dropped
    proc = _run(tree, "-m", "perfgate", "validate", "--provenance")
    assert proc.returncode == 2
    assert proc.stderr == (
        f"perfgate validate: error: baselines: row {siteedits.DROPPED}: shipped row missing\n"
    )
    proc = _run(tree, "-m", "perfgate", "fmt", "--check")  # a plain json.dump is not canonical
    assert (
        proc.returncode == 1 and f"baselines/{siteedits.TOY_GPU}.json: not canonical" in proc.stdout
    )


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
    proc = _run(tree, "-m", "pytest", "--dry-run", "--executor", "toybox", "-v",
                "-p", "no:cacheprovider", "-k", "toy", f"--results-dir={tmp_path}")  # fmt: skip
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-3000:]
    assert "toy trainer: 30 steps of 1024 tokens" in out  # the backend's describe()
    assert "toy overrides: any path" in out  # its check_overrides()
    assert "RANK=0..0 WORLD_SIZE=1" in out  # the executor's render()
    assert "1 passed" in out


def test_a_real_local_run_goes_through_the_toy_backend_and_executor(
    tree: Path, tmp_path: Path
) -> None:
    proc = _run(tree, "-m", "pytest", "--executor", "toybox", "-k", "toy", "--yes",
                "-p", "no:cacheprovider", "--poll-interval", "0.5", "--history", "off",
                f"--results-dir={tmp_path}")  # fmt: skip
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-3000:]
    rec = json.loads((tmp_path / "results.json").read_text())
    (row,) = rec["rows"].values()
    assert row["verdict"] == "NO_BASELINE" and row["measured"]["step_time_s"] == 1.0
    assert rec["session"]["options"]["executor"] == "toybox"


def test_the_new_gpu_is_a_marker_and_its_row_plans(tree: Path, tmp_path: Path) -> None:
    proc = _run(tree, "-m", "pytest", "--dry-run", "-m", siteedits.TOY_GPU, "-v",
                "-p", "no:cacheprovider", f"--results-dir={tmp_path}")  # fmt: skip
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-3000:]
    assert siteedits.SCALED_FROM.replace("h200", siteedits.TOY_GPU) in out
    assert "1 passed" in out


def test_the_registry_tests_pass_on_the_edited_tree(tree: Path) -> None:
    proc = _run(tree, "-m", "pytest", *REGISTRY_TESTS, "-q", "-p", "no:cacheprovider", "-x",
                "-p", "no:randomly")  # fmt: skip
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
