"""What the check writes: one JSON, a short text summary, and the README's GPU section.

Standard library only: `scripts/gpu-check --fill-readme OUT/gpu-check.json` renders the
README section from a GPU run's JSON on any machine (the GPU machine keeps nothing).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from gpucheck import verdict

BEGIN, END = "<!-- gpu-check: begin -->", "<!-- gpu-check: end -->"
NO_RUN = (
    "No GPU run of `scripts/gpu-check` exists yet: every figure perfgate computes has been "
    "checked on CPU only (the `--cpu` mode in CI), none on a GPU."
)


def pct(x: float | None, digits: int = 2) -> str:
    """A fraction as a signed-free percentage, '?' for None."""
    return "?" if x is None else f"{100 * x:.{digits}f}%"


def verdict_text(v: dict[str, Any]) -> str:
    """'PASS, delta +0.12% [-0.5%, +0.7%]' from a judged pairs dict."""
    if not v.get("verdict"):
        return f"no verdict ({v.get('why') or v.get('reason')})"
    delta, lo, hi = v.get("delta"), v.get("ci_low"), v.get("ci_high")
    if delta is None or lo is None or hi is None:
        return f"{v['verdict']} ({v.get('reason')})"
    return f"{v['verdict']}, delta {100 * delta:+.2f}% [{100 * lo:+.2f}%, {100 * hi:+.2f}%]"


def expected_ab(cost: float | None, tolerance: float) -> str:
    """The verdict a slowdown of `cost` should get at this tolerance (a margin of 30% of it)."""
    if cost is None:
        return "unknown (B's cost was not measured)"
    if cost >= 1.3 * tolerance:
        return "REGRESSION"
    if cost <= 0.7 * tolerance:
        return "PASS or INCONCLUSIVE"
    return "either (B's cost is near the tolerance)"


def tag(check: dict[str, Any], cpu: bool, name: str) -> str:
    """'[pass]', '[fail]', '[pass; plumbing only on CPU]', '[not run]'."""
    state = check.get("status", "not run")
    if check.get("plumbing"):
        state += "; plumbing only" + (" on CPU" if cpu and name in verdict.PLUMBING_ON_CPU else "")
        if cpu and name in verdict.LOAD_BOUND:
            state += ", not gating"
    return f"[{state}]"


def control_line(name: str, c: dict[str, Any]) -> str:
    """One negative control: the fault, and whether its check failed on it."""
    word = "caught" if c.get("caught") else "NOT CAUGHT"
    on = c.get("check_on_fault") or {}
    detail = ""
    if "median_rel_diff" in on:
        detail = f": steady medians differ {pct(on['median_rel_diff'], 1)}"
    elif "rel_diffs" in on:
        detail = f": {pct(max(on['rel_diffs'].values()), 2)} unexplained"
    elif "max_diff_in_half_units" in on:
        detail = f": {on['max_diff_in_half_units']:.2f} half-units off"
    return f"control {name} [{word}]: {c.get('fault') or c.get('why')}{detail}"


def summary(result: dict[str, Any]) -> str:
    """The short text summary (also printed at the end of the run)."""
    env = result.get("environment", {})
    checks = result.get("checks", {})
    lines = [
        f"gpu-check {'--cpu ' if result.get('cpu') else ''}on {env.get('device', '?')} "
        f"(driver {env.get('driver') or '-'}, torch {env.get('torch', '?')}, Megatron-Core "
        f"{env.get('megatron_core', '?')}), {result.get('date', '?')}, "
        f"{result.get('wall_s', 0):.0f} s of a {result.get('budget_s', 0):.0f} s budget",
        f"row {result.get('row_id')}: {(result.get('product') or {}).get('line', 'not run')}",
    ]
    cpu = bool(result.get("cpu"))
    t = checks.get("timers") or {}
    if t.get("runs"):
        lines.append(
            f"timers {tag(t, cpu, 'timers')}: perfgate vs {t.get('second_clock')} at the same "
            f"boundaries, worst of {t.get('runs')} runs: steady medians differ "
            f"{pct(t.get('median_rel_diff'), 3)}, one step at most "
            f"{pct(t.get('max_step_rel_diff'), 3)} (tolerance {pct(t.get('tolerance'), 0)})"
        )
    ti = checks.get("timers.independent") or {}
    if ti.get("perfgate_median_s"):
        lines.append(
            f"timers.independent {tag(ti, cpu, 'timers.independent')}: {ti.get('what')}: "
            f"{ti['perfgate_median_s']:.5g} s vs {ti['other_median_s']:.5g} s "
            f"({pct(ti['median_rel_diff'], 3)})"
        )
    tw = checks.get("timers.wall") or {}
    if tw.get("wall_s"):
        lines.append(
            f"timers.wall {tag(tw, cpu, 'timers.wall')}: the parent's clock of rank 0's lines, "
            f"worst of {tw.get('runs')} runs: steps {tw['window'][0]}-{tw['window'][1]} sum "
            f"{tw['sum_of_steps_s']:.4g} s in steps.json, {tw['wall_s']:.4g} s on the wall "
            f"({pct(tw['rel_diff'], 3)}, tolerance {pct(tw['tolerance'], 2)})"
        )
    g = checks.get("log") or {}
    if g.get("runs"):
        lines.append(
            f"log {tag(g, cpu, 'log')}: rank 0's log parsed back, worst of {g.get('runs')} runs: "
            f"{1000 * (g.get('max_abs_diff_s') or 0):.3f} ms from steps.json (half a printed "
            f"unit: {1000 * (g.get('half_unit_s') or 0):.3f} ms)"
        )
    r = checks.get("results") or {}
    if r:
        lines.append(f"results.json [{r.get('status')}]: {r.get('why') or 'matches steps.json'}")
    f = checks.get("flops") or {}
    if f.get("perfgate_step"):
        lines.append(
            f"FLOPs [{f['status']}]: FlopCounterMode {f['counter_step']:.4g}/step; megatron "
            f"{f['perfgate_step']['megatron']:.4g} (+ half the s^2 attention "
            f"{f['attention_full_step'] / 2:.4g}), nemo2 {f['perfgate_step']['nemo2']:.4g} "
            f"(+ vocab difference {f['nemo2_vocab_difference_step']:.4g})"
            + (
                f", both + the fused attention backward's recomputed scores "
                f"{f['scores_recompute_step']:.4g}"
                if f.get("scores_recompute_step")
                else ""
            )
            + "; worst "
            f"unexplained {pct(max(f['rel_diffs'].values()), 3)} (tolerance 0.5%)"
        )
    t2 = checks.get("tp2") or {}
    if t2:
        lines.append(
            f"TP=2 [{t2.get('status')}]: first loss {t2.get('first_loss_tp2')} on 2 ranks vs "
            f"{t2.get('first_loss_tp1')} on one (tolerance {t2.get('tolerance')})"
            + (f"; {t2['problem']}" if t2.get("problem") else "")
        )
    m = checks.get("mfu") or {}
    if m.get("tflops_per_gpu"):
        lines.append(
            f"MFU {tag(m, cpu, 'mfu')}: {m['tflops_per_gpu']['megatron']:.4g} TFLOP/s/GPU "
            "(megatron) "
            f"= {pct(m['mfu_datasheet']['megatron'], 1)} of the datasheet "
            f"{m['datasheet_peak_tflops']:.0f}, {pct(m['mfu_measured_peak']['megatron'], 1)} of "
            f"the measured bf16 GEMM peak {m['measured_gemm_peak_tflops']:.4g}"
        )
    b = result.get("b") or {}
    if b:
        lines.append(
            f"B = {b.get('what')}: {pct(b.get('extra_flops'), 1)} more FLOPs counted, "
            f"in-process cost {pct(b.get('cost'), 1)}"
        )
    p = result.get("pairs") or {}
    if p:
        lines.append(f"A/A ({p['aa'].get('pairs', 0)} pairs): {verdict_text(p['aa'])}")
        lines.append(
            f"A/B ({p['ab'].get('pairs', 0)} pairs): {verdict_text(p['ab'])}; expected "
            f"{p.get('expected_ab')}"
        )
        n, a = p.get("noise", {}), p.get("assumed", {})
        lines.append(
            f"pair noise: measured SD {pct(n.get('pooled_pair_sd'))} ({n.get('pooled_df')} df); "
            f"gate's pair prior {pct(a.get('gate_pair_prior_sigma'))}, evaluator's CI A/A pairs "
            f"SD {pct(a.get('evaluator_pair_sd'))} (MAD {pct(a.get('evaluator_pair_sigma_mad'))}),"
            f" production prior per pair {pct(a.get('production_prior_pair_sigma'))}"
        )
    lines += nemo2_lines(result)
    for name, c in (result.get("controls") or {}).items():
        lines.append(control_line(name, c))
    if result.get("left_out"):
        lines.append("left out for the budget: " + "; ".join(result["left_out"]))
    plumbing = verdict.plumbing(result)
    if plumbing:
        lines.append(
            "plumbing only: "
            + "; ".join(f"{k} ({v})" for k, v in plumbing.items() if k in checks or k in p)
        )
    ok, failed = verdict.overall(result)
    lines.append("overall: PASS" if ok else f"overall: FAIL ({'; '.join(failed)})")
    return "\n".join(lines) + "\n"


def nemo2_lines(result: dict[str, Any]) -> list[str]:
    """The NeMo 2 stage's checks, one line each."""
    checks, cpu = result.get("checks", {}), bool(result.get("cpu"))
    n = result.get("nemo2") or {}
    lines = []
    if n:
        product = (n.get("product") or {}).get("line") or "callbacks on a stand-in model (CPU)"
        lines.append(f"nemo2 row {n.get('row_id')}: {product}")
    for name in ("nemo2.boundary", *verdict.NEMO2_GPU[1:]):
        c = checks.get(name)
        if c is None:
            continue
        text = c.get("why") if c.get("status") != "pass" and c.get("why") else nemo2_fact(name, c)
        lines.append(f"{name} {tag(c, cpu, name)}: {text}")
    return lines


def readme_section(result: dict[str, Any] | None) -> str:
    """The README's 'Measured on a GPU' figures, between the markers."""
    if result is None:
        return f"{BEGIN}\n{NO_RUN}\n{END}"
    if result.get("cpu"):
        raise ValueError("a --cpu result: the README section records GPU runs only")
    env = result["environment"]
    rows = [
        ("device", env.get("device")),
        ("date", result.get("date")),
        ("driver", env.get("driver")),
        ("torch / Megatron-Core", f"{env.get('torch')} / {env.get('megatron_core')}"),
    ]
    text = summary(result).strip().splitlines()
    table = "\n".join(f"| {k} | {v} |" for k, v in rows)
    body = "\n".join(f"    {line}" for line in text)
    return (
        f"{BEGIN}\nLast GPU run (written by `scripts/gpu-check --fill-readme`):\n\n| | |\n"
        f"|---|---|\n{table}\n\n{body}\n{END}"
    )


def fill_readme(readme: Path, result: dict[str, Any] | None) -> None:
    """Replace the section between the markers in the README."""
    text = readme.read_text()
    pattern = re.compile(re.escape(BEGIN) + r".*?" + re.escape(END), re.S)
    if not pattern.search(text):
        raise ValueError(f"{readme}: no {BEGIN} ... {END} section")
    readme.write_text(pattern.sub(lambda _: readme_section(result), text, count=1))


def write(out: Path, result: dict[str, Any]) -> tuple[Path, Path]:
    """gpu-check.json and gpu-check.txt in the output folder."""
    out.mkdir(parents=True, exist_ok=True)
    path = out / "gpu-check.json"
    path.write_text(json.dumps(result, indent=1, sort_keys=True, default=str) + "\n")
    text = out / "gpu-check.txt"
    text.write_text(summary(result))
    return path, text


def nemo2_fact(name: str, c: dict[str, Any]) -> str:
    """What one NeMo 2 check found, in a few words."""
    if name == "nemo2.boundary":
        return (
            f"NeMo stopped at {c.get('error', '')[:90]!r}, the suite's verdict {c.get('verdict')}"
        )
    if name == "nemo2.timers":
        return (
            f"TimingCallback vs {c.get('second_clock')} from batch start to batch start: medians "
            f"differ {pct(c.get('median_rel_diff'), 3)}; the device clock sees "
            f"{1000 * (c.get('median_gap_s') or 0):.2f} ms more per step"
        )
    if name == "nemo2.wall":
        return f"TimingCallback's steps vs the parent's wall clock: {pct(c.get('rel_diff'), 3)}"
    if name == "nemo2.log":
        return (
            f"NeMo's printed lines vs steps.json: {c.get('max_diff_in_half_units', 0):.2f} of "
            "half a printed unit"
        )
    if name == "nemo2.flops":
        return (
            f"NeMo {c.get('nemo_version')}'s FLOPs callback vs perfgate's {c.get('convention')}: "
            f"{pct(c.get('max_rel_diff'), 4)} at most"
        )
    if name == "nemo2.phases":
        return f"forward-backward + optimizer = {pct(c.get('share_of_step'), 1)} of the step"
    return (
        f"NeMo 2 {c.get('nemo2_step_s', 0):.4g} s/step, megatron_core "
        f"{c.get('megatron_core_step_s', 0):.4g} s/step"
    )
