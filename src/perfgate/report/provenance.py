"""Where a row's baseline comes from, and whether it is a same-container reference.

A baseline from another container (a published number for nemo:24.12 gating a nemo:25.07
run) is a cross-version reference, not a regression check; the report says so wherever the
baseline is shown. It is one when the baseline's container and the measured one carry
different release tags, or when the baseline's notes begin with "cross-version reference"
(the convention for published baselines whose container differs from the one the row names).
"""

from __future__ import annotations

import re
from typing import Any

from perfgate.report import format as fmt
from perfgate.rowrecord import RowRecord

CROSS_NOTE = "cross-version reference"
# A NeMo-style release tag in an image name: nemo:25.07, nemo-25.09.sqsh, 26.02.01
_TAG = re.compile(r"(?<!\d)(\d{2}\.\d{2}(?:\.\d{1,2})?)(?!\d)")


def release_tag(image: str | None) -> str | None:
    """The release tag in a container name or path (25.07, 26.02.01), or None."""
    if not image:
        return None
    found = _TAG.findall(image)
    return found[-1] if found else None


def measured_image(rec: RowRecord) -> str | None:
    """The container the row's (candidate) runs used, when recorded."""
    images = [r.get("image") for r in rec.get("runs") or [] if r.get("label") != "baseline"]
    images = images or [r.get("image") for r in rec.get("runs") or []]
    seen = [i for i in dict.fromkeys(images) if i]
    return seen[-1] if seen else None


def cross_version(rec: RowRecord) -> str | None:
    """Why the row's stored baseline is a cross-version reference, or None when it is not
    (or when the report cannot tell: no container on either side and no note)."""
    base = rec.get("baseline") or {}
    if not base:
        return None
    container = base.get("container")
    measured = measured_image(rec)
    a, b = release_tag(container), release_tag(measured)
    if a and b and a != b:
        return f"baseline published for {container}, measured with {measured}"
    notes = base.get("notes") or ""
    if notes.lower().startswith(CROSS_NOTE):
        return notes
    return None


def derived(base: dict[str, Any]) -> bool:
    """True when the stored step time was computed from a published throughput (the notes
    of such baselines say "step_time_s derived from tokens/s")."""
    return "step_time_s derived from tokens/s" in str(base.get("notes") or "")


def provenance_text(rec: RowRecord) -> str:
    """One line: the baseline's value, source, container, date and notes (plain text)."""
    base = rec.get("baseline") or {}
    if not base:
        return "No stored baseline for this row."
    step = base.get("step_time_s")
    how = " (derived from the published tokens/s/GPU)" if derived(base) else ""
    parts = [f"Baseline {fmt.seconds(step)}{how} from {base.get('source') or 'unknown'}"]
    if base.get("container"):
        parts.append(f"container {base['container']}")
    if base.get("framework_version"):
        parts.append(f"framework {base['framework_version']}")
    if base.get("date"):
        parts.append(f"dated {base['date']}")
    n = base.get("n_runs")
    if n and n > 1:
        parts.append(f"{n} runs")
    text = "; ".join(parts) + "."
    if base.get("notes"):
        text += f" Notes: {base['notes']}"
    return text
