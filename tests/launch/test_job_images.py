"""Container images in the job function: each registry image imported once per allocation.

pyxis and enroot do not exist here: `srun --help` and `enroot` are stand-in scripts on PATH
that behave as the real ones do at this interface (help text, exit status, output file).
"""

from __future__ import annotations

import hashlib
import os
import signal
import stat
from pathlib import Path

import pytest

from perfgate.launch import images
from perfgate.launch.collect import collect_job
from perfgate.launch.digests import ImageDigests
from perfgate.launch.job import Job
from perfgate.launch.types import LaunchOptions
from perfgate.runs import RunRecord, RunResult


def script(path: Path, body: str) -> None:
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IEXEC)


@pytest.fixture
def fake_bin(tmp_path, monkeypatch):
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    calls = tmp_path / "enroot-calls"
    script(bin_ / "srun", 'echo "      --container-image=[USER@][REGISTRY#]IMAGE[:TAG]|PATH"\n')
    # enroot import --output FILE URI: one line per call, then the squashfs file.
    script(
        bin_ / "enroot",
        f'echo "$@" >> {calls}\ncase "$4" in *denied*) '
        'echo "[INFO] Querying registry for permission grant"; '
        'echo "[ERROR] URL https://nvcr.io/v2/x/manifests/1 returned error code: 401 '
        'Unauthorized"; exit 1;; esac\necho hsqs > "$3"\n',
    )
    monkeypatch.setenv("PATH", f"{bin_}:{os.environ['PATH']}")
    monkeypatch.delenv("SLURM_RESTART_COUNT", raising=False)
    return calls


def make_job(command_row, tmp_path, baseline: str, candidate: str) -> Job:
    from perfgate.launch.planning import context

    opts = LaunchOptions(
        container_image=baseline,
        candidate_image=candidate,
        pairs=2,
        max_pairs=2,
        results_dir=str(tmp_path),
    )
    return Job(context(command_row, opts, tmp_path / "job"))


def test_each_registry_image_is_imported_once(command_row, tmp_path, fake_bin):
    job = make_job(command_row, tmp_path, "nvcr.io/nvidia/nemo:25.07", "nvcr.io/nvidia/nemo:25.09")
    mapping = job.prepare_images()
    images = tmp_path / "job" / "images"
    assert mapping["nvcr.io/nvidia/nemo:25.07"] == str(images / "nvidia+nemo+25.07.sqsh")
    assert mapping["nvcr.io/nvidia/nemo:25.09"] == str(images / "nvidia+nemo+25.09.sqsh")
    calls = fake_bin.read_text().splitlines()
    assert len(calls) == 2  # four launches (AB BA), two images, two imports
    assert calls[0].endswith("docker://nvcr.io#nvidia/nemo:25.07")
    # Each imported file is hashed: the report tells the two images apart by content.
    want = "sha256:" + hashlib.sha256(b"hsqs\n").hexdigest()
    old, new = "nvcr.io/nvidia/nemo:25.07", "nvcr.io/nvidia/nemo:25.09"
    assert job.images.digests == {old: want, new: want}
    # A requeued attempt reuses what the first attempt imported.
    again = make_job(
        command_row, tmp_path, "nvcr.io/nvidia/nemo:25.07", "nvcr.io/nvidia/nemo:25.09"
    )
    again.prepare_images()
    assert len(fake_bin.read_text().splitlines()) == 2


def test_unpullable_image_is_a_container_diagnosis_naming_it(command_row, tmp_path, fake_bin):
    job = make_job(command_row, tmp_path, "nvcr.io/nvidia/nemo:25.07", "nvcr.io/denied/nemo:1")
    result = job.run()
    assert result.diagnosis.cause == "CONTAINER"
    assert "nvcr.io/denied/nemo:1" in result.diagnosis.message
    assert "401 Unauthorized" in result.diagnosis.evidence
    assert result.runs == ()
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL  # the job's handlers are gone


def test_without_pyxis_an_image_is_refused_not_ignored(command_row, tmp_path, monkeypatch):
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    script(bin_ / "srun", 'echo "Usage: srun [OPTIONS(0)... [executable(0) [args(0)...]]]"\n')
    monkeypatch.setenv("PATH", f"{bin_}:{os.environ['PATH']}")
    monkeypatch.delenv("SLURM_RESTART_COUNT", raising=False)
    image = tmp_path / "nemo.sqsh"
    image.write_bytes(b"hsqs")
    job = make_job(command_row, tmp_path, str(image), str(image))
    result = job.run()
    assert result.diagnosis.cause == "CONTAINER"
    assert "pyxis is not available" in result.diagnosis.message
    assert collect_job(tmp_path / "job", command_row.id, None, "FAILED").diagnosis.cause == (
        "CONTAINER"
    )


def test_user_squashfs_files_are_stamped_not_hashed_in_the_job(command_row, tmp_path, fake_bin):
    a, b = tmp_path / "a.sqsh", tmp_path / "b.sqsh"
    a.write_bytes(b"hsqs-25.07" * 1000)
    b.write_bytes(b"hsqs-25.09")
    job = make_job(command_row, tmp_path, str(a), str(b))
    assert job.prepare_images() == {None: None, str(a): str(a), str(b): str(b)}
    assert job.images.digests == {}  # hashing 30 GB would idle the allocation: the session does it
    assert job.images.stamps == {
        str(a): [10_000, a.stat().st_mtime_ns],
        str(b): [10, b.stat().st_mtime_ns],
    }


def test_session_digests_match_runs_by_size_and_mtime(tmp_path):
    a, b = tmp_path / "a.sqsh", tmp_path / "b.sqsh"
    a.write_bytes(b"hsqs-25.07")
    b.write_bytes(b"hsqs-25.09")
    seen_a, seen_b = tuple(images.file_stamp(a)), tuple(images.file_stamp(b))
    digests = ImageDigests()
    digests.start([str(a), str(b), "nvcr.io/nvidia/nemo:25.09", None])
    runs = (
        RunRecord(image=str(a), label="baseline", series=None, image_stamp=seen_a),
        RunRecord(image=str(b), label="candidate", series=None, image_stamp=seen_b),
        RunRecord(image="nemo:x", label="candidate", series=None),  # no file: no digest
    )
    filled = digests.fill(RunResult("r", "1", "COMPLETED", runs=runs))
    want = {p: "sha256:" + hashlib.sha256(p.read_bytes()).hexdigest() for p in (a, b)}
    assert [r.image_digest for r in filled.runs] == [want[a], want[b], None]
    # a file replaced since the run saw it is not vouched for
    stale = RunRecord(image=str(a), label="baseline", series=None, image_stamp=(1, 2))
    assert (
        digests.fill(RunResult("r", "1", "COMPLETED", runs=(stale,))).runs[0].image_digest is None
    )
