"""Container images: squashfs paths vs registry URIs, as pyxis and enroot understand them.

pyxis takes `--container-image` as a squashfs file only when it starts with `/` or `./`;
anything else is an enroot URI `[USER@][REGISTRY#]IMAGE[:TAG]` pulled by every task. A URI
given to perfgate is imported ONCE per allocation (`enroot import` into the job folder) and
every run of the job uses that file: one pull per job, and the A and B runs of an A/B job
cannot see a tag that moved between them.

What identifies an image honestly: enroot's import does not report the registry's manifest
digest, and pyxis passes none to the job. So perfgate records the sha256 of the squashfs
file each run actually started: a file the job imported is hashed by the job; a file the
user gave is hashed once per session on the login node (perfgate.launch.digests), matched
to each run by the size and mtime the job saw. It tells two files apart exactly, but it is
not the digest a registry shows.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path

from perfgate.errors import ConfigError

SQUASHFS_SUFFIXES = (".sqsh", ".squashfs", ".sqfs")
_SCHEMES = ("docker://", "dockerd://", "podman://")


def is_squashfs(image: str) -> bool:
    """True when image names a squashfs file rather than a registry image."""
    return image.startswith(("/", "./", "../", "~")) or image.endswith(SQUASHFS_SUFFIXES)


def squashfs_path(image: str, base: str | os.PathLike[str] | None = None) -> str:
    """The absolute path of a squashfs image (pyxis needs `/` or `./` to see a file)."""
    try:
        path = Path(image).expanduser()
    except RuntimeError:  # ~user of no such user
        raise ConfigError(
            f"container image {image!r}: cannot expand {image.split('/')[0]}"
        ) from None
    if not path.is_absolute():
        path = Path(base or os.getcwd()) / path
    return str(path.resolve())


def enroot_uri(image: str) -> str:
    """A registry image in enroot's form: `docker://[USER@][REGISTRY#]IMAGE[:TAG]`.

    Docker-style `nvcr.io/nvidia/nemo:25.07` becomes `nvcr.io#nvidia/nemo:25.07`: enroot would
    otherwise look the first component up on Docker Hub. A local engine's image
    (`podman://`, `dockerd://`) is that engine's own name for it, left as it is.
    """
    scheme = next((s for s in _SCHEMES if image.startswith(s)), "docker://")
    ref = image[len(scheme) :] if image.startswith(scheme) else image
    if scheme == "docker://" and "#" not in ref and "/" in ref:
        user, _, rest = ref.rpartition("@") if "@" in ref.split("/")[0] else ("", "", ref)
        first, _, tail = rest.partition("/")
        if "." in first or ":" in first or first == "localhost":
            rest = f"{first}#{tail}"
        ref = f"{user}@{rest}" if user else rest
    return scheme + ref


def sqsh_name(image: str) -> str:
    """A file name for an imported image, like enroot's own (`nvidia+nemo+25.07.sqsh`)."""
    ref = enroot_uri(image).split("://", 1)[1]
    ref = ref.split("#", 1)[-1]
    return re.sub(r"[^A-Za-z0-9._-]+", "+", ref).strip("+") + ".sqsh"


def import_command(image: str, output: str | os.PathLike[str]) -> list[str]:
    """The enroot command that imports a registry image into a squashfs file."""
    return ["enroot", "import", "--output", str(output), enroot_uri(image)]


def resolve(image: str | None, base: str | os.PathLike[str] | None = None) -> str | None:
    """Absolute path for a squashfs image (checked to exist), the URI unchanged otherwise.

    A missing squashfs file is a one-line ConfigError naming it, before anything is submitted.
    """
    if image is None or image == "":
        return None
    if not is_squashfs(image):
        return image
    path = squashfs_path(image, base)
    if not Path(path).is_file():
        raise ConfigError(f"container image {image!r}: no such squashfs file ({path})")
    return path


def resolve_for(runtime: str, image: str | None) -> str | None:
    """The image as a runtime takes it, checked before anything is submitted.

    pyxis: resolve() (squashfs file or registry URI). podman: a reference from its storage or
    a registry, never a file. command: a URI (`scheme://...`) unchanged, anything else a file
    that must exist (a .sif, a .sqsh ...), made absolute as for pyxis.
    """
    if not image:
        return None
    if runtime == "podman":
        if image.startswith(("/", "./", "../", "~")) or image.endswith(SQUASHFS_SUFFIXES):
            raise ConfigError(
                f"container image {image!r}: podman runs images from its storage or a "
                "registry, not files (`podman load` it, or use the pyxis runtime)"
            )
        return image
    if runtime == "command":
        if "://" in image:
            return image
        path = squashfs_path(image)
        if not Path(path).is_file():
            raise ConfigError(f"container image {image!r}: no such file ({path})")
        return path
    return resolve(image)


def file_sha256(path: str | os.PathLike[str], chunk: int = 8 << 20) -> str:
    """The sha256 of a file's bytes, as sha256:<hex>."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(chunk):
            h.update(block)
    return "sha256:" + h.hexdigest()


def file_stamp(path: str | os.PathLike[str]) -> list[int]:
    """[size, mtime_ns] of a file: what a run saw, to match a digest computed elsewhere."""
    st = os.stat(path)
    return [st.st_size, st.st_mtime_ns]


def cached_sha256(path: str | os.PathLike[str], cache: str | os.PathLike[str]) -> str:
    """file_sha256, remembered in a JSON file by path, size and mtime (requeues reuse it)."""
    key = str(Path(path).resolve())
    stamp = file_stamp(path)
    try:
        known = json.loads(Path(cache).read_text())
    except (OSError, ValueError):
        known = {}
    entry = known.get(key) if isinstance(known, dict) else None
    if isinstance(entry, dict) and entry.get("stamp") == stamp and entry.get("sha256"):
        return str(entry["sha256"])
    digest = file_sha256(path)
    known = known if isinstance(known, dict) else {}
    known[key] = {"stamp": stamp, "sha256": digest}
    tmp = Path(cache).with_suffix(".tmp")
    tmp.write_text(json.dumps(known, indent=1))
    os.replace(tmp, cache)
    return digest
