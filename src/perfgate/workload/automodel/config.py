"""The NeMo Automodel benchmark config of a row: base YAML + the row's layout + overrides.

Pure Python (no Automodel, no PyYAML): a login node builds and checks it, the job writes it
as YAML and hands it to Automodel's benchmark recipe. Overrides are dotted paths into the
config (`step_scheduler.local_batch_size=8`); the path must exist in the base, except with a
leading `+` (Hydra's spelling for adding a key). The override `config` names the base.
"""

from __future__ import annotations

import copy
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from perfgate import hardware, models
from perfgate.catalog.rows import Row
from perfgate.errors import ConfigError
from perfgate.workload.automodel.bases import BASES, builtin_base
from perfgate.workload.overrides import merged_overrides, suggest

CONFIG_KEY = "config"  # the override naming the base YAML (Automodel repository path)
SUMMARY_FILE = "automodel_summary.json"  # benchmark.json_output_path, in spec.output_dir


@dataclass(frozen=True)
class AutomodelInputs:
    """What besides the row shapes the config: steps, user overrides, output, base source."""

    steps: int = 50
    overrides: Mapping[str, Any] | None = None
    output_dir: str | None = None
    mock_data: bool = False  # LoRA from random weights (from_config) instead of a checkpoint
    automodel_root: str | None = None  # an Automodel checkout whose YAML is the base


def yaml_path(raw: str) -> str:
    """The backend's path rule: a dotted path into the config (a leading `+` adds the key)."""
    path = str(raw).strip()
    bare = path.lstrip("+")
    if not bare or any(not p for p in bare.split(".")):
        raise ConfigError(f"override path {raw!r} has an empty segment")
    return path


def split_overrides(
    row_overrides: Mapping[str, Any], user_overrides: Mapping[str, Any]
) -> tuple[str | None, dict[str, Any]]:
    """(base YAML path, {dotted path: value}) from the row's then the user's overrides."""
    sources = (row_overrides, user_overrides)
    # `config` names the base, a file: its value is kept as written, not parsed as JSON.
    config = None
    for source in sources:
        for raw, value in source.items():
            if str(raw).strip() == CONFIG_KEY:
                config = str(value)
    rest = [{k: v for k, v in s.items() if str(k).strip() != CONFIG_KEY} for s in sources]
    return config, merged_overrides(rest[0], rest[1], yaml_path)


def load_base(config: str, automodel_root: str | None) -> tuple[dict[str, Any], str]:
    """The base config and where it came from: the checkout's YAML, else perfgate's copy."""
    if automodel_root:
        path = Path(automodel_root) / config
        if path.is_file():
            import yaml  # the container has PyYAML (Automodel needs it)

            try:
                data = yaml.safe_load(path.read_text())
            except (OSError, yaml.YAMLError) as e:
                raise ConfigError(f"{path}: not a readable Automodel YAML ({e})") from None
            if not isinstance(data, dict):
                raise ConfigError(f"{path}: not a YAML mapping")
            return data, str(path)
    base = builtin_base(config)
    if base is None:
        raise ConfigError(
            f"override 'config' is {config!r}: not found under {automodel_root or '(no checkout)'}"
            f" and perfgate has no copy of it; known: {', '.join(sorted(BASES))}"
        )
    return base, f"perfgate's copy of {config}"


def virtual_stages_per_rank(num_layers: int, layers_per_stage: int, pp: int, rounding: str) -> int:
    """Automodel's stages per PP rank for layers_per_stage (calculate_virtual_stages)."""
    stages = math.ceil(num_layers / layers_per_stage)
    if stages % pp:
        stages += pp - stages % pp if rounding == "up" else -(stages % pp)
    return stages // pp


def pipeline_split_for(
    num_layers: int, pp: int, vp: int, rounding: str, preferred: int | None
) -> tuple[int, str]:
    """(layers_per_stage, rounding) giving vp stages per rank: the base YAML's when they do.

    Automodel's formula changed (Oct 2025: ceil(L / lps) + 1 stages; 0.7: ceil(L / lps)), so
    the values a published row ran with may need the other rounding today to give its vp.
    """
    other = "up" if rounding == "down" else "down"
    for how in (rounding, other):
        fits = [
            lps
            for lps in range(1, num_layers + 1)
            if virtual_stages_per_rank(num_layers, lps, pp, how) == vp
        ]
        if preferred in fits:
            return int(preferred), how
        if fits:
            return max(fits), how
    near = sorted(
        {
            virtual_stages_per_rank(num_layers, n, pp, how)
            for n in range(1, num_layers)
            for how in ("down", "up")
        }
        - {0}
    )
    raise ConfigError(
        f"field 'vp' is {vp}: Automodel cannot split {num_layers} layers into {vp} virtual "
        f"stages per rank on PP {pp}; possible: {near}"
    )


def _section(cfg: dict[str, Any], name: str) -> dict[str, Any]:
    node = cfg.setdefault(name, {})
    if not isinstance(node, dict):
        raise ConfigError(f"Automodel config: {name} is {node!r}, not a mapping")
    return node


def apply_row(cfg: dict[str, Any], row: Row, inputs: AutomodelInputs) -> None:
    """Set the row's hardware, batch, sizes, steps and data on the config (in place)."""
    if row.precision != "bf16":
        raise ConfigError(
            f"field 'precision' is {row.precision!r}: the automodel backend runs BF16 "
            "rows (Automodel's FP8 variants are separate YAMLs: name one in 'config')"
        )
    if not row.fsdp:
        raise ConfigError("field 'fsdp' is false: Automodel's benchmark configs run FSDP2")
    tp, pp, cp, ep, vp = row.tp, row.pp, row.cp, row.ep, row.vp
    bench = _section(cfg, "benchmark")
    bench["peak_tflops"] = hardware.peak_tflops(row.gpu, "bf16")
    bench["num_nodes"] = row.nodes
    if inputs.output_dir:
        bench["json_output_path"] = str(Path(inputs.output_dir) / SUMMARY_FILE)
    sched = _section(cfg, "step_scheduler")
    sched["global_batch_size"] = row.gbs
    sched["local_batch_size"] = row.mbs
    sched["max_steps"] = inputs.steps
    for key in ("ckpt_every_steps", "val_every_steps"):  # neither may fall inside the run
        sched[key] = max(int(sched.get(key) or 0), inputs.steps + 1)
    dist = _section(cfg, "distributed")
    dist.update(tp_size=tp, cp_size=cp, pp_size=pp)
    if ep > 1 or "ep_size" in dist:
        dist["ep_size"] = ep
    if dist.get("dp_size") not in (None, "none"):
        dist["dp_size"] = row.dp
    if pp > 1:
        pipe = dist.setdefault("pipeline", {})
        pipe["pp_microbatch_size"] = row.mbs
        layers = models.get(row.model).num_layers
        lps, rounding = pipeline_split_for(
            layers,
            pp,
            int(vp or 2),
            pipe.get("round_virtual_stages_to_pp_multiple") or "down",
            pipe.get("layers_per_stage"),
        )
        pipe.update(layers_per_stage=lps, round_virtual_stages_to_pp_multiple=rounding)
    data = _section(cfg, "dataset")
    data["seq_len"] = row.seq_len
    data["num_samples"] = max(int(data.get("num_samples") or 0), inputs.steps * row.gbs)
    _section(cfg, "checkpoint")["enabled"] = False
    if inputs.mock_data and row.task != "pretrain":
        _random_weights(cfg)


def _random_weights(cfg: dict[str, Any]) -> None:
    """LoRA on randomly initialised weights: from_config instead of a checkpoint."""
    model = _section(cfg, "model")
    target = str(model.get("_target_", ""))
    if target.endswith(".from_pretrained"):
        hf_id = model.pop("pretrained_model_name_or_path")
        model.pop("force_hf", None)
        model["_target_"] = target[: -len("from_pretrained")] + "from_config"
        model["config"] = {
            "_target_": "transformers.AutoConfig.from_pretrained",
            "pretrained_model_name_or_path": hf_id,
        }


def set_dotted(cfg: dict[str, Any], path: str, value: Any) -> None:
    """Set one override; the path must exist unless it starts with '+' (then it is added)."""
    add = path.startswith("+")
    parts = path.lstrip("+").split(".")
    node: Any = cfg
    for i, part in enumerate(parts[:-1]):
        here = ".".join(parts[: i + 1])
        if not isinstance(node, dict) or part not in node:
            if add and isinstance(node, dict):
                node = node.setdefault(part, {})
                continue
            raise _unknown(path, parts[:i], part, node)
        node = node[part]
        if not isinstance(node, dict):
            raise ConfigError(f"override {path!r}: {here} is {node!r}, not a mapping")
    leaf = parts[-1]
    if not isinstance(node, dict):
        raise ConfigError(f"override {path!r}: {'.'.join(parts[:-1])} is not a mapping")
    if leaf not in node and not add:
        raise _unknown(path, parts[:-1], leaf, node)
    node[leaf] = value


def _unknown(path: str, walked: list[str], name: str, node: Any) -> ConfigError:
    where = ".".join(walked) or "the config"
    keys = list(node) if isinstance(node, dict) else []
    return ConfigError(
        f"override {path!r}: {where} has no key {name!r}{suggest(name, keys)} "
        f"(prefix the path with '+' to add a key)"
    )


def build_config(row: Row, inputs: AutomodelInputs | None = None) -> tuple[dict[str, Any], str]:
    """The row's Automodel config and where its base came from; bad input is a ConfigError."""
    inputs = inputs or AutomodelInputs()
    origin = f"row {row.id!r}"
    config, paths = split_overrides(row.overrides, inputs.overrides or {})
    if not config:
        raise ConfigError(
            f"{origin}: an automodel row names its base YAML in overrides['config'] "
            f"(e.g. {next(iter(BASES))!r})"
        )
    try:
        cfg, source = load_base(config, inputs.automodel_root)
        cfg = copy.deepcopy(cfg)
        apply_row(cfg, row, inputs)
        for path, value in paths.items():
            set_dotted(cfg, path, value)
    except ConfigError as e:
        raise ConfigError(f"{origin}: {e}") from None
    return cfg, source


def to_yaml(data: Any, indent: int = 0) -> str:
    """Block-style YAML of plain data; scalars as JSON, which YAML reads back unchanged."""
    pad = " " * indent
    if isinstance(data, dict):
        if not data:
            return pad + "{}\n"
        out = []
        for key, value in data.items():
            head = f"{pad}{json.dumps(str(key))}:"
            if isinstance(value, (dict, list)) and value:
                out.append(head + "\n" + to_yaml(value, indent + 2))
            else:
                out.append(f"{head} {_scalar(value)}\n")
        return "".join(out)
    if isinstance(data, list):
        if not data:
            return pad + "[]\n"
        return "".join(f"{pad}- {_scalar(v)}\n" for v in data)  # lists of scalars only
    return pad + _scalar(data) + "\n"


def _scalar(value: Any) -> str:
    if isinstance(value, (dict, list)):
        return json.dumps(value)  # flow style: empty or nested inside a list
    if isinstance(value, float):
        text = repr(value)
        if "e" in text and "." not in text.split("e")[0]:  # YAML 1.1 wants 1.0e-08
            mantissa, exp = text.split("e")
            text = f"{mantissa}.0e{exp}"
        return text
    return json.dumps(value)
