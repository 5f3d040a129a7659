"""The megatron_bridge backend on a login node, without Megatron-Bridge: check and describe.

What can be known without Bridge is checked here: the model's recipe mapping, the precision,
the task, and each override's whole path against the snapshot of the pinned Bridge's
ConfigContainer for the row's task and model (bridge/snapshot.py, proven current by the
contract suite); the job sets them on the real objects again. The dry run names the recipe
the job would start from and lists the settings perfgate puts on it.
"""

from __future__ import annotations

from perfgate.catalog.rows import Row
from perfgate.errors import ConfigError
from perfgate.workload.backend import Backend, Overrides
from perfgate.workload.bridge import snapshot
from perfgate.workload.bridge.perf import derived_settings, fallback_settings
from perfgate.workload.bridge.plan import (
    bridge_task,
    perf_recipe_name,
    planned_settings,
    precision_preset,
    recipe_call,
    section_path,
)
from perfgate.workload.env import nvidia_defaults
from perfgate.workload.overrides import merged_overrides


def check_overrides(
    row: Row, overrides: Overrides, mock_data: bool = False, use_framework: bool | None = None
) -> str:
    """Check what a login node can: model mapping, precision, task, override paths."""
    origin = f"row {row.id!r}"
    try:
        recipe_call(row)
        precision_preset(row)
        merged = merged_overrides(row.overrides, overrides, section_path)
    except ConfigError as e:
        raise ConfigError(f"{origin}: {e}") from None
    return "checked the recipe mapping; override paths " + snapshot.check(merged, row, origin)


def env_defaults(row: Row, overrides: Overrides) -> dict[str, str]:
    """NVIDIA's performance environment for the row where Bridge's recipe names none (< 0.6)."""
    # No override changes it: the ones nvidia_defaults reads are nemo2 recipe paths.
    return nvidia_defaults(row, {})


def describe(row: Row, steps: int, overrides: Overrides, use_framework: bool | None = None) -> str:
    """What --dry-run shows for a megatron_bridge row (no Bridge needed)."""
    module, fn, kwargs = recipe_call(row)
    preset = precision_preset(row)[0]
    args = ", ".join(f"{k}={v!r}" for k, v in kwargs.items())
    extra = ", ".join(f"{k}={v!r}" for k, v in fallback_settings(row).items())
    lines = [
        "Megatron-Bridge ConfigContainer: NVIDIA's performance recipe "
        f"megatron.bridge.perf_recipes...{perf_recipe_name(row)}() where the installed Bridge "
        "has it (else its recipe for another GPU count of this model, task, GPU and precision, "
        f"scaled to the row), else {module}.{fn}({args}) with mixed_precision={preset}() and "
        f"scripts/performance's {extra}; then:",
    ]
    settings = planned_settings(row, steps)
    settings.update(merged_overrides(row.overrides, overrides, section_path))
    settings.update(derived_settings(settings))
    lines += [f"  {k} = {v!r}" for k, v in settings.items()]
    if bridge_task(row) == "peft" and not settings.get("checkpoint.pretrained_checkpoint"):
        # Not a login-node error: a session may select LoRA rows it only dry-runs.
        lines.append(
            "  (LoRA: the job stops unless --override checkpoint.pretrained_checkpoint=PATH "
            "names the base model's checkpoint)"
        )
    return "\n".join(lines) + "\n"


BACKEND = Backend(
    name="megatron_bridge",
    job="perfgate.workload.bridge.job",
    check_overrides=check_overrides,
    describe=describe,
    env_defaults=env_defaults,
)
