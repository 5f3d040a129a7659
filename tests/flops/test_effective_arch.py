"""One truth for a row's FLOPs: the architecture it trains, its shape overrides applied (#31).

The megatron_core backend builds the row's model with its model.<field> overrides; every
figure perfgate derives from the step time (results.json's TFLOP/s and MFU, the IMPOSSIBLE
bound) must count that model, not the catalog entry it started from.
"""

from __future__ import annotations

import dataclasses

import pytest
from rowfactory import core_row, make_row

from perfgate import flops, models
from perfgate.catalog.arch import arch_changes, effective_arch
from perfgate.errors import ConfigError
from perfgate.verdicts import physical, single
from perfgate.workload.megatron_core.plan import settings_for

SMALL = {"model.num_layers": 2, "model.hidden_size": 64, "model.ffn_hidden_size": 256}


def shaped(**overrides):
    return core_row(overrides=overrides)


def test_of_row_counts_the_architecture_the_backend_builds():
    row = shaped(**SMALL, device="cpu")
    built = settings_for(row).arch  # what the job's GPTModel is
    assert (built.num_layers, built.hidden_size, built.ffn_hidden_size) == (2, 64, 256)
    assert effective_arch(row) == built
    for conv in ("megatron", "nemo2"):
        t = flops.of_row(row, 0.5, conv)
        per_sample = flops.flops_per_sample(built, 4096, convention=conv, tp=1)
        assert t.tflops_per_gpu == pytest.approx(per_sample * 4 / 0.5 / 1e12, rel=1e-12)
        catalog = flops.flops_per_sample("llama32_1b", 4096, convention=conv, tp=1)
        assert t.tflops_per_gpu < 0.05 * catalog * 4 / 0.5 / 1e12  # 2 of 16 thin layers
    # results.json's figures and the physical bound take the same count
    _, tflops, _, _ = single.throughput(row, 0.5)
    assert tflops["megatron"] == flops.of_row(row, 0.5, "megatron").tflops_per_gpu
    assert physical.mfu_by_convention(row, 0.5)["nemo2"] == flops.of_row(row, 0.5, "nemo2").mfu


def test_a_row_without_shape_overrides_counts_its_catalog_model():
    row = shaped(**{"model.recompute_granularity": "full", "optim.lr": 1e-4})
    assert effective_arch(row) is models.get("llama32_1b")
    plain = flops.throughput("llama32_1b", "h100", "bf16", 1, 4, 4096, 0.5, tp=1)
    assert flops.of_row(row, 0.5, "nemo2") == dataclasses.replace(plain, convention="nemo2")


def test_each_backend_names_the_architecture_by_its_own_path():
    assert arch_changes("nemo2", {"recipe.model.config.num_layers": 4}) == {"num_layers": 4}
    assert arch_changes("nemo2", {"model.num_layers": 4}) == {}  # not NeMo's config path
    assert arch_changes("megatron_core", {"model.config.num_layers": 4}) == {}
    assert arch_changes("megatron_bridge", {"model.num_query_groups": 2}) == {"num_query_groups": 2}
    assert arch_changes("automodel", {"model.num_layers": 4}) == {}
    nemo = make_row(model="llama3_8b", num_gpus=8, gbs=8, mbs=1, tp=1)
    nemo = dataclasses.replace(nemo, overrides={"model.config.num_layers": 8})
    assert flops.of_row(nemo, 1.0, "nemo2").tflops_per_gpu == pytest.approx(
        flops.throughput(effective_arch(nemo), "h100", "bf16", 8, 8, 4096, 1.0).tflops_per_gpu
    )
    assert effective_arch(nemo).num_layers == 8
    # the session's overrides win over the row's
    assert effective_arch(shaped(**SMALL), {"model.num_layers": 3}).num_layers == 3


def test_a_bad_shape_value_is_one_line():
    with pytest.raises(ConfigError, match=r"^override 'model.num_layers': 0 is not a positive"):
        effective_arch(shaped(**{"model.num_layers": 0}))
    assert flops.of_row(shaped(**{"model.num_layers": True}), 0.5, "nemo2") is None
