"""perfgate's map of models to Bridge recipes names functions the installed Bridge has.

Every mapped model, every task its map claims (pretrain; sft and peft where `finetune`): the
module imports, the function exists, and it takes the keyword arguments perfgate passes.
"""

from __future__ import annotations

import importlib
import inspect

import pytest
from rowfactory import as_row

from perfgate.workload.bridge.plan import BRIDGE_MODELS, recipe_call

ROW = {"gpu": "b200", "backend": "megatron_bridge"}  # rowfactory.as_row fills the rest


@pytest.mark.parametrize("model", sorted(BRIDGE_MODELS))
def test_every_mapped_recipe_function_exists(model) -> None:
    tasks = ["pretrain", "sft", "lora"] if BRIDGE_MODELS[model].finetune else ["pretrain"]
    for task in tasks:
        module, fn, kwargs = recipe_call(as_row({**ROW, "model": model, "task": task}))
        found = getattr(importlib.import_module(module), fn, None)
        assert callable(found), f"{module} has no {fn}"
        params = inspect.signature(found).parameters
        takes_any = any(p.kind is p.VAR_KEYWORD for p in params.values())
        assert takes_any or set(kwargs) <= set(params), f"{fn} takes no {set(kwargs) - set(params)}"
