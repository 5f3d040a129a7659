"""The report's environment table: images and the versions measured inside the jobs.

Values come from the jobs (RunRecord.versions, written by the workload on rank 0), not from
the login node, because the container is what was measured. When rows disagree (two images,
a node with another driver), every distinct value is listed with its row count.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable
from typing import Any

import pytest
from pytest_metadata.plugin import metadata_key

from perfgate.secrets import redact

# Display names of the version keys the workload records; others are shown as recorded.
VERSION_LABELS = {
    "nemo": "NeMo",
    "megatron_core": "Megatron-Core",
    "megatron_bridge": "Megatron-Bridge",
    "transformer_engine": "TransformerEngine",
    "torch": "PyTorch",
    "nccl": "NCCL",
    "cuda": "CUDA",
    "cudnn": "cuDNN",
    "driver": "Driver",
    "gpu_name": "GPU",
}


def _distinct(values: Counter) -> str:
    if len(values) == 1:
        return str(next(iter(values)))
    return "; ".join(f"{v} ({n} rows)" for v, n in values.most_common())


def environment(records: Iterable[dict[str, Any]], session: dict[str, Any]) -> dict[str, str]:
    """Name -> value (plain text, unescaped) for the environment table."""
    images: dict[str, Counter] = defaultdict(Counter)
    versions: dict[str, Counter] = defaultdict(Counter)
    nodes: set[str] = set()
    n_rows = 0
    none = (
        "(not recorded: replayed logs)" if session.get("mode") == "replay" else "(none: bare metal)"
    )
    for rec in records:
        n_rows += 1
        for run in rec.get("runs", []):
            images[run.get("label", "baseline")][run.get("image") or none] += 1
            for k, v in (run.get("versions") or {}).items():
                versions[k][str(v)] += 1
        nodes.update((rec.get("job") or {}).get("nodes") or [])
    out: dict[str, str] = {"perfgate mode": str(session.get("mode", ""))}
    opts = session.get("options") or {}
    if opts.get("container_image"):
        out["Container image (requested)"] = str(opts["container_image"])
    if opts.get("candidate_image"):
        out["Candidate image (requested, A/B)"] = str(opts["candidate_image"])
        out["A/B pairs"] = f"{opts.get('pairs')} to start, at most {opts.get('max_pairs')}"
    for label, counter in sorted(images.items()):
        out[f"Container image ({label}, measured)"] = _distinct(counter)
    for key in sorted(versions, key=lambda k: (k not in VERSION_LABELS, k)):
        out[VERSION_LABELS.get(key, key)] = _distinct(versions[key])
    if session.get("cluster"):
        out["Cluster"] = str(session["cluster"])
    if opts.get("partition"):
        out["Partition"] = str(opts["partition"])
    if nodes:
        shown = ", ".join(sorted(nodes)[:16])
        more = f" and {len(nodes) - 16} more" if len(nodes) > 16 else ""
        out["Nodes"] = f"{len(nodes)}: {shown}{more}"
    out["Rows"] = str(n_rows)
    return out


def login_metadata(config: pytest.Config) -> dict[str, Any]:
    """pytest-metadata's table (Python, platform, packages, plugins: the login node), without
    perfgate's own entries and redacted, for results.json (the report shows it)."""
    meta = config.stash.get(metadata_key, {})
    return {k: _plain(v) for k, v in meta.items() if not str(k).startswith("perfgate")}


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    return redact(str(value))
