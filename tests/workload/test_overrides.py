"""Override paths: parsing, normalization, and the login-node check against the snapshot."""

from __future__ import annotations

import pytest
from rowfactory import as_row

from perfgate.errors import ConfigError
from perfgate.workload.nemo2.snapshot import load, valid_paths
from perfgate.workload.overrides import normalize_path, parse_overrides, parse_value
from perfgate.workload.validate import check_overrides

ROW = {
    "id": "pretrain-llama3_70b-h100-fp8ds-64gpu-tp4pp8vp5",
    "task": "pretrain",
    "model": "llama3_70b",
    "gpu": "h100",
    "precision": "fp8",
    "fp8_recipe": "delayed",
    "num_gpus": 64,
    "gpus_per_node": 8,
    "gbs": 128,
    "mbs": 1,
    "seq_len": 8192,
    "tp": 4,
    "pp": 8,
    "vp": 5,
}


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("true", True),
        ("False", False),
        ("null", None),
        ("3", 3),
        ("1e-4", 1e-4),
        ("p2p", "p2p"),
        ('["a2a", "p2p"]', ["a2a", "p2p"]),
        ("None", None),
    ],
)
def test_values_parse_as_json_else_string(text, value) -> None:
    assert parse_value(text) == value


def test_paths_normalize_recipe_prefix_and_callbacks() -> None:
    assert (
        normalize_path("recipe.model.config.enable_cuda_graph") == "model.config.enable_cuda_graph"
    )
    assert normalize_path("callbacks.NsysCallback.start_step") == (
        "trainer.callbacks.NsysCallback.start_step"
    )
    assert parse_overrides(["trainer.strategy.ddp.overlap_grad_reduce=false"]) == {
        "trainer.strategy.ddp.overlap_grad_reduce": False
    }


@pytest.mark.parametrize(
    ("item", "message"),
    [
        (
            "model.config.enable_cuda_graph",
            "--override 'model.config.enable_cuda_graph': expected PATH=VALUE",
        ),
        ("model..x=1", "override path 'model..x' has an empty segment"),
    ],
)
def test_malformed_overrides_are_one_line_errors(item, message) -> None:
    with pytest.raises(ConfigError) as e:
        parse_overrides([item])
    assert str(e.value).startswith(message)


def test_snapshot_records_the_pinned_nemo_and_real_fields() -> None:
    snap = load()
    assert snap["versions"]["nemo_toolkit"] == "2.7.3"
    paths = valid_paths("llama3_70b", "pretrain", snap)
    assert paths["model.config.enable_cuda_graph"] == "bool"
    assert paths["trainer.strategy.ddp.overlap_grad_reduce"] == "bool"
    assert paths["trainer.callbacks.GarbageCollectionCallback.gc_interval_train"] == "int"
    # llama3_70b on H100 gets NVIDIA's TP-overlap userbuffer config: its GEMMs are paths too.
    assert (
        paths["trainer.callbacks.MegatronCommOverlapCallback.tp_comm_overlap_cfg.proj_fprop.num_sm"]
        == "int"
    )
    assert "model.config.enable_cuda_grap" not in paths


def test_login_node_check_without_nemo_accepts_real_paths() -> None:
    how = check_overrides(
        as_row(ROW),
        {
            "model.config.enable_cuda_graph": "true",
            "trainer.strategy.ddp.bucket_size": 1 << 28,
            "callbacks.NsysCallback.start_step": 5,
        },
        use_nemo=False,
    )
    assert how == "checked against the snapshot of NeMo 2.7.3"


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (
            {"model.config.enable_cuda_grap": True},
            "row 'pretrain-llama3_70b-h100-fp8ds-64gpu-tp4pp8vp5': override "
            "'model.config.enable_cuda_grap': model.config has no field 'enable_cuda_grap' "
            "(did you mean 'enable_cuda_graph'?)",
        ),
        (
            {"trainer.strategy.ddp.overlap_grad_reduc": False},
            "row 'pretrain-llama3_70b-h100-fp8ds-64gpu-tp4pp8vp5': override "
            "'trainer.strategy.ddp.overlap_grad_reduc': trainer.strategy.ddp has no field "
            "'overlap_grad_reduc' (did you mean 'overlap_grad_reduce'?)",
        ),
        (
            {"trainer.strategy.foo.bar": 1},
            "row 'pretrain-llama3_70b-h100-fp8ds-64gpu-tp4pp8vp5': override "
            "'trainer.strategy.foo.bar': trainer.strategy has no field 'foo'",
        ),
    ],
)
def test_login_node_check_without_nemo_rejects_unknown_paths(overrides, message) -> None:
    with pytest.raises(ConfigError) as e:
        check_overrides(as_row(ROW), overrides, use_nemo=False)
    assert str(e.value) == message


def test_row_overrides_are_checked_too_and_user_overrides_win() -> None:
    row = {**ROW, "overrides": {"model.config.recompute_granuality": "full"}}
    with pytest.raises(ConfigError, match="did you mean 'recompute_granularity'"):
        check_overrides(as_row(row), {}, use_nemo=False)


def test_command_backend_takes_no_overrides() -> None:
    row = {"id": "x-command", "backend": "command", "overrides": {"command": ["train.sh"]}}
    assert (
        check_overrides(as_row(row), {}, use_nemo=False) == "no recipe overrides (command backend)"
    )
    with pytest.raises(ConfigError, match="backend 'command' runs a command"):
        check_overrides(as_row(row), {"model.config.num_layers": 2}, use_nemo=False)


def test_unknown_model_is_a_clear_error() -> None:
    with pytest.raises(ConfigError) as e:
        check_overrides(as_row({**ROW, "model": "llama5_1t"}), {}, use_nemo=False)
    assert str(e.value).startswith(
        "field 'model' is 'llama5_1t': the nemo2 backend has no NeMo 2.x recipe mapping"
    )


def test_login_node_check_accepts_removing_a_callback_the_recipe_has() -> None:
    remove = {"trainer.callbacks.MegatronCommOverlapCallback": None}
    assert check_overrides(as_row(ROW), remove, use_nemo=False).startswith("checked against")
    with pytest.raises(ConfigError, match=r"the recipe has no callback 'FooCallback' and perf"):
        check_overrides(as_row(ROW), {"trainer.callbacks.FooCallback": None}, use_nemo=False)


def test_lora_ddp_fields_are_settable_on_the_login_node_too() -> None:
    lora = {**ROW, "task": "lora", "id": "lora-x"}
    how = check_overrides(
        as_row(lora), {"trainer.strategy.ddp.fp8_param_gather": True}, use_nemo=False
    )
    assert how == "checked against the snapshot of NeMo 2.7.3"


def test_cli_overrides_of_every_backend_parse_and_each_backend_checks_its_own() -> None:
    parsed = parse_overrides(
        ["step_scheduler.local_batch_size=8", "train.train_iters=5", "modle.config.x=1"]
    )
    assert parsed == {
        "step_scheduler.local_batch_size": 8,
        "train.train_iters": 5,
        "modle.config.x": 1,
    }
    with pytest.raises(ConfigError) as e:
        check_overrides(as_row(ROW), {"modle.config.x": 1}, use_nemo=False)
    assert str(e.value).startswith(
        "override path 'modle.config.x' must start with one of model, data"
    )
