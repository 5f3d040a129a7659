"""What `perfgate bisect` is given, checked before anything is submitted: the ordered images
and the gate's word on their ends.

Each problem is one line (a ConfigError): fewer than two images, an image listed twice, an
image the runtime cannot find (a missing squashfs file), ends the gate did not judge a
REGRESSION (or ends that are the same file). Nothing is submitted before these pass.

An images file is read at the door: a regular file of at most limits.MAX_SMALL_FILE_BYTES,
UTF-8, one image per line; '#' starts a comment only at the start of a line or after
whitespace (enroot's `registry#nvidia/nemo:25.07` is an image, not a comment). Every name, from
the file or the command line, is one word a shell and sbatch read as written (no whitespace,
quotes, '$', '`', '\\', ';', '&', '|', '<', '>' or control characters): a bad one is one line
naming --images-file and its line number (or its place on the command line).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from perfgate import charset, inputs, limits
from perfgate.catalog import Row
from perfgate.errors import ConfigError, PerfgateError
from perfgate.launch import images
from perfgate.report import sessionfiles

_COMMENT = re.compile(r"(?:^|\s)#.*$")
_NOT_IN_A_NAME = re.compile(r"[\s'\"$`\\;&|<>(){}*?!]")


def check_name(image: str, where: str) -> str:
    """image when it is one plain word (module doc); a one-line ConfigError naming where."""
    if not image:
        raise ConfigError(f"{where}: an empty image name")
    if len(image) > limits.MAX_NAME_CHARS * 4:
        raise ConfigError(
            f"{where}: an image name of {len(image):,} characters (at most "
            f"{limits.MAX_NAME_CHARS * 4:,})"
        )
    ch = charset.bad_char(image)
    if ch is None:
        m = _NOT_IN_A_NAME.search(image)
        ch = m.group() if m else None
    if ch is not None:
        raise ConfigError(
            f"{where}: image {charset.shown(image, 60)}: {ch!r} is not allowed in an image name "
            "(a squashfs path or registry image, one word; rename or link a file that has one)"
        )
    return image


def read_list(given: Sequence[str], images_file: str | None) -> list[str]:
    """The images in order, each name checked (check_name): from the command line, or one per
    line of a file ('#' comments at a line's start or after whitespace)."""
    if given and images_file:
        raise ConfigError("give the images on the command line or in --images-file, not both")
    if not images_file:
        return [check_name(image, f"image {i}") for i, image in enumerate(given, 1)]
    what = f"--images-file {images_file}"
    try:
        cap = limits.MAX_SMALL_FILE_BYTES
        data = inputs.read_text(
            images_file, ConfigError, errors="surrogateescape", max_bytes=cap, what="images file"
        )
    except FileNotFoundError:
        raise ConfigError(f"{what}: no such file") from None
    except OSError as e:
        raise ConfigError(f"{what}: cannot read it ({e})") from None
    out = []
    for n, line in enumerate(data.split("\n"), 1):
        if any(0xDC80 <= ord(c) <= 0xDCFF for c in line):
            raise ConfigError(f"{what}: line {n} is not UTF-8 text")
        image = _COMMENT.sub("", line).strip()
        if image:
            out.append(check_name(image, f"{what}: line {n}"))
    return out


def check_images(listed: Sequence[str], runtime: str) -> list[str]:
    """The images as the runtime takes them (squashfs paths made absolute), checked."""
    if len(listed) < 2:
        got = f": {listed[0]}" if listed else ""
        raise ConfigError(
            f"bisect needs at least two images, the last known good first and the first known "
            f"bad last; got {len(listed)}{got}"
        )
    resolved: list[str] = []
    seen: dict[str, int] = {}
    for i, image in enumerate(listed, 1):
        try:
            path = images.resolve_for(runtime, check_name(image, f"image {i}"))
        except ConfigError as e:
            raise ConfigError(f"image {i} of {len(listed)}: {e}") from None
        assert path is not None  # check_name refused an empty name
        if path in seen:
            same = f" ({path})" if path != image else ""
            raise ConfigError(
                f"image {image!r}{same} is listed twice (images {seen[path]} and {i}): each "
                "image must appear once, in build order"
            )
        seen[path] = i
        resolved.append(path)
    return resolved


def check_ends_differ(first: str, last: str) -> None:
    """Ends that are byte for byte the same file cannot differ in speed (no gate needed)."""
    a, b = Path(first), Path(last)
    if not (images.is_squashfs(first) and a.is_file() and b.is_file()):
        return
    if a.stat().st_size != b.stat().st_size:
        return
    digest = images.file_sha256(a)
    if digest == images.file_sha256(b):
        raise ConfigError(
            f"the ends do not differ: {first} and {last} are the same file content ({digest}); "
            "nothing to bisect"
        )


def _pct(x: Any) -> str:
    return f"{x:+.1%}" if isinstance(x, float) and math.isfinite(x) else "n/a"


def _gate_line(rec: dict[str, Any]) -> str:
    c = rec.get("comparison") or {}
    ci = ""
    if c.get("ci_low") is not None and c.get("ci_high") is not None:
        ci = f" [{c['ci_low']:+.1%}, {c['ci_high']:+.1%}]"
    pairs = (rec.get("ab") or {}).get("pairs_run")
    return f"delta {_pct(c.get('delta'))}{ci} over {pairs} pair(s)"


def check_gate(path: str, rows: Sequence[Row], first: str, last: str) -> dict[str, Any]:
    """The gate's results.json for the ends: every row an A/B of exactly these two images,
    judged REGRESSION; returns {row id: the gate's verdict line}."""
    try:
        rows_in = sessionfiles.read(path).get("rows") or {}
    except (OSError, PerfgateError, ValueError) as e:
        raise ConfigError(f"--gate {path}: not a perfgate results.json ({e})") from None
    out = {}
    for row in rows:
        rec = rows_in.get(row.id)
        if rec is None:
            raise ConfigError(f"--gate {path}: row {row.id} is not in it; run the A/B gate on it")
        sides = (rec.get("ab") or {}).get("sides") or {}
        ran = (
            (sides.get("baseline") or {}).get("image"),
            (sides.get("candidate") or {}).get("image"),
        )
        if rec.get("mode") != "paired" or not all(ran):
            raise ConfigError(f"--gate {path}: row {row.id} was not judged by A/B pairs")
        if ran != (first, last):
            raise ConfigError(
                f"--gate {path}: row {row.id}'s A/B ran A={ran[0]} B={ran[1]}, but the image "
                f"list runs from {first} to {last}"
            )
        verdict = rec.get("verdict")
        if verdict in ("PASS", "IMPROVEMENT"):
            raise ConfigError(
                f"the ends do not differ: the gate judged row {row.id} {verdict} "
                f"({_gate_line(rec)}); nothing to bisect"
            )
        if verdict == "INCONCLUSIVE":
            raise ConfigError(
                f"the gate could not tell the ends apart on row {row.id} (INCONCLUSIVE, "
                f"{_gate_line(rec)}): rerun it with more pairs (--max-pairs) before bisecting"
            )
        if verdict != "REGRESSION":
            raise ConfigError(
                f"--gate {path}: row {row.id} is {verdict}, not a REGRESSION: rerun the gate"
            )
        out[row.id] = f"REGRESSION, {_gate_line(rec)}"
    return out
