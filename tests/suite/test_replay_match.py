"""--replay's matching rule: row ids, NeMo/nemo_run/llmb experiment names, GPU tokens, ambiguity."""

from __future__ import annotations

from pathlib import Path

import pytest
from rowfactory import make_row

from perfgate.logs import stepfile
from perfgate.suite import replay
from perfgate.suite.replay import ReplayIndex, path_matches

N15_64 = make_row()
N15_32 = make_row(num_gpus=32, gbs=128)
N15_FP8 = make_row(precision="fp8", fp8_recipe="delayed")
N15_B200 = make_row(gpu="b200")
N340 = make_row(model="nemotron4_340b", num_gpus=256, gbs=64, mbs=1, tp=8, pp=8)
# seed 004: the GB200 8-GPU and the B200 16-GPU LoRA rows are both "2nodes ... gbs64".
LORA_GB200 = make_row(
    task="lora",
    model="llama3_70b",
    gpu="gb200",
    num_gpus=8,
    gpus_per_node=4,
    gbs=64,
    mbs=1,
    seq_len=2048,
    tp=1,
    pp=4,
    vp=20,
)
LORA_B200 = make_row(
    task="lora", model="llama3_70b", gpu="b200", num_gpus=16, gbs=64, mbs=1, tp=1, pp=4, vp=20
)
LLAMA8B = make_row(model="llama3_8b", gpu="b200", num_gpus=8, gbs=128, mbs=2, seq_len=8192, tp=1)
SFT8B = make_row(
    task="sft",
    model="llama3_8b",
    gpu="b200",
    num_gpus=8,
    gbs=8,
    mbs=1,
    seq_len=16384,
    tp=1,
    precision="fp8",
    fp8_recipe="delayed",
)

LLMB = Path(
    "pretrain_nemotron4_15b_bf16_64/pretrain_nemotron4_15b_bf16_64_1744408121/"
    "pretrain_nemotron4_15b_bf16_64/log-acct.pretrain_nemotron4_15b_bf16_64_2061834_0.out"
)
LLMB_LORA = Path(
    "lora_llama3_70b_bf16_2nodes_tp1_pp4_cp1_vp20_ep1_etpNone_mbs1_gbs64_933609/"
    "x_1/lora_llama3_70b_bf16_2nodes_tp1_pp4_cp1_vp20_ep1_etpNone_mbs1_gbs64_933609/"
    "log-lora.out"
)


@pytest.mark.parametrize(
    ("rel", "row", "expected"),
    [
        (LLMB, N15_64, True),
        (LLMB, N15_32, False),  # JOB_TOTAL_GPUS after the dtype
        (LLMB, N15_FP8, False),
        (LLMB, N340, False),
        (LLMB, N15_B200, True),  # no GPU type in the name: only ambiguity can tell
        (Path("h100") / LLMB, N15_B200, False),  # a GPU folder restricts the match
        (Path("h100") / LLMB, N15_64, True),
        (LLMB_LORA, LORA_GB200, True),  # 2 nodes x 4 GPUs
        (LLMB_LORA, LORA_B200, True),  # 2 nodes x 8 GPUs: same name, another row
        (Path("gb200") / LLMB_LORA, LORA_B200, False),
        # NeMo scripts/performance: vp1 means no interleaving, mbs/gbs after the number
        (
            Path("pretrain_llama3_8b_bf16_1nodes_tp1_pp1_cp1_vp1_2mbs_128gbs/a/log-x.out"),
            LLAMA8B,
            True,
        ),
        (
            Path("pretrain_llama3_8b_bf16_1nodes_tp2_pp1_cp1_vp1_2mbs_128gbs/a/log-x.out"),
            LLAMA8B,
            False,
        ),
        (
            Path("pretrain_llama3_8b_bf16_2nodes_tp1_pp1_cp1_vp1_2mbs_128gbs/a/log-x.out"),
            LLAMA8B,
            False,
        ),
        (Path("finetune_llama3_8b_fp8_1nodes_tp1_pp1_cp1_vp1_1mbs_8gbs/log-a.out"), SFT8B, True),
        (Path("finetune_llama3_8b_fp8_lora_1nodes_tp1_1mbs_8gbs/log-a.out"), SFT8B, False),
        (Path("sft_llama3_8b_fp8cs_1nodes/log-a.out"), SFT8B, False),  # another fp8 recipe
        # perfgate's own folders and files named by row id
        (Path(N15_64.id) / "1234" / "steps.json", N15_64, True),
        (Path(N15_64.id) / "1234" / "steps.json", N15_32, False),
        (Path(f"{N15_64.id}.log"), N15_64, True),
        (Path("misc/train.log"), N15_64, False),
    ],
)
def test_path_matches(rel, row, expected):
    assert path_matches(rel, row) is expected


def _touch(root: Path, rel: str, text: str = "x\n") -> Path:
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text)
    return p


def test_missing_and_ambiguous_rows_are_skipped_with_the_reason(tmp_path):
    _touch(tmp_path, str(LLMB_LORA))
    idx = ReplayIndex(tmp_path, [LORA_GB200, LORA_B200])
    m = idx.match(LORA_GB200)
    assert m.files == () and "ambiguous" in m.skip_reason and LORA_B200.id in m.skip_reason
    # -m gb200 selects one row: the same folder is then unambiguous.
    assert ReplayIndex(tmp_path, [LORA_GB200]).match(LORA_GB200).files == (tmp_path / LLMB_LORA,)
    none = ReplayIndex(tmp_path, [N15_64]).match(N15_64)
    assert none.skip_reason == f"no log under {tmp_path} matches row {N15_64.id}"


def test_two_runs_of_one_row_are_ambiguous(tmp_path):
    _touch(tmp_path, str(LLMB))
    _touch(tmp_path, str(LLMB).replace("1744408121", "1744409999"))
    m = ReplayIndex(tmp_path, [N15_64]).match(N15_64)
    assert (
        m.skip_reason.startswith("ambiguous: 2 runs") and "point --replay at one" in m.skip_reason
    )


def test_file_priority_in_a_run_folder(tmp_path):
    run = f"{N15_64.id}/777"
    _touch(tmp_path, f"{run}/sbatch_x.out")
    log = _touch(tmp_path, f"{run}/log-a_777_0.out")
    log1 = _touch(tmp_path, f"{run}/log-a_777_1.out")
    assert ReplayIndex(tmp_path, [N15_64]).match(N15_64).files == (log, log1)  # chained restarts
    steps = tmp_path / run / "steps.json"
    stepfile.write(steps, stepfile.StepRecord(row_id=N15_64.id, backend="nemo2"))
    assert ReplayIndex(tmp_path, [N15_64]).match(N15_64).files == (steps,)


def test_load_steps_json(tmp_path):
    rec = stepfile.StepRecord(
        row_id=N15_64.id,
        backend="nemo2",
        status="completed",
        image="nemo:25.07",
        versions={"nemo": "2.4.0"},
        nodes=["n1", "n2"],
        steps=[{"step": i, "step_time_s": 2.67} for i in range(3)],
    )
    path = tmp_path / "steps.json"
    stepfile.write(path, rec)
    res = replay.load(N15_64, [path])
    assert res.ok and res.state == "REPLAY" and res.nodes == ("n1", "n2")
    (run,) = res.runs
    assert run.image == "nemo:25.07" and run.versions == {"nemo": "2.4.0"}
    assert run.series.step_times == [2.67, 2.67, 2.67]
    rec.status, rec.error = "failed", "RuntimeError: boom"
    stepfile.write(path, rec)
    failed = replay.load(N15_64, [path])
    assert (
        failed.diagnosis.cause == "WORKLOAD_EXCEPTION"
        and failed.diagnosis.message == "RuntimeError: boom"
    )
