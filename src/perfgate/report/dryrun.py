"""What --dry-run says: per row the allocation, time limit and GPU-hours (and the A/B plan);
at the end the whole selection's cost, with the sbatch scripts and recipes under -v."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from perfgate.catalog import Row
from perfgate.launch.types import JobPlan
from perfgate.rowrecord import RowRecord
from perfgate.runs import Launches, ab_images, launch_order


def ab_plan_text(launches: Launches, max_pairs: int, time_limit_min: int, gpu_h: float) -> str:
    """The A/B part of a plan in words: images, pairs and their order, growth, time, GPU-hours."""
    pairs = sum(1 for label, _ in launches if label == "candidate")
    base, cand = ab_images(tuple(launches))
    per_run = time_limit_min / (2 * max_pairs)
    return (
        f"A = {base}, B = {cand}: {pairs} pairs in the order {launch_order(tuple(launches))}, "
        f"one more while INCONCLUSIVE up to {max_pairs} pairs; time limit {time_limit_min} min "
        f"= {2 * max_pairs} runs x {per_run:g} min; at most {gpu_h * pairs / max_pairs:.1f} "
        f"GPU-h for {pairs} pairs, {gpu_h:.1f} for {max_pairs}"
    )


def ab_plan_lines(plan: dict[str, Any]) -> str:
    """ab_plan_text of a results.json plan."""
    launches = tuple((x["label"], x["image"]) for x in plan["launches"])
    return ab_plan_text(launches, plan["max_pairs"], plan["time_limit_min"], plan["gpu_hours"])


def row_message(row: Row, plan: JobPlan) -> str:
    """The one line a dry-run row passes with."""
    msg = (
        f"{row.id}: dry run: {plan.nodes} node(s) x {plan.tasks_per_node} GPUs, "
        f"time limit {plan.time_limit_min} min, {plan.gpu_hours:.1f} GPU-hours at most"
    )
    if plan.max_pairs:
        msg += "; A/B " + ab_plan_text(
            plan.launches, plan.max_pairs, plan.time_limit_min, plan.gpu_hours
        )
    return msg


def with_id(row_id: str, message: str) -> str:
    """The message, prefixed with the row id unless it already names the row."""
    return message if row_id in message else f"{row_id}: {message}"


def write_summary(
    tr: Any,
    recs: Sequence[RowRecord],
    verbosity: int,
    confirm: int = 0,
    max_gpu_hours: float | None = None,
) -> None:
    """The dry-run section of the terminal summary (tr: pytest's terminal reporter); confirm:
    the reruns on other nodes each one-run row may need (--confirm), counted as "up to";
    above max_gpu_hours (with those reruns, as the consent counts) it says that a live
    session would ask before submitting."""
    total_h = reruns_h = 0.0
    nodes = 0
    for rec in sorted(recs, key=lambda r: r["row_id"]):
        plan = rec.get("plan")
        if not plan:
            tr.write_line(with_id(rec["row_id"], rec.get("message", "")), red=True)
            continue
        total_h += plan["gpu_hours"]
        nodes += plan["nodes"]
        if len(plan.get("launches") or ()) == 1:
            reruns_h += confirm * plan["gpu_hours"]
        tr.write_line(
            f"{rec['row_id']}: {plan['nodes']} node(s) x {plan['tasks_per_node']} GPUs, "
            f"{plan['time_limit_min']} min, {plan['gpu_hours']:.1f} GPU-h"
        )
        if plan.get("max_pairs"):
            tr.write_line(f"  A/B: {ab_plan_lines(plan)}")
        if verbosity > 0:
            tr.write_line(f"  srun: {plan['srun_command']}")
            tr.write_line("  sbatch script:")
            for line in plan["sbatch_script"].splitlines():
                tr.write_line(f"    {line}")
            if rec.get("description"):
                tr.write_line("  workload:")
                for line in rec["description"].splitlines():
                    tr.write_line(f"    {line}")
    planned = sum(1 for r in recs if r.get("plan"))
    reruns = f" + up to {reruns_h:,.1f} for confirmation reruns" if reruns_h else ""
    above = ""
    if max_gpu_hours is not None and total_h + reruns_h > max_gpu_hours:
        above = (
            f"; above --max-gpu-hours {max_gpu_hours:,g}: a live session asks before "
            "submitting (--yes where nobody can answer)"
        )
    tr.write_line(
        f"dry run: {planned} row(s), {nodes} node allocation(s), "
        f"{total_h:,.1f} GPU-hours at most (time-limit bound){reruns}{above}; -v shows scripts and "
        "recipes"
    )
