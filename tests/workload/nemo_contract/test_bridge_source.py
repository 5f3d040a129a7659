"""The megatron_bridge backend against the real Megatron-Bridge 0.3.1 source in .venv-nemo.

Megatron-Bridge cannot be imported on this CPU machine (`import megatron.bridge` reaches
peft/lora_layers.py, which imports transformer_engine), so these tests read its source with
`ast`: every recipe function, preset, section and field the backend names must exist there,
and Megatron-Core's own dataclasses (importable) supply the inherited fields. The recorder
callback runs for real against torch.
"""

from __future__ import annotations

import ast
import dataclasses
import importlib.util
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
from contract_rows import as_row

from perfgate.logs import stepfile
from perfgate.logs.stepfile import StepRecord
from perfgate.workload.bridge.plan import (
    PRECISIONS,
    SECTIONS,
    planned_settings,
)
from perfgate.workload.runtime import Recorder

SPEC = importlib.util.find_spec("megatron.core")
BRIDGE = Path(SPEC.origin).parents[1] / "bridge"  # the namespace package's other half
ROW = {
    "id": "pretrain-llama3_8b-b200-bf16-8gpu-bridge",
    "task": "pretrain",
    "model": "llama3_8b",
    "gpu": "b200",
    "precision": "bf16",
    "num_gpus": 8,
    "gbs": 128,
    "mbs": 2,
    "seq_len": 8192,
    "fsdp": True,
    "backend": "megatron_bridge",
}


def tree(rel: str) -> ast.Module:
    return ast.parse((BRIDGE / rel).read_text())


def functions(rel: str) -> dict[str, ast.FunctionDef]:
    return {n.name: n for n in tree(rel).body if isinstance(n, ast.FunctionDef)}


def class_fields(rel: str, name: str) -> set[str]:
    """Annotated fields of a class in a Bridge file, with same-file bases followed."""
    classes = {n.name: n for n in tree(rel).body if isinstance(n, ast.ClassDef)}
    out: set[str] = set()
    todo = [name]
    while todo:
        cls = classes.get(todo.pop())
        if cls is None:
            continue
        out |= {
            s.target.id
            for s in cls.body
            if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)
        }
        todo += [b.id for b in cls.bases if isinstance(b, ast.Name)]
    return out


def mcore_fields(dotted: str) -> set[str]:
    module, _, name = dotted.rpartition(".")
    cls = getattr(importlib.import_module(module), name)
    return {f.name for f in dataclasses.fields(cls)}


def test_bridge_is_installed_and_really_not_importable_here() -> None:
    from importlib import metadata

    assert metadata.version("megatron-bridge") == "0.3.1"
    with pytest.raises(ModuleNotFoundError, match="transformer_engine"):
        importlib.import_module("megatron.bridge")


# Every mapped recipe function: tests/workload/bridge_contract/test_recipe_map.py, against
# the Bridge release that has them (0.6.2, imported).


def test_every_precision_preset_exists() -> None:
    presets = functions("training/mixed_precision.py")
    assert {p for p, _ in PRECISIONS.values()} <= set(presets)


def test_sections_are_configcontainer_fields() -> None:
    # env_vars and validation are new in Bridge 0.6 (tests/workload/bridge_contract builds
    # every row against 0.6.2 itself).
    new_in_06 = {"env_vars", "validation"}
    assert set(SECTIONS) - new_in_06 == class_fields("training/config.py", "ConfigContainer")


FIELDS = {
    "train": lambda: class_fields("training/config.py", "TrainingConfig"),
    "checkpoint": lambda: class_fields("training/config.py", "CheckpointConfig"),
    "logger": lambda: class_fields("training/config.py", "LoggerConfig"),
    "scheduler": lambda: class_fields("training/config.py", "SchedulerConfig"),
    "rerun_state_machine": lambda: class_fields("training/config.py", "RerunStateMachineConfig"),
    "tokenizer": lambda: class_fields("training/tokenizers/config.py", "TokenizerConfig"),
    "dataset": lambda: (
        class_fields("training/config.py", "MockGPTDatasetConfig")
        | mcore_fields("megatron.core.datasets.gpt_dataset.GPTDatasetConfig")
    ),
    "ddp": lambda: (
        class_fields("training/config.py", "DistributedDataParallelConfig")
        | mcore_fields("megatron.core.distributed.DistributedDataParallelConfig")
    ),
    "model": lambda: (
        class_fields("models/gpt_provider.py", "GPTModelProvider")
        | mcore_fields("megatron.core.transformer.TransformerConfig")
    ),
}


def test_every_planned_setting_names_a_real_field() -> None:
    settings = planned_settings(as_row({**ROW, "tp": 2, "vp": 4, "pp": 2}), steps=50)
    missing = [path for path in settings if path.split(".")[1] not in FIELDS[path.split(".")[0]]()]
    assert missing == []


def test_the_mock_dataset_keywords_are_real() -> None:
    # The keywords the backend passes (its source), against MockGPTDatasetConfig's __init__
    # (seq_length: the mock dataset takes no sequence_length) and the dataset fields.
    import perfgate.workload.bridge.config as backend

    call = next(
        n
        for n in ast.walk(ast.parse(Path(backend.__file__).read_text()))
        if isinstance(n, ast.Call) and ast.unparse(n.func) == "MockGPTDatasetConfig"
    )
    used = {k.arg for k in call.keywords}
    init = next(
        f
        for c in tree("training/config.py").body
        if isinstance(c, ast.ClassDef) and c.name == "MockGPTDatasetConfig"
        for f in c.body
        if isinstance(f, ast.FunctionDef) and f.name == "__init__"
    )
    assert [a.arg for a in init.args.args] == ["self", "seq_length"]
    assert "seq_length" in used and "sequence_length" not in used
    assert used - {"seq_length"} <= FIELDS["dataset"]()


def test_pretrain_takes_callbacks_and_finetune_only_adds_a_checkpoint_assert() -> None:
    fn = functions("training/pretrain.py")["pretrain"]
    assert "callbacks" in {a.arg for a in fn.args.args + fn.args.kwonlyargs}
    body = functions("training/finetune.py")["finetune"].body
    assert [type(s).__name__ for s in body] == ["Expr", "Assert", "Return"]  # doc, assert, call
    assert ast.unparse(body[2]) == "return pretrain(config, forward_step_func)"
    text = ast.unparse(tree("training/callbacks.py"))
    for event in ("on_train_start", "on_train_step_start", "on_train_step_end", "on_train_end"):
        assert f"'{event}'" in text


def test_dataset_sequence_length_is_the_field_and_seq_length_its_property() -> None:
    cls = next(
        n
        for n in tree("training/config.py").body
        if isinstance(n, ast.ClassDef) and n.name == "GPTDatasetConfig"
    )
    props = {
        f.name
        for f in cls.body
        if isinstance(f, ast.FunctionDef)
        and any(ast.unparse(d) == "property" for d in f.decorator_list)
    }
    assert "seq_length" in props
    assert "sequence_length" in mcore_fields("megatron.core.datasets.gpt_dataset.GPTDatasetConfig")


def test_the_step_recorder_records_real_steps(tmp_path) -> None:
    from perfgate.workload.bridge.job import StepRecorder

    recorder = Recorder(tmp_path / "steps.json", StepRecord(row_id="r", backend="megatron_bridge"))
    rec = StepRecorder(recorder, gbs=128, seq_len=8192, world_size=8)
    ctx = SimpleNamespace(state=SimpleNamespace(cfg=None), loss_dict={"lm loss": torch.tensor(2.5)})
    rec.on_train_start(ctx)
    x = torch.randn(256, 256)
    for _ in range(3):
        rec.on_train_step_start(ctx)
        for _ in range(20):
            x = torch.tanh(x @ x)  # real work, so every step takes measurable time
        rec.on_train_step_end(ctx)
    rec.on_train_end(ctx)
    out = stepfile.read(tmp_path / "steps.json")
    assert [s["step"] for s in out.steps] == [0, 1, 2]
    assert all(s["step_time_s"] > 0 for s in out.steps)
    first = out.steps[0]
    assert first["tokens_per_s_per_gpu"] == pytest.approx(128 * 8192 / first["step_time_s"] / 8)
    assert first["loss"] == 2.5 and first["mem_peak_gib"] is None  # no CUDA here
    assert out.status == "running" and out.versions["torch"].startswith("2.13")
    assert out.flops_convention is None  # Bridge's flop_utils cannot be imported here
    assert out.peak_memory_gib_per_rank == [0.0]
