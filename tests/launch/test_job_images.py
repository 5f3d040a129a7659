"""The session's image digests: matched to runs by the size and mtime the job saw.

What the job does with images (imports, stamps, failures) runs against the real pyxis,
enroot and podman in tests/integration/test_containers.py.
"""

from __future__ import annotations

import hashlib

from perfgate.launch import images
from perfgate.launch.digests import ImageDigests
from perfgate.runs import RunRecord, RunResult


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
