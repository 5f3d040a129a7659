"""Edit a NeMo 2 recipe (a fiddle config tree) by dotted path, refusing what its classes
do not take.

fiddle accepts any attribute on a config; these helpers check each name against the
class's real parameters (never its **kwargs) so that a misspelled override is a one-line
ConfigError naming the bad segment and the nearest real name. Callbacks are reached by class
name (`trainer.callbacks.NAME.FIELD`), added from ADDABLE_CALLBACKS or removed (`=null`).
Imports NeMo: call only where it is installed (in the container, in .venv-nemo).
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Mapping
from typing import Any

import fiddle as fdl
import nemo_run as run
from fiddle.signatures import get_signature
from megatron.core.distributed import DistributedDataParallelConfig

from perfgate.errors import ConfigError
from perfgate.workload.overrides import ADDABLE_CALLBACKS, suggest


def params_of(cfg: fdl.Buildable) -> set[str]:
    """Named parameters of the config's class, and the arguments already set on it.

    **kwargs do not count: MegatronStrategy forwards them to torch's DDP, where a misspelled
    knob would be silently dropped or fail late, so overrides may only name real parameters.
    """
    sig = get_signature(fdl.get_callable(cfg))
    named = {
        name
        for name, p in sig.parameters.items()
        if p.kind not in (inspect.Parameter.VAR_KEYWORD, inspect.Parameter.VAR_POSITIONAL)
    }
    return named | set(fdl.ordered_arguments(cfg))


def class_name(cfg: Any) -> str:
    """The name of the class (or function) a config builds; of the object's own class else."""
    fn = fdl.get_callable(cfg) if isinstance(cfg, fdl.Buildable) else type(cfg)
    return getattr(fn, "__name__", type(cfg).__name__)


def set_field(cfg: fdl.Buildable, name: str, value: Any, where: str) -> None:
    """Set a config field, refusing names its class does not take (fiddle would accept them)."""
    params = params_of(cfg)
    if name not in params:
        raise ConfigError(
            f"{where}: {class_name(cfg)} has no field {name!r}{suggest(name, params)}"
        )
    setattr(cfg, name, value)


def import_dotted(dotted: str) -> Any:
    """The object a dotted name names (module.attribute)."""
    module, _, attr = dotted.rpartition(".")
    return getattr(importlib.import_module(module), attr)


def find_callback(recipe: run.Partial, name: str, add: bool = False) -> fdl.Buildable | None:
    """The callback config of that class name in trainer.callbacks (added when asked)."""
    callbacks = recipe.trainer.callbacks
    if callbacks is None:
        recipe.trainer.callbacks = callbacks = []
    for cb in callbacks:
        if class_name(cb) == name:
            return cb
    if not add:
        return None
    if name not in ADDABLE_CALLBACKS:
        present = [class_name(c) for c in callbacks]
        raise ConfigError(
            f"callback {name!r} is not in the recipe ({', '.join(present)}) and perfgate does "
            f"not add it; addable: {', '.join(ADDABLE_CALLBACKS)}"
        )
    cb = run.Config(import_dotted(ADDABLE_CALLBACKS[name]))
    callbacks.append(cb)
    return cb


def megatron_ddp_config() -> fdl.Buildable:
    """The DDP config MegatronStrategy builds from its default ddp="megatron", made explicit.

    Fine-tuning recipes leave the strategy's ddp at the string "megatron", which the strategy
    turns into DistributedDataParallelConfig(check_for_nan_in_grad=True); spelling that out
    lets an override reach a DDP field (seed 000's ddp.fp8_param_gather for mxfp8 LoRA)
    without changing anything else the run does.
    """
    return run.Config(DistributedDataParallelConfig, check_for_nan_in_grad=True)


def remove_callback(recipe: run.Partial, name: str, origin: str = "override") -> None:
    """Drop the recipe's callback of that class name (`trainer.callbacks.NAME=null`)."""
    callbacks = recipe.trainer.callbacks or []
    kept = [cb for cb in callbacks if class_name(cb) != name]
    if len(kept) == len(callbacks):
        present = ", ".join(class_name(c) for c in callbacks)
        raise ConfigError(
            f"{origin} 'trainer.callbacks.{name}': the recipe has no {name} to remove ({present})"
        )
    recipe.trainer.callbacks = kept


def set_path(recipe: run.Partial, path: str, value: Any, origin: str = "override") -> None:
    """Set one normalized dotted path on the recipe; a clear error names the bad segment."""
    parts = path.split(".")
    if len(parts) == 3 and parts[:2] == ["trainer", "callbacks"]:
        if value is not None:
            raise ConfigError(
                f"{origin} {path!r}: a callback can only be removed (=null); set its fields "
                f"by {path}.FIELD=VALUE"
            )
        remove_callback(recipe, parts[2], origin)
        return
    node: Any = recipe
    walked: list[str] = []
    i = 0
    while i < len(parts) - 1:
        seg = parts[i]
        if walked == ["trainer"] and seg == "callbacks":
            node = find_callback(recipe, parts[i + 1], add=True)
            walked += [seg, parts[i + 1]]
            i += 2
            continue
        where = f"{origin} {path!r}"
        if not isinstance(node, fdl.Buildable):
            raise ConfigError(f"{where}: {'.'.join(walked)} is {node!r}, not a config object")
        params = params_of(node)
        if seg not in params:
            raise ConfigError(
                f"{where}: {class_name(node)} has no field {seg!r}{suggest(seg, params)}"
            )
        child = getattr(node, seg)
        if walked == ["trainer", "strategy"] and seg == "ddp" and child == "megatron":
            child = megatron_ddp_config()
            setattr(node, seg, child)
        if not isinstance(child, fdl.Buildable):
            raise ConfigError(
                f"{where}: {'.'.join([*walked, seg])} is {child!r}, not a config object"
            )
        node = child
        walked.append(seg)
        i += 1
    if not isinstance(node, fdl.Buildable):
        raise ConfigError(f"{origin} {path!r}: {'.'.join(walked)} is not a config object")
    set_field(node, parts[-1], value, f"{origin} {path!r}")


def try_set(cfg: fdl.Buildable, name: str, value: Any) -> None:
    """Set where this NeMo/Megatron-Core version has the field (as NVIDIA's scripts do)."""
    if name in params_of(cfg):
        setattr(cfg, name, value)


def apply_overrides(recipe: run.Partial, overrides: Mapping[str, Any]) -> None:
    """Apply normalized overrides in order; the first unknown path is a ConfigError."""
    for path, value in overrides.items():
        set_path(recipe, path, value)
