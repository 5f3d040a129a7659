"""The catalog: schema, validation errors, loading, GPU-count specs."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from perfgate import catalog, hardware
from perfgate.catalog import Baseline, Provenance
from perfgate.catalog.provenance import SHIPPED_DIR
from perfgate.errors import ConfigError

REPO = Path(__file__).resolve().parents[2]
BASELINES = SHIPPED_DIR

GOOD = {
    "id": "pretrain-llama3_70b-b200-fp8ds-64gpu-tp2pp4cp2vp5",
    "task": "pretrain",
    "model": "llama3_70b",
    "gpu": "b200",
    "precision": "fp8",
    "fp8_recipe": "delayed",
    "num_gpus": 64,
    "gbs": 128,
    "mbs": 1,
    "seq_len": 8192,
    "tp": 2,
    "pp": 4,
    "cp": 2,
    "vp": 5,
}


def _row(**changes):
    data = copy.deepcopy(GOOD)
    for key, value in changes.items():
        if value is ...:
            data.pop(key)
        else:
            data[key] = value
    return data


def test_good_row_and_derived_sizes():
    row = catalog.row_from_dict(_row(), "b200.json")
    assert (row.dp, row.ga, row.nodes, row.tasks_per_node) == (4, 32, 8, 8)
    assert row.gpus_per_node == 8  # from hardware: DGX B200
    assert row.precision_token == "fp8ds"
    assert row.parallelism == "tp2pp4cp2vp5"
    assert catalog.row_to_dict(row) == {**GOOD, "fp8_recipe": "delayed"}


def test_gb200_nodes_have_four_gpus_and_small_rows_fit_in_one_node():
    gb = catalog.row_from_dict(
        {
            "id": "lora-llama3_70b-gb200-bf16-8gpu-tp1pp4vp20",
            "task": "lora",
            "model": "llama3_70b",
            "gpu": "gb200",
            "precision": "bf16",
            "num_gpus": 8,
            "gbs": 64,
            "mbs": 1,
            "seq_len": 2048,
            "pp": 4,
            "vp": 20,
        },
        "gb200.json",
    )
    assert (gb.gpus_per_node, gb.nodes, gb.tasks_per_node, gb.ga) == (4, 2, 4, 32)
    one = catalog.row_from_dict(
        {
            "id": "lora-llama3_8b-h100-bf16-1gpu-tp1-automodel",
            "task": "lora",
            "model": "llama3_8b",
            "gpu": "h100",
            "precision": "bf16",
            "backend": "automodel",
            "num_gpus": 1,
            "gbs": 32,
            "mbs": 2,
            "seq_len": 4096,
        },
        "h100.json",
    )
    assert (one.nodes, one.tasks_per_node, one.ga) == (1, 1, 16)


BAD = [
    (_row(tpp=2), "unknown row field 'tpp' (did you mean 'tp'?); valid fields: id, task"),
    (_row(seq_len=...), "field 'seq_len' is missing"),
    (_row(tp="2"), "field 'tp': must be an integer, not '2'"),
    (_row(fsdp="yes"), "field 'fsdp': must be true or false, not 'yes'"),
    (_row(num_gpus=True), "field 'num_gpus': must be an integer, not True"),
    (_row(gpu="nogpu"), f"field 'gpu': unknown gpu 'nogpu'; known: {', '.join(hardware.GPUS)}"),
    (_row(model="llama3_7b"), "field 'model': unknown value 'llama3_7b'; known: deepseek_v3"),
    (_row(task="dpo"), "field 'task': unknown value 'dpo'; known: pretrain, sft, lora"),
    (
        _row(backend="vllm"),
        f"field 'backend': unknown value 'vllm'; known: {', '.join(catalog.BACKENDS)}",
    ),
    (_row(fp8_recipe=...), "field 'fp8_recipe': is required for precision 'fp8', not None"),
    (_row(fp8_recipe="tensorwise"), "field 'fp8_recipe': unknown value 'tensorwise'"),
    (
        _row(precision="bf16"),
        "field 'fp8_recipe': must be null for precision 'bf16', not 'delayed'",
    ),
    (
        _row(gpu="h100", precision="mxfp8", fp8_recipe=...),
        "field 'precision': precision 'mxfp8' needs a Blackwell GPU",
    ),
    (_row(vp=1), "field 'vp': must be at least 2 (null means no interleaving), not 1"),
    (_row(pp=1, vp=5, tp=8), "field 'vp': needs pp > 1"),
    (_row(tp=3), "field 'num_gpus': must be a multiple of tp*pp*cp = 3*4*2 = 24, not 64"),
    (_row(gbs=130), "field 'gbs': must be a multiple of dp*mbs = 4*1 = 4"),
    (_row(mbs=3, gbs=128), "field 'gbs': must be a multiple of dp*mbs = 4*3 = 12"),
    (_row(tp=16, pp=4, cp=1, vp=5), "field 'tp': must divide llama3_70b's 8 query groups, not 16"),
    (_row(ep=8), "field 'ep': must be 1: llama3_70b has no experts, not 8"),
    (_row(num_gpus=60), "field 'num_gpus': must be a multiple of tp*pp*cp"),
    (
        _row(num_gpus=12, pp=2, cp=1, gbs=12),
        "field 'num_gpus': must be a multiple of gpus_per_node 8 (or fit in one node), not 12",
    ),
    (_row(id="pretrain-llama3_70b-b200-fp8-64gpu"), "field 'id': must be the canonical id"),
    (_row(env={"HF_TOKEN": "x"}), "field 'env': HF_TOKEN looks like a secret"),
    (_row(env={"NCCL_X": "hf_" + "a" * 30}), "field 'env': NCCL_X looks like a secret"),
    (_row(env={"A": 1}), "field 'env': must be an object of NAME -> string"),
    (_row(notes="x"), "field 'notes': must be a list of strings, not 'x'"),
    (_row(overrides=[]), "field 'overrides': must be an object"),
    (_row(baseline={"step_time_s": 1.0}), "field 'baseline.provenance' is missing"),
    (
        _row(baseline={"step_time_s": -1.0, "provenance": {"source": "x"}}),
        "field 'baseline.step_time_s': must be a positive finite number, not -1.0",
    ),
    (
        _row(
            baseline={
                "step_time_s": 1.0,
                "mfu": 65.8,
                "flops_convention": "nemo2",
                "provenance": {"source": "x"},
            }
        ),
        "field 'baseline.mfu': must be a fraction in (0, 1] (0.6582, not 65.82), not 65.8",
    ),
    (
        _row(baseline={"step_time_s": 1.0, "tolerance": 5, "provenance": {"source": "x"}}),
        "field 'baseline.tolerance': must be a fraction in (0, 1), not 5.0",
    ),
    (
        _row(baseline={"step_time_s": 1.0, "tflops_per_gpu": 500.0, "provenance": {"source": "x"}}),
        "field 'baseline.flops_convention': must name the convention",
    ),
    (
        _row(
            baseline={
                "step_time_s": 1.0,
                "mfu": 0.5,
                "flops_convention": "hf",
                "provenance": {"source": "x"},
            }
        ),
        "field 'baseline.flops_convention': unknown value 'hf'; known: nemo2, nemo2_2509, megatron",
    ),
    (
        _row(baseline={"step_time_s": 1.0, "n_runs": 0, "provenance": {"source": "x"}}),
        "field 'baseline.n_runs': must be at least 1, not 0",
    ),
    (
        _row(baseline={"step_time_s": 1.0, "provenance": {"source": ""}}),
        "field 'baseline.provenance.source': must be a non-empty string",
    ),
    (
        _row(baseline={"step_time_s": 1.0, "provenance": {"source": "x", "sorce": 1}}),
        "unknown baseline.provenance field 'sorce' (did you mean 'source'?)",
    ),
    (
        _row(baseline={"step_time": 1.0, "provenance": {"source": "x"}}),
        "unknown baseline field 'step_time' (did you mean 'step_time_s'?)",
    ),
    (
        # 128 * 8192 / 2.0 / 64 = 8192 tokens/s/GPU, not 9000
        _row(
            baseline={
                "step_time_s": 2.0,
                "tokens_per_s_per_gpu": 9000.0,
                "provenance": {"source": "x"},
            }
        ),
        "field 'baseline.tokens_per_s_per_gpu': disagrees with gbs*seq_len/step_time_s/num_gpus",
    ),
]


@pytest.mark.parametrize(("data", "message"), BAD)
def test_bad_rows_get_one_line_errors_naming_file_row_field_value(data, message):
    with pytest.raises(ConfigError) as e:
        catalog.row_from_dict(data, "baselines/b200.json")
    text = str(e.value)
    assert message in text
    assert text.startswith("baselines/b200.json: row ")
    assert "\n" not in text


def test_moe_rules():
    base = {
        "id": "pretrain-mixtral_8x22b-b200-fp8ds-256gpu-tp2pp4cp8vp14ep8etp1",
        "task": "pretrain",
        "model": "mixtral_8x22b",
        "gpu": "b200",
        "precision": "fp8",
        "fp8_recipe": "delayed",
        "num_gpus": 256,
        "gbs": 64,
        "mbs": 1,
        "seq_len": 65536,
        "tp": 2,
        "pp": 4,
        "cp": 8,
        "vp": 14,
        "ep": 8,
        "etp": 1,
    }
    catalog.row_from_dict(base, "b200.json")
    with pytest.raises(
        ConfigError, match="field 'ep': must divide mixtral_8x22b's 8 experts, not 16"
    ):
        catalog.row_from_dict({**base, "ep": 16, "id": base["id"].replace("ep8", "ep16")}, "f")
    # EP x ETP x PP must divide the world: 8 x 16 x 4 = 512 does not divide 256.
    with pytest.raises(
        ConfigError, match=r"EP x ETP x PP = 8\*16\*4 = 512 must divide num_gpus 256"
    ):
        catalog.row_from_dict({**base, "etp": 16, "id": base["id"].replace("etp1", "etp16")}, "f")
    # ETP defaults to TP: 8 x 2 x 4 = 64 divides 256.
    no_etp = {**base, "id": base["id"].replace("etp1", "")}
    del no_etp["etp"]
    assert catalog.row_from_dict(no_etp, "f").etp is None


def test_long_context_cp_needs_an_even_split():
    data = _row(seq_len=8190)
    with pytest.raises(ConfigError, match=r"field 'seq_len': must be a multiple of 2\*cp = 4"):
        catalog.row_from_dict(data, "f")


@pytest.mark.parametrize("backend", catalog.BACKENDS)
def test_sequence_parallel_needs_a_tp_split_where_the_backend_turns_it_on(backend):
    suffix = "" if backend == catalog.DEFAULT_BACKEND else f"-{backend}"
    data = _row(cp=1, seq_len=8191, id=f"pretrain-llama3_70b-b200-fp8ds-64gpu-tp2pp4vp5{suffix}")
    data["backend"] = backend
    if catalog.BACKEND_TRAITS[backend].sequence_parallel_with_tp:
        with pytest.raises(ConfigError, match=r"must be a multiple of tp = 2 \(sequence parallel"):
            catalog.row_from_dict(data, "f")
    else:
        assert catalog.row_from_dict(data, "f").seq_len == 8191
    assert [b for b, t in catalog.BACKEND_TRAITS.items() if t.sequence_parallel_with_tp] == [
        "nemo2",
        "megatron_bridge",
    ]


def test_round_trip_of_every_catalog_row():
    cat = catalog.load_catalog(BASELINES)
    for row in cat.rows:
        again = catalog.row_from_dict(json.loads(json.dumps(catalog.row_to_dict(row))), "x")
        assert again == row


def test_files_are_in_canonical_form():
    # update_baselines rewrites whole files with dump_rows; keeping them canonical keeps its
    # diffs down to the rows that changed.
    for path in sorted(BASELINES.glob("*.json")):
        assert catalog.dump_rows(catalog.load_file(path)) == path.read_text(), path.name


def test_load_file_errors(tmp_path):
    bad_json = tmp_path / "h100.json"
    bad_json.write_text('[\n  {"id": 1,}\n]\n')
    with pytest.raises(ConfigError, match=r"h100.json: not valid JSON: line 2 column 12"):
        catalog.load_file(bad_json)
    bad_json.write_text('{"rows": []}')
    with pytest.raises(ConfigError, match="must hold a JSON list of rows"):
        catalog.load_file(bad_json)
    bad_json.write_text(json.dumps([_row()]))
    with pytest.raises(ConfigError, match=r"a 'b200' row belongs in b200\.json, not h100\.json"):
        catalog.load_file(bad_json)
    b200 = tmp_path / "b200.json"
    b200.write_text(json.dumps([_row(), _row()]))
    with pytest.raises(ConfigError, match="field 'id': duplicate id in this file"):
        catalog.load_file(b200)
    b200.write_text(json.dumps([_row(), 7]))
    with pytest.raises(ConfigError, match=r"b200.json: row #1: a row must be a JSON object, not 7"):
        catalog.load_file(b200)
    with pytest.raises(ConfigError, match="cannot read baselines file"):
        catalog.load_file(tmp_path / "gb200.json")


def test_load_catalog_errors(tmp_path):
    with pytest.raises(ConfigError, match="baselines folder not found"):
        catalog.load_catalog(tmp_path / "nowhere")
    (tmp_path / "nogpu.json").write_text("[]")
    with pytest.raises(
        ConfigError, match=r"nogpu\.json: not a baselines file name; expected one of"
    ):
        catalog.load_catalog(tmp_path)


def test_catalog_lookups():
    cat = catalog.load_catalog(BASELINES)
    rid = "pretrain-llama3_70b-b200-fp8ds-64gpu-tp2pp4cp2vp5"
    assert cat.file_of(rid) == BASELINES / "b200.json"
    assert cat.get(rid).vp == 5
    with pytest.raises(ConfigError, match="unknown row id 'nope'"):
        cat.file_of("nope")
    gb200 = cat.select(gpu="gb200")
    # 6 seed rows + 19 of the Megatron-Bridge performance summary
    assert len(gb200) == 25 and all(r.gpus_per_node == 4 for r in gb200)
    assert len(cat.select(gpu="gb300")) == 20 and len(cat.select(gpu="b300")) == 8
    assert {r.num_gpus for r in cat.select(gpu="b200", num_gpus="8,32-64")} == {8, 32, 64}
    assert all(r.backend == "automodel" for r in cat.select(backend="automodel"))
    # files in the order of hardware.GPUS
    assert [r.gpu for r in cat.rows] == sorted(
        (r.gpu for r in cat.rows), key=list(hardware.GPUS).index
    )


@pytest.mark.parametrize(
    ("spec", "yes", "no"),
    [
        ("64", [64], [8, 63, 65]),
        ("8,16", [8, 16], [12, 32]),
        ("8-64", [8, 9, 32, 64], [4, 65]),
        ("8,32-64", [8, 32, 48, 64], [16, 128]),
        (" 8 , 16 - 32 ", [8, 16, 32], [12, 64]),
    ],
)
def test_parse_gpu_counts(spec, yes, no):
    counts = catalog.parse_gpu_counts(spec)
    assert all(counts(n) for n in yes)
    assert not any(counts(n) for n in no)


@pytest.mark.parametrize("spec", ["", "abc", "8-", "64-8", "0", "8,,16", "8;16", "-8"])
def test_parse_gpu_counts_errors(spec):
    with pytest.raises(ConfigError, match=f"bad GPU count spec {spec!r}"):
        catalog.parse_gpu_counts(spec)


def test_baseline_numbers_survive_the_round_trip():
    b = Baseline(
        step_time_s=2.67,
        provenance=Provenance(source="seed 001", job_ids=("1", "2"), versions={"nemo": "2.5"}),
        n_runs=2,
        step_time_spread_s=0.01,
        mfu=0.6582,
        flops_convention="llmb",
        tolerance=0.03,
    )
    data = _row()
    row = catalog.row_from_dict(data, "b200.json")
    from dataclasses import replace

    row = replace(row, baseline=b)
    again = catalog.row_from_dict(catalog.row_to_dict(row), "b200.json")
    assert again.baseline == b
