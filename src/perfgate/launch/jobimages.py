"""The container images of one job: imported once per allocation, identified honestly.

pyxis: a registry URI is imported with enroot into the job folder (kept across requeues) and
the file it made is hashed; a squashfs file the user gave is only stat'ed here (size, mtime):
the session hashes it on the login node (perfgate.launch.digests), so no allocation waits
for it. podman: the image is looked up (pulled once if absent) on the job's first node and
its image ID recorded. command: a file is stat'ed like pyxis's; a URI is left to the runtime.
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

    def prepare(
        self, wanted: set[str | None], runtime: str, srun_help: Callable[[], str]
    ) -> dict[str | None, str | None]:
        """What each image becomes on the srun line (pyxis: its squashfs file, imported if
        need be); raises RuntimeError, naming the image, when one cannot be had."""
        out: dict[str | None, str | None] = {None: None}
        todo = sorted(i for i in wanted if i)
        if runtime == "podman":
            for img in todo:
                out[img] = img
                self.podman_image(img)
            return out
        if runtime == "command":
            for img in todo:
                out[img] = img
                if "://" not in img:
                    self.stamp_file(img)
            return out
        if "--container-image" not in srun_help():
            raise RuntimeError(
                "pyxis is not available: srun has no --container-image on this cluster "
                f"(images: {', '.join(todo)})"
            )
        for img in todo:
            if images.is_squashfs(img):
                out[img] = img
                self.stamp_file(img)
                continue
            out[img] = self.import_image(img)
            self.hash_image(img, out[img])
        return out

    def stamp_file(self, path: str) -> None:
        """Record the size and mtime of the user's image file (the session hashes it)."""
        if not Path(path).is_file():
            raise RuntimeError(f"container image {path}: no such file on {socket.gethostname()}")
        self.stamps[path] = images.file_stamp(path)

    def podman_image(self, image: str) -> None:
        """Record podman's image ID (pulling the image once if this node lacks it)."""
        found = _podman(["image", "inspect", "--format", "{{.Id}}", image])
        if found.returncode != 0:
            self.log(f"pulling {image} with podman")
            t0 = time.monotonic()
            pulled = _podman(["pull", "--quiet", image])
            if pulled.returncode != 0:
                lines = (pulled.stderr or pulled.stdout).strip().splitlines() or ["no output"]
                raise RuntimeError(
                    f"podman pull of {image} failed (exit {pulled.returncode}): {lines[-1]}"
                )
            self.notes.append(f"pulled {image} with podman in {time.monotonic() - t0:.0f} s")
            found = _podman(["image", "inspect", "--format", "{{.Id}}", image])
        if found.returncode == 0 and found.stdout.strip():
            # podman's image ID: the sha256 of the image's config (not a registry manifest)
            self.digests[image] = "sha256:" + found.stdout.strip().removeprefix("sha256:")

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
            tmp.unlink(missing_ok=True)  # a half-made image can be tens of GB
            text = log.read_text(errors="replace").strip().splitlines()
            errors = [line for line in text if "[ERROR]" in line] or text[-1:] or ["no output"]
            raise RuntimeError(f"enroot import of {image} failed (exit {rc}): {errors[-1]}")
        os.replace(tmp, target)
        self.notes.append(
            f"imported {image} once for this allocation in {time.monotonic() - t0:.0f} s"
        )
        return str(target)


def _podman(args: list[str]) -> subprocess.CompletedProcess[str]:
    """A podman command's outcome (exit 127 when podman is missing)."""
    try:
        return subprocess.run(["podman", *args], capture_output=True, text=True, timeout=3600)
    except FileNotFoundError:
        return subprocess.CompletedProcess(args, 127, "", "podman: command not found")
    except subprocess.TimeoutExpired:
        return subprocess.CompletedProcess(args, 124, "", "podman: timed out after 3600 s")
