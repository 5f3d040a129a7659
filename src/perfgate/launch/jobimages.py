"""The container images of one job: imported once per allocation, identified honestly.

A registry URI is imported with enroot into the job folder (kept across requeues) and the
file it made is hashed; a squashfs file the user gave is only stat'ed here (size, mtime): the
session hashes it on the login node (perfgate.launch.digests), so no allocation waits for it.
"""

from __future__ import annotations

import os
import socket
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from perfgate.launch import images


class JobImages:
    """Prepares the images of a job's launches and records what identifies each."""

    def __init__(self, job_dir: str, log: Callable[[str], None], notes: list[str]) -> None:
        self.folder = Path(job_dir) / "images"
        self.log = log
        self.notes = notes  # the job manifest's notes
        self.digests: dict[str, str] = {}  # imported image -> "sha256:..." of its file
        self.stamps: dict[str, list[int]] = {}  # user's squashfs -> [size, mtime_ns] when run

    def prepare(self, wanted: set[str | None], srun_help: str) -> dict[str | None, str | None]:
        """What each image becomes on the srun line: its squashfs file (imported if need be)."""
        if "--container-image" not in srun_help:
            raise RuntimeError(
                "pyxis is not available: srun has no --container-image on this cluster "
                f"(images: {', '.join(sorted(i for i in wanted if i))})"
            )
        out: dict[str | None, str | None] = {None: None}
        for img in sorted(i for i in wanted if i):
            if images.is_squashfs(img):
                if not Path(img).is_file():
                    host = socket.gethostname()
                    raise RuntimeError(f"container image {img}: no such squashfs file on {host}")
                out[img] = img
                self.stamps[img] = images.file_stamp(img)
                continue
            out[img] = self.import_image(img)
            self.hash_image(img, out[img])
        return out

    def hash_image(self, image: str, path: str) -> None:
        """Record the sha256 of the squashfs file an image runs from (before any launch)."""
        self.folder.mkdir(parents=True, exist_ok=True)
        t0 = time.monotonic()
        try:
            self.digests[image] = images.cached_sha256(path, self.folder / "digests.json")
        except OSError as e:  # the digest is a record, never a reason to fail the job
            self.notes.append(f"could not hash {path}: {e}")
            return
        took = time.monotonic() - t0
        if took >= 1:
            self.notes.append(f"hashed {path} in {took:.0f} s")

    def import_image(self, image: str) -> str:
        """enroot import of a registry image into the job folder (kept across requeues)."""
        folder = self.folder
        folder.mkdir(parents=True, exist_ok=True)
        target = folder / images.sqsh_name(image)
        if target.is_file():
            self.log(f"reusing imported image {target}")
            return str(target)
        tmp = target.with_suffix(".partial.sqsh")
        tmp.unlink(missing_ok=True)
        log = folder / (target.stem + ".import.log")
        cmd = images.import_command(image, tmp)
        self.log("importing " + " ".join(cmd))
        t0 = time.monotonic()
        with open(log, "wb") as f:
            try:
                rc = subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT).returncode
            except FileNotFoundError:
                rc = 127
                f.write(b"enroot: command not found\n")
        if rc != 0:
            text = log.read_text(errors="replace").strip().splitlines()
            errors = [line for line in text if "[ERROR]" in line] or text[-1:] or ["no output"]
            raise RuntimeError(f"enroot import of {image} failed (exit {rc}): {errors[-1]}")
        os.replace(tmp, target)
        self.notes.append(
            f"imported {image} once for this allocation in {time.monotonic() - t0:.0f} s"
        )
        return str(target)
