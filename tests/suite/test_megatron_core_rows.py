"""The megatron_core rows through the suite: selection, --dry-run text, their own override check."""

from __future__ import annotations

pytest_plugins = ["pytester"]

ROWS = {f"pretrain-llama32_1b-{gpu}-bf16-1gpu-tp1-megatron_core" for gpu in ("h100", "h200")}
RECOMPUTE = ("model.recompute_granularity=full", "model.recompute_method=block")


def test_dry_run_describes_the_megatron_core_model_and_checks_its_overrides(suite):
    suite.shipped_rows()
    overrides = [
        arg for o in (*RECOMPUTE, "model.recompute_num_layers=5") for arg in ("--override", o)
    ]
    result = suite.run("--dry-run", "-m", "megatron_core", *overrides)
    assert result.ret == 0
    rows = suite.results()["rows"]
    assert set(rows) == ROWS
    for rid, rec in rows.items():
        text = rec["description"]
        assert text.startswith(f"workload {rid} (backend megatron_core)\n")
        assert "layout: tp 1 pp 1 dp 1; mbs 1 x 4 micro-batches = gbs 4 of seq 4096 on cuda" in text
        assert '"recompute_num_layers": 5' in text  # the --override reached the config
        assert "overrides: checked the layout and override sections" in text
        assert rec["plan"]["workload_spec"]["row"]["backend"] == "megatron_core"
        assert rec["plan"]["gpu_hours"] == 0.5


def test_a_nemo_recipe_path_is_refused_for_megatron_core_rows(suite):
    suite.shipped_rows()
    result = suite.run("--dry-run", "-m", "megatron_core", "--override", "trainer.max_steps=3")
    assert result.ret == 4
    error = "\n".join(result.errlines)
    assert "megatron_core" in error and "megatron_core paths are model.<field>" in error
