"""sha256 of the user's squashfs images, computed once per session on the login node.

Hashing a 20-30 GB image takes a while; done in a job it would keep every GPU of the
allocation idle meanwhile, and once per row. So the session hashes each image file in a
background thread while the jobs queue and run, and each run is given the digest only when
the file's size and mtime, as the job saw them (RunRecord.image_stamp), are still those of
the file that was hashed: a file replaced in between gets no digest rather than a wrong one.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Iterable

from perfgate.launch import images
from perfgate.runs import RunResult

WAIT_S = 120.0  # how long a finished row waits for a digest still being computed


class ImageDigests:
    """Background sha256 of squashfs files, matched to runs by (size, mtime_ns)."""

    def __init__(self) -> None:
        self._threads: dict[str, threading.Thread] = {}
        self._done: dict[str, tuple[tuple[int, int], str]] = {}
        self._errors: dict[str, str] = {}

    def start(self, paths: Iterable[str | None]) -> None:
        """Start hashing each existing squashfs file not started yet (others are ignored)."""
        for path in paths:
            if not path or path in self._threads or not images.is_squashfs(path):
                continue
            t = threading.Thread(target=self._hash, args=(path,), daemon=True)
            self._threads[path] = t
            t.start()

    def _hash(self, path: str) -> None:
        try:
            before = tuple(images.file_stamp(path))
            digest = images.file_sha256(path)
            after = tuple(images.file_stamp(path))
        except OSError as e:
            self._errors[path] = str(e)
            return
        if before == after:  # not rewritten while it was read
            self._done[path] = (before, digest)  # type: ignore[assignment]

    def digest(self, path: str, stamp: tuple[int, int], wait_s: float = WAIT_S) -> str | None:
        """The file's digest when its hash matches what a run saw, else None."""
        t = self._threads.get(path)
        if t is not None:
            t.join(wait_s)
        got = self._done.get(path)
        return got[1] if got is not None and got[0] == tuple(stamp) else None

    def fill(self, result: RunResult, wait_s: float = WAIT_S) -> RunResult:
        """The result with each run's digest filled in where the job left it to the session."""
        runs = []
        for run in result.runs:
            if run.image_digest is None and run.image_stamp and run.image:
                run = dataclasses.replace(
                    run, image_digest=self.digest(run.image, run.image_stamp, wait_s)
                )
            runs.append(run)
        return dataclasses.replace(result, runs=tuple(runs))
