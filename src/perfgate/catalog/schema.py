"""The JSON form of catalog rows: field names, kinds, defaults, and their one-line errors.

Structure is checked here (unknown fields, missing fields, value kinds); what the values mean
together (parallel layout, precision on the hardware, ids) is checked in catalog.validate.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Iterable, Mapping
from dataclasses import fields
from typing import Any

from perfgate import charset, hardware, limits
from perfgate.catalog import validate
from perfgate.catalog.rows import DEFAULT_BACKEND, Baseline, BaselineRun, Provenance, Row
from perfgate.errors import ConfigError

# Key order in the JSON files (stable, so diffs stay small); the first nine are required.
ROW_KEYS = (
    "id",
    "task",
    "model",
    "gpu",
    "precision",
    "num_gpus",
    "gbs",
    "mbs",
    "seq_len",
    "fp8_recipe",
    "backend",
    "gpus_per_node",
    "tp",
    "pp",
    "cp",
    "vp",
    "ep",
    "etp",
    "fsdp",
    "variant",
    "steps",
    "time_limit_min",
    "overrides",
    "env",
    "source",
    "notes",
    "baseline",
)
REQUIRED_ROW_KEYS = ROW_KEYS[:9]
BASELINE_KEYS = (
    "step_time_s",
    "step_time_spread_s",
    "n_runs",
    "tokens_per_s_per_gpu",
    "tflops_per_gpu",
    "flops_convention",
    "mfu",
    "peak_memory_gib",
    "tolerance",
    "provenance",
    "runs",
    "phases_s",
)
RUN_KEYS = ("step_time_s", "rel_se", "job_id", "date", "container", "digest")
PROVENANCE_KEYS = (
    "source",
    "container",
    "framework_version",
    "date",
    "job_ids",
    "versions",
    "notes",
)

# Value kinds of the fields, checked before any rule: one-line errors, never a TypeError.
_INT = ("num_gpus", "gbs", "mbs", "seq_len", "gpus_per_node", "tp", "pp", "cp", "ep")
_OPT_INT = ("vp", "etp", "steps", "time_limit_min")
_STR = ("id", "task", "model", "gpu", "precision", "backend")
_OPT_STR = ("fp8_recipe", "variant", "source")
# Strings that become names: the row id (file and job names, #SBATCH lines) and its parts.
_NAMES = ("variant", "id", "task", "gpu", "precision", "backend", "fp8_recipe")


def _where(origin: str, rid: object) -> str:
    return f"{origin}: row {rid}"


_bad = charset.bad_field


def _unknown_keys(where: str, data: Mapping[str, Any], valid: tuple[str, ...], what: str) -> None:
    unknown = [k for k in data if k not in valid]
    if not unknown:
        return
    key = unknown[0]
    close = difflib.get_close_matches(str(key)[: limits.MAX_NAME_CHARS], valid, n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    raise ConfigError(
        f"{where}: unknown {what} field {charset.shown(key)}{hint}; valid fields: "
        f"{', '.join(valid)}"
    )


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _check_kinds(where: str, data: Mapping[str, Any]) -> None:
    for name in _INT:
        if name in data and not _is_int(data[name]):
            raise _bad(where, name, "must be an integer", data[name])
    for name in _OPT_INT:
        if data.get(name) is not None and not _is_int(data[name]):
            raise _bad(where, name, "must be an integer or null", data[name])
    for name in _STR:
        if name in data and not (isinstance(data[name], str) and data[name]):
            raise _bad(where, name, "must be a non-empty string", data[name])
    for name in _OPT_STR:
        if data.get(name) is not None and not (isinstance(data[name], str) and data[name]):
            raise _bad(where, name, "must be a non-empty string or null", data[name])
    if "fsdp" in data and not isinstance(data["fsdp"], bool):
        raise _bad(where, "fsdp", "must be true or false", data["fsdp"])
    if "overrides" in data and not isinstance(data["overrides"], dict):
        raise _bad(
            where, "overrides", "must be an object of dotted path -> value", data["overrides"]
        )
    env = data.get("env", {})
    if not isinstance(env, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in env.items()
    ):
        raise _bad(where, "env", "must be an object of NAME -> string", env)
    notes = data.get("notes", [])
    if not isinstance(notes, list) or not all(isinstance(n, str) for n in notes):
        raise _bad(where, "notes", "must be a list of strings", notes)


def _check_chars(where: str, data: Mapping[str, Any]) -> None:
    """Every string of a row: names from a fixed set, free text without control characters."""
    for name in _NAMES:
        if data.get(name) is not None:
            charset.check_name(where, name, data[name])
    if "model" in data:
        charset.check_name(where, "model", data["model"], charset.MODEL)
    if data.get("source") is not None:
        charset.check_text(where, "source", data["source"])
    for i, note in enumerate(data.get("notes", [])):
        charset.check_text(where, f"notes[{i}]", note)
    for key, value in data.get("overrides", {}).items():
        charset.check_name(where, "overrides key", str(key), charset.DOTTED)
        charset.check_tree(where, f"overrides.{key}", value)
    for key, value in data.get("env", {}).items():
        charset.check_name(where, "env", key, charset.ENV_NAME)
        charset.check_text(where, f"env.{key}", value)


def _provenance_from_dict(where: str, data: object) -> Provenance:
    if not isinstance(data, dict):
        raise _bad(where, "baseline.provenance", "must be an object", data)
    _unknown_keys(where, data, PROVENANCE_KEYS, "baseline.provenance")
    source = data.get("source")
    if not isinstance(source, str) or not source.strip():
        raise _bad(where, "baseline.provenance.source", "must be a non-empty string", source)
    for name in ("container", "framework_version", "date", "notes"):
        if data.get(name) is not None and not isinstance(data[name], str):
            raise _bad(where, f"baseline.provenance.{name}", "must be a string or null", data[name])
    job_ids = data.get("job_ids", [])
    if not isinstance(job_ids, list) or not all(isinstance(j, str) for j in job_ids):
        raise _bad(where, "baseline.provenance.job_ids", "must be a list of strings", job_ids)
    versions = data.get("versions", {})
    if not isinstance(versions, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in versions.items()
    ):
        raise _bad(where, "baseline.provenance.versions", "must be an object of strings", versions)
    charset.check_tree(where, "baseline.provenance", data)
    return Provenance(
        source=source,
        container=data.get("container"),
        framework_version=data.get("framework_version"),
        date=data.get("date"),
        job_ids=tuple(job_ids),
        versions=dict(versions),
        notes=data.get("notes"),
    )


def _runs_from_list(where: str, data: object) -> tuple[BaselineRun, ...]:
    if not isinstance(data, list):
        raise _bad(where, "baseline.runs", "must be a list of run objects", data)
    out = []
    for i, item in enumerate(data):
        name = f"baseline.runs[{i}]"
        if not isinstance(item, dict):
            raise _bad(where, name, "must be an object", item)
        _unknown_keys(where, item, RUN_KEYS, name)
        step = item.get("step_time_s")
        if not _is_number(step) or not 0 < step < float("inf"):
            raise _bad(where, f"{name}.step_time_s", "must be seconds > 0", step)
        rel = item.get("rel_se")
        if rel is not None and (not _is_number(rel) or not 0 <= rel < 1):
            raise _bad(where, f"{name}.rel_se", "must be a fraction >= 0 or null", rel)
        for key in RUN_KEYS[2:]:
            if item.get(key) is not None and not isinstance(item[key], str):
                raise _bad(where, f"{name}.{key}", "must be a string or null", item[key])
        out.append(
            BaselineRun(
                step_time_s=float(step),
                rel_se=None if rel is None else float(rel),
                **{k: item.get(k) for k in RUN_KEYS[2:]},
            )
        )
    return tuple(out)


def _phases_from_dict(where: str, data: object) -> dict[str, float]:
    """baseline.phases_s: timer name -> seconds per iteration (> 0)."""
    if not isinstance(data, dict):
        raise _bad(where, "baseline.phases_s", "must be an object of phase: seconds", data)
    for name, value in data.items():
        charset.check_name(where, "baseline.phases_s", name.replace("/", "-"))
        if not _is_number(value) or not 0 < value < float("inf"):
            raise _bad(where, f"baseline.phases_s.{name}", "must be seconds > 0", value)
    return {k: float(v) for k, v in data.items()}


def baseline_from_dict(data: object, where: str = "<baseline>") -> Baseline:
    """Build a Baseline from its JSON object; a one-line error names the field and value."""
    if not isinstance(data, dict):
        raise _bad(where, "baseline", "must be an object or null", data)
    _unknown_keys(where, data, BASELINE_KEYS, "baseline")
    if "step_time_s" not in data:
        raise ConfigError(f"{where}: field 'baseline.step_time_s' is missing")
    if "provenance" not in data:
        raise ConfigError(f"{where}: field 'baseline.provenance' is missing")
    if not _is_number(data["step_time_s"]):
        raise _bad(where, "baseline.step_time_s", "must be a number", data["step_time_s"])
    for name in ("step_time_spread_s", "tokens_per_s_per_gpu", "tflops_per_gpu"):
        value = data.get(name)
        if value is not None and not _is_number(value):
            raise _bad(where, f"baseline.{name}", "must be a number", value)
    for name in ("mfu", "peak_memory_gib", "tolerance"):
        value = data.get(name)
        if value is not None and not _is_number(value):
            raise _bad(where, f"baseline.{name}", "must be a number or null", value)
    if not _is_int(data.get("n_runs", 1)):
        raise _bad(where, "baseline.n_runs", "must be an integer", data.get("n_runs"))
    convention = data.get("flops_convention")
    if convention is not None and not isinstance(convention, str):
        raise _bad(where, "baseline.flops_convention", "must be a string or null", convention)
    if convention is not None:
        charset.check_name(where, "baseline.flops_convention", convention)
    baseline = Baseline(
        step_time_s=float(data["step_time_s"]),
        provenance=_provenance_from_dict(where, data["provenance"]),
        step_time_spread_s=_opt_float(data.get("step_time_spread_s")),
        n_runs=data.get("n_runs", 1),
        tokens_per_s_per_gpu=_opt_float(data.get("tokens_per_s_per_gpu")),
        tflops_per_gpu=_opt_float(data.get("tflops_per_gpu")),
        flops_convention=convention,
        mfu=_opt_float(data.get("mfu")),
        peak_memory_gib=_opt_float(data.get("peak_memory_gib")),
        tolerance=_opt_float(data.get("tolerance")),
        runs=_runs_from_list(where, data.get("runs", [])),
        phases_s=_phases_from_dict(where, data.get("phases_s", {})),
    )
    validate.validate_baseline(baseline, where)
    return baseline


def _opt_float(value: object) -> float | None:
    return None if value is None else float(value)  # type: ignore[arg-type]


def row_from_dict(
    data: object, origin: str = "<row>", *, index: int | None = None, rules: bool = True
) -> Row:
    """Build and validate one row from its JSON object.

    origin names the file (or other source) in error messages; index is the row's position,
    used in messages when the row has no usable id. rules=False checks the structure only
    (names and kinds of fields), not what the values mean together (catalog.validate): the
    workload reads a row the launcher has already checked, or a test's or a site's own row.
    """
    fallback = f"#{index}" if index is not None else "(no id)"
    if not isinstance(data, dict):
        shown = charset.shown(data, 80)
        raise ConfigError(f"{_where(origin, fallback)}: a row must be a JSON object, not {shown}")
    rid = data.get("id")
    # A hostile id must not write itself into every message: it is named by position then.
    rid = rid if isinstance(rid, str) and charset.NAME.fullmatch(rid) else fallback
    where = _where(origin, rid)
    _unknown_keys(where, data, ROW_KEYS, "row")
    missing = [k for k in REQUIRED_ROW_KEYS if k not in data]
    if missing:
        raise ConfigError(f"{where}: field {missing[0]!r} is missing")
    _check_kinds(where, data)
    _check_chars(where, data)
    gpu_name = data["gpu"]
    try:
        default_per_node = hardware.gpu(gpu_name).gpus_per_node
    except ConfigError as e:
        raise ConfigError(f"{where}: field 'gpu': {e}") from None
    baseline = data.get("baseline")
    row = Row(
        id=data["id"],
        task=data["task"],
        model=data["model"],
        gpu=gpu_name,
        precision=data["precision"],
        num_gpus=data["num_gpus"],
        gpus_per_node=data.get("gpus_per_node", default_per_node),
        gbs=data["gbs"],
        mbs=data["mbs"],
        seq_len=data["seq_len"],
        backend=data.get("backend", DEFAULT_BACKEND),
        fp8_recipe=data.get("fp8_recipe"),
        tp=data.get("tp", 1),
        pp=data.get("pp", 1),
        cp=data.get("cp", 1),
        vp=data.get("vp"),
        ep=data.get("ep", 1),
        etp=data.get("etp"),
        fsdp=data.get("fsdp", False),
        overrides=dict(data.get("overrides", {})),
        env=dict(data.get("env", {})),
        variant=data.get("variant"),
        steps=data.get("steps"),
        time_limit_min=data.get("time_limit_min"),
        source=data.get("source"),
        notes=tuple(data.get("notes", [])),
        baseline=None if baseline is None else baseline_from_dict(baseline, where),
    )
    if rules:
        validate.validate_row(row, where)
    return row


def _baseline_to_dict(b: Baseline) -> dict[str, Any]:
    out: dict[str, Any] = {"step_time_s": b.step_time_s}
    defaults = {f.name: f.default for f in fields(Baseline)}
    for name in BASELINE_KEYS[1:-3]:  # up to provenance, runs and phases_s
        value = getattr(b, name)
        if value != defaults[name]:
            out[name] = value
    prov: dict[str, Any] = {"source": b.provenance.source}
    for name in PROVENANCE_KEYS[1:]:
        value = getattr(b.provenance, name)
        if value:
            prov[name] = list(value) if isinstance(value, tuple) else value
    out["provenance"] = prov
    if b.runs:
        out["runs"] = [
            {k: getattr(r, k) for k in RUN_KEYS if getattr(r, k) is not None} for r in b.runs
        ]
    if b.phases_s:
        out["phases_s"] = dict(b.phases_s)
    return out


def row_to_dict(row: Row) -> dict[str, Any]:
    """The row as its JSON object: stable key order, defaults omitted (gpus_per_node too,
    when it is the GPU type's node size)."""
    defaults = {f.name: f.default for f in fields(Row) if f.name not in REQUIRED_ROW_KEYS}
    defaults.update(overrides={}, env={}, notes=())
    defaults["gpus_per_node"] = hardware.gpu(row.gpu).gpus_per_node
    out: dict[str, Any] = {}
    for name in ROW_KEYS:
        value = getattr(row, name)
        if name in REQUIRED_ROW_KEYS:
            out[name] = value
        elif name == "baseline":
            if value is not None:
                out[name] = _baseline_to_dict(value)
        elif value != defaults[name]:
            out[name] = list(value) if isinstance(value, tuple) else value
    return out


def dump_rows(rows: Iterable[Row]) -> str:
    """The text of a baselines file holding these rows (what update_baselines writes)."""
    return json.dumps([row_to_dict(r) for r in rows], indent=2, ensure_ascii=False) + "\n"
