"""`perfgate flops` and `perfgate mfu`: a model's FLOPs, and the MFU of a step time
(perfgate.flops, perfgate.hardware). One module: the two verbs take the same model options."""

from __future__ import annotations

import argparse

from perfgate import flops, limits
from perfgate.catalog import FLOPS_CONVENTIONS, TASKS
from perfgate.cli.common import emit


def add(sub: argparse._SubParsersAction) -> None:
    """Register `perfgate flops` and `perfgate mfu`."""

    def common(p: argparse.ArgumentParser) -> None:
        p.add_argument("--model", required=True, help="catalog model name, e.g. llama3_8b")
        p.add_argument("--seq-len", type=int, required=True, help="tokens per sample")
        p.add_argument("--task", choices=TASKS, default="pretrain", help="default: pretrain")
        p.add_argument(
            "--convention",
            choices=FLOPS_CONVENTIONS,
            default=None,
            help="how FLOPs are counted: nemo2 (as NeMo 2.x logs them), megatron (causal, as "
            "Megatron-Bridge and NeMo >= 25.09 log them), llmb, automodel (as those publish). "
            "Default: llmb where NVIDIA's llmb recipes publish a formula for the model family "
            "(Nemotron4, Llama), else nemo2; the output names the one used",
        )
        p.add_argument(
            "--tp", type=int, default=1, help="TP size (megatron pads the vocab by it; default 1)"
        )
        p.add_argument("--json", action="store_true", help="print JSON")

    p = sub.add_parser("flops", help="model FLOPs per sample and per token")
    common(p)
    p.set_defaults(func=run_flops)

    p = sub.add_parser("mfu", help="tokens/s, TFLOP/s per GPU and MFU of a step time")
    common(p)
    p.add_argument("--gpu", required=True, help="h100, h200, b200, b300, gb200 or gb300")
    p.add_argument("--precision", required=True, help="bf16, fp8, mxfp8 or nvfp4")
    p.add_argument("--num-gpus", type=int, required=True, help="GPUs of the job")
    p.add_argument("--gbs", type=int, required=True, help="global batch size (samples per step)")
    p.add_argument("--step-time", type=float, required=True, help="seconds per step")
    p.set_defaults(func=run_mfu)


def run_flops(args: argparse.Namespace) -> int:
    """`perfgate flops`: FLOPs per sample and per token under the convention used."""
    limits.check_options(args, limits.RUN_SHAPE)
    args.convention = args.convention or flops.default_convention(args.model)
    per_sample = flops.flops_per_sample(
        args.model, args.seq_len, args.task, args.convention, tp=args.tp
    )
    data = {
        "model": args.model,
        "task": args.task,
        "seq_len": args.seq_len,
        "convention": args.convention,
        "flops_per_sample": per_sample,
        "flops_per_token": per_sample / args.seq_len,
    }
    emit(data, args.json)
    return 0


def run_mfu(args: argparse.Namespace) -> int:
    """`perfgate mfu`: tokens/s, TFLOP/s per GPU and MFU of one step time."""
    limits.check_options(args, limits.RUN_SHAPE)
    args.convention = args.convention or flops.default_convention(args.model)
    out = flops.throughput(
        args.model,
        args.gpu,
        args.precision,
        args.num_gpus,
        args.gbs,
        args.seq_len,
        args.step_time,
        args.task,
        args.convention,
        tp=args.tp,
    )
    data = {
        "tokens_per_s": out.tokens_per_s,
        "tokens_per_s_per_gpu": out.tokens_per_s_per_gpu,
        "tflops_per_gpu": out.tflops_per_gpu,
        "mfu": out.mfu,
        "convention": out.convention,
        "peak_tflops": out.peak_tflops,
    }
    emit(data, args.json)
    return 0
