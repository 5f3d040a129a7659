"""Overrides by dotted path on a recipe: parse, normalize, apply (with NeMo) or check (without).

Paths are the recipe's own attribute paths, as NVIDIA's tuning guide writes them, with the
`recipe.` prefix optional:

    model.config.enable_cuda_graph=true
    trainer.strategy.ddp.overlap_grad_reduce=false
    trainer.plugins.fp8_param_gather=true
    trainer.callbacks.GarbageCollectionCallback.gc_interval_train=50
    trainer.callbacks.MegatronCommOverlapCallback.tp_comm_overlap_cfg.proj_fprop.num_sm=24

A callback is addressed by its class name (`callbacks.X` is short for `trainer.callbacks.X`);
setting a field of a callback the recipe lacks adds it when perfgate knows how (nsys,
memory profile, token drop, ...); `trainer.callbacks.X=null` removes the recipe's X.
Values are JSON (true, 3, 1e-4, "p2p", null, [..]); a
bare word is a string. This module is pure Python: a login node without NeMo checks paths
against the snapshot in nemo2/paths.json, which a contract test proves current.

The rule above is nemo2's; it stays here because the backend-neutral --override parser
normalizes every path nemo2 could take. merged_overrides is every backend's one merge rule:
the row's overrides, then the user's, each path by the backend's own path rule.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from perfgate import charset, limits, secrets
from perfgate.errors import ConfigError

# Callbacks perfgate adds when an override names one the recipe lacks: name -> import path.
_CB = "nemo.lightning.pytorch.callbacks"
ADDABLE_CALLBACKS: dict[str, str] = {
    "NsysCallback": f"{_CB}.nsys.NsysCallback",
    "MemoryProfileCallback": f"{_CB}.memory_profiler.MemoryProfileCallback",
    "GarbageCollectionCallback": f"{_CB}.garbage_collection.GarbageCollectionCallback",
    "MegatronCommOverlapCallback": f"{_CB}.megatron_comm_overlap.MegatronCommOverlapCallback",
    "MegatronTokenDropCallback": f"{_CB}.moe_token_drop.MegatronTokenDropCallback",
    "MegatronEnableExperimentalCallback": (
        f"{_CB}.megatron_enable_experimental_callback.MegatronEnableExperimentalCallback"
    ),
}
TOP_LEVEL = ("model", "data", "trainer", "log", "resume", "optim", "peft", "tokenizer")


def parse_value(text: Any) -> Any:
    """A CLI value as JSON where it parses (true, 3, null, [1,2]); else the string itself."""
    if not isinstance(text, str):
        return text
    stripped = text.strip()
    aliases = {"True": True, "False": False, "None": None}  # Python spellings people type
    if stripped in aliases:
        return aliases[stripped]
    try:
        return json.loads(stripped)
    except ValueError:
        return text


def normalize_path(path: str) -> str:
    """Drop a leading `recipe.` and expand `callbacks.` to `trainer.callbacks.`."""
    if not isinstance(path, str) or not path.strip():
        raise ConfigError(f"override path {path!r} is empty")
    p = path.strip()
    if p.startswith("recipe."):
        p = p[len("recipe.") :]
    if p.startswith("callbacks."):
        p = "trainer." + p
    parts = p.split(".")
    if any(not part for part in parts):
        raise ConfigError(f"override path {path!r} has an empty segment")
    if parts[0] not in TOP_LEVEL:
        raise ConfigError(
            f"override path {path!r} must start with one of {', '.join(TOP_LEVEL)} "
            "(optionally prefixed by 'recipe.') or 'callbacks.'"
        )
    return p


def parse_overrides(items: Iterable[str]) -> dict[str, Any]:
    """`path=value` strings (e.g. from --override) to {path: parsed value}.

    Backend-neutral: a path the nemo2 recipe could take is normalized (`recipe.` dropped,
    `callbacks.` expanded); any other is kept as written for the Automodel YAML or the
    Megatron-Bridge ConfigContainer. Each row's backend checks the paths before submission.
    """
    out: dict[str, Any] = {}
    for item in items:
        path, sep, value = str(item).partition("=")
        if not sep:
            raise ConfigError(f"--override {charset.shown(item)}: expected PATH=VALUE")
        path = path.strip()
        # The rule for rows' values: no control character, bidi override, or endless text.
        charset.check_length("--override", "path", path, limits.MAX_NAME_CHARS, "a path")
        charset.check_text("--override", "path", path)
        charset.check_tree("--override", path, parse_value(value))
        if secrets.secret_name(path.split(".")[-1]) or secrets.redact(value, {}) != value:
            # an override is stored (results.json, the history, spec.json): never a secret
            raise ConfigError(
                f"--override {path}=(not shown): looks like a secret; secrets travel by "
                "environment only (export it in the shell; the workload's library reads it)"
            )
        if not path or any(not part for part in path.lstrip("+").split(".")):
            raise ConfigError(f"override path {path!r} has an empty segment")
        head = path.removeprefix("recipe.").split(".")[0]
        nemo2_like = head in TOP_LEVEL or head == "callbacks"
        out[normalize_path(path) if nemo2_like else path] = parse_value(value)
    return out


def merged_overrides(
    row_overrides: Mapping[str, Any],
    user_overrides: Mapping[str, Any],
    normalize: Callable[[str], str],
) -> dict[str, Any]:
    """The row's overrides, then the user's (later wins): every backend's one merge rule.

    normalize is the backend's path rule (normalize_path for nemo2); it raises a ConfigError
    for a path the backend cannot take. Values are parsed as on the command line.
    """
    out: dict[str, Any] = {}
    for source in (row_overrides, user_overrides):
        for path, value in source.items():
            out[normalize(path)] = parse_value(value)
    return out


def split_common(
    per_key: Mapping[str, Mapping[str, str]],
) -> tuple[dict[str, str], dict[str, dict[str, str]]]:
    """A path snapshot's (paths every key shares, each key's own others), sorted: what
    nemo2's and megatron_bridge's paths.json hold."""
    keys = list(per_key)
    first = per_key[keys[0]] if keys else {}
    common = {p: t for p, t in first.items() if all(per_key[k].get(p) == t for k in keys)}
    own = {
        k: dict(sorted((p, t) for p, t in per_key[k].items() if p not in common))
        for k in sorted(per_key)
    }
    return dict(sorted(common.items())), own


def suggest(name: str, candidates: Iterable[str]) -> str:
    """' (did you mean X?)' for the closest candidate, or ''."""
    close = difflib.get_close_matches(name, list(candidates), n=1, cutoff=0.75)
    return f" (did you mean {close[0]!r}?)" if close else ""


def check_against_snapshot(
    overrides: Mapping[str, Any],
    valid_paths: Mapping[str, str],
    origin: str,
    open_types: tuple[str, ...] = ("NoneType",),
) -> None:
    """Raise a ConfigError for the first path the snapshot does not know (no NeMo needed).

    valid_paths maps each settable path to its value's type name ("Config" for config
    objects, whose fields are listed too); a path below a field whose value's type is one of
    open_types (None: e.g. a tp_comm_overlap_cfg the recipe leaves unset; Bridge adds dict)
    cannot be checked here and is accepted.
    """
    for path, value in overrides.items():
        if path in valid_paths:
            continue
        if _removes_known_callback(path, value, valid_paths):
            continue
        parent = path.rsplit(".", 1)[0]
        if _under_settable_object(parent, valid_paths, open_types):
            continue
        parts = path.split(".")
        if parts[:2] == ["trainer", "callbacks"] and len(parts) >= 3:
            known_cbs = {p.split(".")[2] for p in valid_paths if p.startswith("trainer.callbacks.")}
            if parts[2] not in known_cbs:
                raise ConfigError(
                    f"{origin}: override {path!r}: the recipe has no callback {parts[2]!r} and "
                    f"perfgate does not add it{suggest(parts[2], known_cbs)}; known: "
                    f"{', '.join(sorted(known_cbs))}"
                )
        # Name the deepest known config on the way and its closest field.
        depth = len(parts) - 1
        while depth > 0 and ".".join(parts[:depth]) not in valid_paths:
            depth -= 1
        known = ".".join(parts[:depth])
        prefix = f"{known}." if known else ""
        fields = {p[len(prefix) :].split(".")[0] for p in valid_paths if p.startswith(prefix)}
        hint = suggest(parts[depth], fields)
        where = f"{known} has no field" if known else "no top-level field"
        raise ConfigError(f"{origin}: override {path!r}: {where} {parts[depth]!r}{hint}")


def _removes_known_callback(path: str, value: Any, valid_paths: Mapping[str, str]) -> bool:
    parts = path.split(".")
    removal = len(parts) == 3 and parts[:2] == ["trainer", "callbacks"] and value is None
    return removal and any(p.startswith(path + ".") for p in valid_paths)


def _under_settable_object(
    parent: str, valid_paths: Mapping[str, str], open_types: tuple[str, ...] = ("NoneType",)
) -> bool:
    # A path below a leaf whose value the snapshot records as a config object (e.g.
    # trainer.callbacks.MegatronCommOverlapCallback.tp_comm_overlap_cfg when it is None by
    # default) cannot be checked without NeMo: accept it here, NeMo checks it in the job.
    while parent:
        if valid_paths.get(parent) in open_types:
            return True
        parent = parent.rsplit(".", 1)[0] if "." in parent else ""
    return False
