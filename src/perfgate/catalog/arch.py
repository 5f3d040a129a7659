"""The architecture a row trains: its catalog model with the overrides that change its shape.

One truth for every figure that counts a row's FLOPs (perfgate.flops.of_row, the verdicts,
the megatron_core backend's model): where a row's overrides set a ModelArch field through
the path its backend builds the model from, the run trains that architecture, and its FLOPs
are the effective architecture's, not the catalog model's.

    megatron_core     model.<field>          (TransformerConfig / the GPTModel's vocab)
    megatron_bridge   model.<field>          (the ConfigContainer's model provider)
    nemo2             model.config.<field>   (the recipe's GPTConfig)

A leading `recipe.` is dropped, as each of those backends' path rules drops it. Backends not
listed (automodel, command) build their model from files perfgate does not read: their rows
count the catalog model.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from perfgate import models
from perfgate.catalog.rows import Row
from perfgate.errors import ConfigError
from perfgate.models import ModelArch

# ModelArch fields an override may change (the rest describe MoE/MLA/hybrid models).
ARCH_FIELDS = (
    "num_layers",
    "hidden_size",
    "ffn_hidden_size",
    "num_attention_heads",
    "num_query_groups",
    "vocab_size",
    "kv_channels",
)
# backend -> the path prefix under which its overrides name a ModelArch field
ARCH_PREFIX = {"megatron_core": "model.", "megatron_bridge": "model.", "nemo2": "model.config."}


def arch_changes(backend: str, overrides: Mapping[str, Any] | None) -> dict[str, Any]:
    """The ModelArch fields these overrides set on this backend's model, in order."""
    prefix = ARCH_PREFIX.get(backend)
    out: dict[str, Any] = {}
    if prefix is None:
        return out
    for path, value in (overrides or {}).items():
        name = str(path).strip().removeprefix("recipe.").removeprefix(prefix)
        if f"{prefix}{name}" == str(path).strip().removeprefix("recipe.") and name in ARCH_FIELDS:
            out[name] = value
    return out


def effective_arch(row: Row, overrides: Mapping[str, Any] | None = None) -> ModelArch:
    """The row's model with its own overrides, then these (later wins), applied.

    A value that is not a positive integer is a one-line ConfigError naming the path.
    """
    changes = {**arch_changes(row.backend, row.overrides), **arch_changes(row.backend, overrides)}
    for name, value in changes.items():
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            path = f"{ARCH_PREFIX[row.backend]}{name}"
            raise ConfigError(f"override {path!r}: {value!r} is not a positive integer")
    arch = models.get(row.model)
    return dataclasses.replace(arch, **changes) if changes else arch
