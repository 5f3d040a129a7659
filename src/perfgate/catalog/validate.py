"""What a row's values must mean together; each failure is one line naming row, field, value.

Only what is certainly invalid is rejected. Layer counts against pp x vp are not checked:
NeMo places the embedding and the loss in the pipeline split (Llama 3.1 405B runs 126 layers on
pp8 vp8) and Megatron-Core layouts may leave a stage empty, so no row-level rule is certain.
"""

from __future__ import annotations

import math

from perfgate import charset, hardware, limits, models, secrets
from perfgate.catalog import rows
from perfgate.catalog.rows import Baseline, Row
from perfgate.errors import ConfigError

# Allowed relative mismatch between a stored figure and the one its step time implies: the
# published numbers round their step times to 3-4 significant digits.
_CONSISTENCY = 0.02


_bad = charset.bad_field


def _choice(where: str, name: str, value: str, known: tuple[str, ...] | list[str]) -> None:
    if value not in known:
        raise ConfigError(
            f"{where}: field {name!r}: unknown value {value!r}; known: {', '.join(known)}"
        )


def validate_row(row: Row, where: str) -> None:
    """Raise ConfigError for the first rule the row breaks."""
    _choice(where, "task", row.task, rows.TASKS)
    _choice(where, "backend", row.backend, rows.BACKENDS)
    _choice(where, "precision", row.precision, rows.PRECISIONS)
    _choice(where, "gpu", row.gpu, rows.GPUS)
    _choice(where, "model", row.model, sorted(models.MODELS))
    arch = models.get(row.model)
    spec = hardware.gpu(row.gpu)
    _check_precision(row, where, spec)
    _check_sizes(row, where)
    _check_layout(row, where, arch)
    _check_moe(row, where, arch)
    _check_nodes(row, where, spec)
    _check_env(row, where)
    expected = rows.canonical_id(row)
    if row.id != expected:
        raise _bad(where, "id", f"must be the canonical id {expected!r}", row.id)
    if row.baseline is not None:
        validate_baseline(row.baseline, where)
        _check_consistency(row, where)


def _check_precision(row: Row, where: str, spec: hardware.GpuSpec) -> None:
    if row.precision == "fp8":
        if row.fp8_recipe is None:
            raise _bad(where, "fp8_recipe", "is required for precision 'fp8'", row.fp8_recipe)
        _choice(where, "fp8_recipe", row.fp8_recipe, rows.FP8_RECIPES)
    elif row.fp8_recipe is not None:
        raise _bad(
            where, "fp8_recipe", f"must be null for precision {row.precision!r}", row.fp8_recipe
        )
    try:
        spec.peak(row.precision)
    except ConfigError as e:
        raise ConfigError(f"{where}: field 'precision': {e}") from None


# The largest value each count may take (perfgate.limits says why in the error).
_BOUNDS = {
    "num_gpus": limits.GPUS,
    "gpus_per_node": limits.GPUS_PER_NODE,
    "gbs": limits.BATCH,
    "mbs": limits.BATCH,
    "seq_len": limits.SEQ_LEN,
    "tp": limits.GPUS,
    "pp": limits.GPUS,
    "cp": limits.GPUS,
    "ep": limits.GPUS,
    "etp": limits.GPUS,
    "vp": limits.VP,
    "steps": limits.STEPS,
    "time_limit_min": limits.TIME_LIMIT_MIN,
}


def _check_sizes(row: Row, where: str) -> None:
    for name in ("num_gpus", "gpus_per_node", "gbs", "mbs", "seq_len", "tp", "pp", "cp", "ep"):
        value = getattr(row, name)
        if value < 1:
            raise _bad(where, name, "must be at least 1", value)
    for name in ("etp", "steps", "time_limit_min"):
        value = getattr(row, name)
        if value is not None and value < 1:
            raise _bad(where, name, "must be at least 1 or null", value)
    for name, bound in _BOUNDS.items():
        value = getattr(row, name)
        if value is not None and value > bound.value:
            raise _bad(where, name, f"must be at most {bound.value:,} ({bound.why})", value)
    if row.vp is not None:
        if row.vp < 2:
            raise _bad(where, "vp", "must be at least 2 (null means no interleaving)", row.vp)
        if row.pp < 2:
            raise _bad(where, "vp", "needs pp > 1 (interleaving splits pipeline stages)", row.vp)


def _check_layout(row: Row, where: str, arch: models.ModelArch) -> None:
    model_parallel = row.tp * row.pp * row.cp
    if row.num_gpus % model_parallel:
        raise _bad(
            where,
            "num_gpus",
            f"must be a multiple of tp*pp*cp = {row.tp}*{row.pp}*{row.cp} = {model_parallel}",
            row.num_gpus,
        )
    per_step = row.dp * row.mbs
    if row.gbs % per_step:
        raise _bad(
            where,
            "gbs",
            f"must be a multiple of dp*mbs = {row.dp}*{row.mbs} = {per_step} "
            "(gradient accumulation must be a whole number)",
            row.gbs,
        )
    if arch.num_attention_heads % row.tp:
        raise _bad(
            where,
            "tp",
            f"must divide {row.model}'s {arch.num_attention_heads} attention heads",
            row.tp,
        )
    if not arch.is_mla and arch.num_query_groups % row.tp:
        raise _bad(
            where, "tp", f"must divide {row.model}'s {arch.num_query_groups} query groups", row.tp
        )
    if row.cp > 1 and row.seq_len % (2 * row.cp):
        raise _bad(
            where, "seq_len", f"must be a multiple of 2*cp = {2 * row.cp} (causal CP)", row.seq_len
        )
    sequence_parallel = rows.BACKEND_TRAITS[row.backend].sequence_parallel_with_tp
    if row.tp > 1 and sequence_parallel and row.seq_len % row.tp:
        raise _bad(
            where,
            "seq_len",
            f"must be a multiple of tp = {row.tp} (sequence parallel)",
            row.seq_len,
        )


def _check_moe(row: Row, where: str, arch: models.ModelArch) -> None:
    if not arch.is_moe:
        if row.ep != 1:
            raise _bad(where, "ep", f"must be 1: {row.model} has no experts", row.ep)
        if row.etp is not None:
            raise _bad(where, "etp", f"must be null: {row.model} has no experts", row.etp)
        return
    experts = arch.num_experts or 0
    if experts % row.ep:
        raise _bad(where, "ep", f"must divide {row.model}'s {experts} experts", row.ep)
    # Megatron-Core folds experts over the world: EP x ETP x PP must divide it (ETP defaults to TP).
    etp = row.etp if row.etp is not None else row.tp
    expert_grid = row.ep * etp * row.pp
    if row.num_gpus % expert_grid:
        raise _bad(
            where,
            "ep",
            f"EP x ETP x PP = {row.ep}*{etp}*{row.pp} = {expert_grid} must divide num_gpus "
            f"{row.num_gpus}",
            row.ep,
        )


def _check_nodes(row: Row, where: str, spec: hardware.GpuSpec) -> None:
    if row.num_gpus >= row.gpus_per_node and row.num_gpus % row.gpus_per_node:
        raise _bad(
            where,
            "num_gpus",
            f"must be a multiple of gpus_per_node {row.gpus_per_node} (or fit in one node)",
            row.num_gpus,
        )


def _check_env(row: Row, where: str) -> None:
    for name, value in row.env.items():
        charset.check_name(where, "env", name, charset.ENV_NAME)
        charset.check_text(where, f"env.{name}", value, secret=secrets.is_secret(name))
        if secrets.is_secret(name) or secrets.redact(value, environ={}) != value:
            raise ConfigError(
                f"{where}: field 'env': {name} looks like a secret; secrets travel by the "
                "job's environment only, never in the catalog"
            )
    for path in row.overrides:
        if not isinstance(path, str) or not path.strip():
            raise _bad(where, "overrides", "keys must be non-empty dotted paths", path)


def validate_baseline(b: Baseline, where: str) -> None:
    """Raise ConfigError when a baseline number is out of range."""
    positive = {
        "step_time_s": b.step_time_s,
        "step_time_spread_s": b.step_time_spread_s,
        "tokens_per_s_per_gpu": b.tokens_per_s_per_gpu,
        "tflops_per_gpu": b.tflops_per_gpu,
        "peak_memory_gib": b.peak_memory_gib,
    }
    for name, value in positive.items():
        if value is None:
            continue
        if not math.isfinite(value) or value < 0 or (value == 0 and name != "step_time_spread_s"):
            raise _bad(where, f"baseline.{name}", "must be a positive finite number", value)
    if b.n_runs < 1:
        raise _bad(where, "baseline.n_runs", "must be at least 1", b.n_runs)
    if b.n_runs > limits.RUNS.value:
        raise _bad(
            where,
            "baseline.n_runs",
            f"must be at most {limits.RUNS.value:,} (launches of one row)",
            b.n_runs,
        )
    top = limits.STEP_TIME_S
    for name, value in (
        ("step_time_s", b.step_time_s),
        ("step_time_spread_s", b.step_time_spread_s),
    ):
        if value is not None and value > top.value:
            raise _bad(
                where, f"baseline.{name}", f"must be at most {top.value:,} s ({top.why})", value
            )
    if b.runs and len(b.runs) != b.n_runs:
        raise _bad(where, "baseline.n_runs", f"must equal the {len(b.runs)} stored runs", b.n_runs)
    if b.mfu is not None and not (0 < b.mfu <= 1):
        raise _bad(where, "baseline.mfu", "must be a fraction in (0, 1] (0.6582, not 65.82)", b.mfu)
    if b.tolerance is not None and not (0 < b.tolerance < 1):
        raise _bad(where, "baseline.tolerance", "must be a fraction in (0, 1)", b.tolerance)
    if b.flops_convention is not None:
        _choice(where, "baseline.flops_convention", b.flops_convention, rows.FLOPS_CONVENTIONS)
    elif b.tflops_per_gpu is not None or b.mfu is not None:
        raise _bad(
            where,
            "baseline.flops_convention",
            "must name the convention of tflops_per_gpu/mfu (one of "
            + ", ".join(rows.FLOPS_CONVENTIONS)
            + ")",
            None,
        )


def _check_consistency(row: Row, where: str) -> None:
    b = row.baseline
    assert b is not None
    implied = row.gbs * row.seq_len / b.step_time_s / row.num_gpus
    if (
        b.tokens_per_s_per_gpu is not None
        and abs(b.tokens_per_s_per_gpu / implied - 1) > _CONSISTENCY
    ):
        raise _bad(
            where,
            "baseline.tokens_per_s_per_gpu",
            f"disagrees with gbs*seq_len/step_time_s/num_gpus = {implied:.6g}",
            b.tokens_per_s_per_gpu,
        )
    if b.mfu is not None and b.tflops_per_gpu is not None:
        peak = hardware.peak_tflops(row.gpu, row.precision)
        if abs(b.mfu * peak / b.tflops_per_gpu - 1) > _CONSISTENCY:
            raise _bad(
                where,
                "baseline.mfu",
                f"disagrees with tflops_per_gpu / peak = {b.tflops_per_gpu / peak:.4f}",
                b.mfu,
            )
