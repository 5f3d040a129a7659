"""Shared helpers for the log parser tests: fixture paths, reference CSVs, verbatim lines."""

from __future__ import annotations

import csv
from pathlib import Path

LOGS = Path(__file__).resolve().parents[1] / "data" / "logs"
GIB = 2.0**30

# Verbatim lines from tests/data/reference/log_formats.md (sources cited there).
NEMO2_TIMESTAMPED = (
    "[2025-10-17T11:32:59+08:00] Training epoch 0, iteration 527/999 | lr: 0.0001758 | "
    "global_batch_size: 32 | global_step: 527 | reduced_train_loss: 2.792 | "
    "train_step_timing in s: 2.389 | tokens_per_sec_per_gpu: 6.859e+03 | consumed_samples: 16896 "
    "| val_loss: 3.624"
)
NEMO2_DGXC = (
    "Training epoch 0, iteration 49/49 | lr: 4.491e-06 | global_batch_size: 256 | "
    "global_step: 49 | peak_memory_usage: 72972500992 | memory_allocated: 34466545664 | "
    "reduced_train_loss: 12.81 | train_step_timing in s: 2.693 | consumed_samples: 12800"
)
MEGATRON_2021 = (
    " iteration      200/    5000 | consumed samples:         3200 | elapsed time per iteration "
    "(ms): 1082.6 | learning rate: 8.672E-06 | global batch size:    16 | lm loss: 8.440352E+00 "
    "| loss scale: 262144.0 | grad norm: 3.089 | number of skipped iterations:   0 | "
    "number of nan iterations:   0 |"
)
MEGATRON_DEFAULT7 = (
    "[default7]: [2026-09-08 20:31:37.112485] iteration      561/ 7629408 | consumed samples:"
    "        17952 | elapsed time per iteration (ms): 1510.4 | throughput per GPU (TFLOP/s/GPU): "
    "54.1 | learning rate: 3.000000E-03 | ..."
)
TQDM_70B = (
    "Epoch 0: : 100%|██████████| 100/100 [20:15<00:00, reduced_train_loss=6.370, "
    "global_step=99.00, consumed_samples=12800.0, train_step_timing in s=11.20]"
)
TQDM_GCP = (
    "Epoch 0: :  47%|████▋     | 7/15 [06:19<07:13, reduced_train_loss=11.50, "
    "global_step=5.000, consumed_samples=12288.0, train_step_timing in s=49.50]"
)
TQDM_ANSI_RANK = (
    "\x1b[A\rEpoch 0: :  60%|██████    | 6024/10000 [4:26:54<2:56:09, v_num=0, "
    "reduced_train_loss=0.0252, global_step=6023.0, consumed_samples=96384.0, "
    "train_step_timing in s=2.590, val_loss=0.0917][rank: 1] Monitored metric val_loss did not "
    "improve ..."
)
TQDM_SCI_VALIDATION = (
    "Epoch 0: :   0%|          | 2000/603000 [1:03:17<317:00:58, v_num=, "
    "reduced_train_loss=2.600, global_step=2e+3, consumed_samples=1.28e+6, "
    "train_step_timing in s=1.900, val_loss=2.800]dation DataLoader 0: : 51it [00:20,  2.53it/s]"
)
TQDM_CUSTOMIZER = (
    "Epoch 1: : 1it [00:04,  4.36s/it, v_num=d3c7, reduced_train_loss=0.674, global_step=1.000, "
    "consumed_samples=128.0, train_step_timing in s=3.370, batch_time=4.400, samples/sec=14.60]"
)
NEMO_LOGGER_GLUE = "[NeMo I 2024-06-17 08:36:41 nlp_overrides:480] Removing checkpoint: ..."
TITAN_X8 = (
    "[titan] 2026-02-24 19:46:17,508 - root - INFO - step:  4  loss:  7.62585  grad_norm: "
    "26.6250  memory: 66.91GiB(37.51%)  tps: 10,050  tflops: 314.71  mfu: 13.99%"
)
# A Megatron iteration line whose loss dict names its loss `loss` (a video/action diffusion
# model trained with Megatron; quoted in a public repository's test, found with find_string).
MEGATRON_LOSS_KEY = (
    " [2026-08-03 13:38:19.881514] iteration     3100/   50000 | consumed samples:        99200 "
    "| elapsed time per iteration (ms): 3772.1 | learning rate: 4.998051E-05 | global batch "
    "size:    32 | loss: 2.947306E-01 | video loss: 2.282371E-01 | action loss: 6.649351E-02 | "
    "loss scale: 1.0 | grad norm: 0.601 | number of skipped iterations:   0 | number of nan "
    "iterations:   0 |"
)
BRIDGE_RANK_STEP_TIME = "[Rank 64] Step Time : 257.68s | mem-allocated-gigabytes: 154.02 |"
BRIDGE_OLD_VARIANT = "Step Time : 11.65s GPU utilization: 1158.1TFLOP/s/GPU"
AUTOMODEL_H200 = (
    "2025-12-27 16:05:15 | INFO | root | step 4 | epoch 0 | loss 3.9796 | grad_norm 6.2927 | "
    "lr 7.25e-06 | mem 109.89 GiB | tps 15014.28(1876.79/gpu) | num_label_tokens 524288"
)


def reference_csv(path: Path) -> dict[int, dict[str, str]]:
    """A tests/data/reference CSV (comment lines start with #) keyed by its step column."""
    with path.open() as f:
        rows = csv.DictReader(line for line in f if not line.startswith("#"))
        return {int(r["step"]): r for r in rows}


def fixture_text(name: str) -> str:
    """The text of a fixture log in tests/data/logs."""
    return (LOGS / name).read_text()
