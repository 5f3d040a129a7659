"""update_baselines: atomic, locked, diff-reviewed writes, tested with real processes."""

from __future__ import annotations

import json
import multiprocessing
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from testutil import REPO

from perfgate import catalog
from perfgate.catalog import Baseline, Provenance
from perfgate.catalog.provenance import SHIPPED_DIR
from perfgate.errors import ConfigError

BASELINES = SHIPPED_DIR


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    target = tmp_path / "baselines"
    shutil.copytree(BASELINES, target)
    return target


def _baseline(step: float, job: str = "1") -> Baseline:
    return Baseline(
        step_time_s=step,
        provenance=Provenance(source="perfgate --update-baselines", job_ids=(job,)),
        n_runs=1,
    )


def test_update_writes_the_row_and_returns_a_diff(folder):
    rid = "lora-llama3_70b-gb200-bf16-8gpu-tp1pp4vp20"
    before = (folder / "gb200.json").read_text()
    diff = catalog.update_baselines(folder, {rid: _baseline(4.07)})
    assert diff.startswith(f"--- a/{folder / 'gb200.json'}\n+++ b/{folder / 'gb200.json'}\n")
    assert '+      "step_time_s": 4.07,' in diff
    assert all(line[0] in "+ @-" for line in diff.splitlines()[2:])
    # Nothing else is removed but the notes list's closing bracket, which gains a comma.
    removed = [line for line in diff.splitlines()[2:] if line.startswith("-")]
    assert removed == ["-    ]"]
    assert "+    ]," in diff.splitlines()
    row = catalog.load_catalog(folder).get(rid)
    assert row.baseline == _baseline(4.07)
    # Only that row changed: the other rows' text is untouched.
    after = (folder / "gb200.json").read_text()
    assert len(after.splitlines()) > len(before.splitlines())
    assert catalog.update_baselines(folder, {rid: _baseline(4.07)}) == ""  # no change, no diff
    assert (folder / "gb200.json.lock").exists()
    assert not list(folder.glob(".*.tmp"))


def test_update_errors(folder):
    with pytest.raises(ConfigError, match="unknown row id 'nope'"):
        catalog.update_baselines(folder, {"nope": _baseline(1.0)})
    rid = "lora-llama3_70b-gb200-bf16-8gpu-tp1pp4vp20"
    bad = Baseline(
        step_time_s=1.0, provenance=Provenance(source="x"), mfu=42.0, flops_convention="megatron"
    )
    with pytest.raises(ConfigError, match=r"baseline\.mfu"):
        catalog.update_baselines(folder, {rid: bad})
    assert catalog.load_catalog(folder).get(rid).baseline is None  # nothing was written
    with pytest.raises(ConfigError, match="must be a Baseline"):
        catalog.update_baselines(folder, {rid: {"step_time_s": 1.0}})  # type: ignore[dict-item]
    assert catalog.update_baselines(folder, {}) == ""


def _writer(folder: str, ids: list[str], index: int, rounds: int) -> None:
    for r in range(rounds):
        updates = {rid: _baseline(1.0 + index + r / 100, job=f"{index}.{r}") for rid in ids}
        catalog.update_baselines(folder, updates)


def _reader(folder: str, stop) -> int:  # type: ignore[no-untyped-def]
    reads = 0
    while not stop.is_set():
        # A reader never sees a half-written file: it always parses and validates.
        json.loads((Path(folder) / "h100.json").read_text())
        catalog.load_file(Path(folder) / "h100.json")
        reads += 1
    return reads


def test_concurrent_writers_lose_no_update(folder):
    # 12 processes each own a disjoint set of rows of one file and rewrite them 3 times, all
    # at once, while another process keeps reading the file. Every last write must survive.
    rows = [r.id for r in catalog.load_file(folder / "h100.json")]
    workers = 12
    rounds = 3
    groups = [rows[i::workers] for i in range(workers)]
    ctx = multiprocessing.get_context("fork")
    stop = ctx.Event()
    reader = ctx.Process(target=_reader, args=(str(folder), stop))
    reader.start()
    procs = [
        ctx.Process(target=_writer, args=(str(folder), groups[i], i, rounds))
        for i in range(workers)
    ]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=120)
    stop.set()
    reader.join(timeout=30)
    assert all(p.exitcode == 0 for p in procs), [p.exitcode for p in procs]
    assert reader.exitcode == 0
    final = catalog.load_catalog(folder)
    for i, group in enumerate(groups):
        for rid in group:
            b = final.get(rid).baseline
            assert b is not None, rid
            assert b.step_time_s == pytest.approx(1.0 + i + (rounds - 1) / 100), rid
            assert b.provenance.job_ids == (f"{i}.{rounds - 1}",), rid
    # rows of the other files are untouched
    assert final.get("pretrain-llama3_8b-b200-fp8ds-8gpu-tp1").baseline is None
    assert not list(folder.glob(".*.tmp"))


_KILLED_WRITER = """
import os, sys
from perfgate import atomic, catalog
from perfgate.catalog import Baseline, Provenance
from perfgate.catalog.provenance import SHIPPED_DIR
def killed(src, dst):  # kill -9 between the temp file's write and its rename
    os.kill(os.getpid(), 9)
os.replace = killed
base = Baseline(step_time_s=4.5, provenance=Provenance(source="x", job_ids=("1",)), n_runs=1)
catalog.update_baselines(sys.argv[1], {sys.argv[2]: base})
"""


def _git_ignores(path: str) -> bool:
    """Whether the project's .gitignore covers path, asked of git itself in a scratch
    repository (the tests also run from a copy of the tree that has no .git)."""
    with tempfile.TemporaryDirectory() as scratch:
        subprocess.run(["git", "init", "-q", scratch], check=True)
        shutil.copy(REPO / ".gitignore", Path(scratch) / ".gitignore")
        asked = subprocess.run(["git", "check-ignore", "-q", path], cwd=scratch, check=False)
    assert asked.returncode in (0, 1), f"git check-ignore failed ({asked.returncode})"
    return asked.returncode == 0


def test_a_writer_killed_mid_write_leaves_nothing_the_next_one_does_not_remove(folder):
    # kill -9 inside a baselines write left baselines/.h100.json.<random>.tmp that nothing
    # removed and .gitignore did not cover (`git add baselines/` committed it).
    rid = "lora-llama3_70b-gb200-bf16-8gpu-tp1pp4vp20"
    before = (folder / "gb200.json").read_text()
    proc = subprocess.run([sys.executable, "-c", _KILLED_WRITER, str(folder), rid], check=False)
    assert proc.returncode == -9
    (left,) = folder.glob(".gb200.json.*.tmp")
    assert (folder / "gb200.json").read_text() == before  # the file itself is whole
    assert _git_ignores(f"baselines/{left.name}"), "git would commit the leftover"
    catalog.update_baselines(folder, {rid: _baseline(4.07)})
    assert not list(folder.glob(".*.tmp"))
    assert catalog.load_catalog(folder).get(rid).baseline == _baseline(4.07)
