"""The check's overall verdict: PASS only when every check of the chain ran and passed.

A check that is missing from the result (its stage raised, was left out, or could not
import) is a FAIL with the reason its stage recorded; "skipped" is no pass. The A/A and A/B
verdicts are part of it (A/A must not be REGRESSION, A/B must be the verdict B's measured
cost predicts), and so is every negative control (each must have made its check fail).

On CPU some checks can only prove their plumbing: PLUMBING_ON_CPU says which and why. They
must still run; those whose outcome depends on the CPU's load (LOAD_BOUND) do not gate there.
"""

from __future__ import annotations

from typing import Any

CORE = ("product", "timers", "timers.independent", "timers.wall", "log", "results", "flops", "mfu")
CONTROLS = ("timers", "flops", "log")
NEMO2_GPU = (
    "nemo2.product",
    "nemo2.timers",
    "nemo2.wall",
    "nemo2.log",
    "nemo2.flops",
    "nemo2.phases",
    "nemo2.beside",
)
NEMO2_CPU = ("nemo2.boundary", "nemo2.timers", "nemo2.log", "nemo2.flops")
NEMO2_CONTROLS = ("nemo2.log",)
PLUMBING_ON_CPU = {
    "timers": "CLOCK_REALTIME at the same points as perf_counter: the same host, no device",
    "timers.independent": "two loops on a shared CPU: their medians move with the load",
    "timers.wall": "the parent's reads wait for the scheduler on a loaded CPU",
    "mfu": "a CPU's rate against its own GEMM timing, not a GPU's peak",
    "results": "results.json has figures only after a steady state, which a loaded CPU can "
    "deny the product run (its arithmetic: tests/test_gpu_check.py)",
    "aa": "CPU pairs prove their code path (labels, B's overrides, the gate's rule), not noise",
    "ab": "CPU pairs prove their code path (labels, B's overrides, the gate's rule), not noise",
    "nemo2.timers": "NeMo's TimingCallback on a stand-in model of a few ms a step, against "
    "CLOCK_REALTIME: Lightning's own work between batches is most of each period",
    "nemo2.wall": "NeMo's TimingCallback on a stand-in model, against the parent's reads",
}
# On CPU these run but do not gate: their outcome depends on the load, or on the stand-in.
LOAD_BOUND = (
    "results",
    "timers.independent",
    "timers.wall",
    "mfu",
    "aa",
    "ab",
    "nemo2.timers",
    "nemo2.wall",
)
# Everywhere: the megatron_core log line is perfgate's own (no framework prints one); the
# framework-printed line the log check reads is NeMo 2's (nemo2.log).
ROUND_TRIP = {"log": "perfgate's own Megatron-LM line, written and parsed back"}


def required(cpu: bool, nemo2: bool) -> tuple[list[str], list[str]]:
    """(checks, controls) a run of this mode must have run and passed."""
    names = [*CORE, "aa", "ab"] + (["tp2"] if cpu else [])
    controls = list(CONTROLS)
    if nemo2:
        names += list(NEMO2_CPU if cpu else NEMO2_GPU)
        controls += list(NEMO2_CONTROLS)
    return names, controls


def ab_matches(verdict: str | None, expected: str) -> bool:
    """Whether the A/B verdict is the one B's cost predicts (report.expected_ab's words)."""
    if verdict is None:
        return False
    if expected == "REGRESSION":
        return verdict == "REGRESSION"
    if expected.startswith("PASS or INCONCLUSIVE"):
        return verdict in ("PASS", "INCONCLUSIVE")
    return expected.startswith("either")


def pair_checks(pairs: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The A/A and A/B verdicts as checks."""
    aa, ab = pairs.get("aa") or {}, pairs.get("ab") or {}
    expected = pairs.get("expected_ab") or "unknown"
    aa_ok = aa.get("verdict") not in (None, "REGRESSION")
    return {
        "aa": {
            "status": "pass" if aa_ok else "fail",
            "why": None if aa_ok else f"A/A verdict {aa.get('verdict')}: must not be REGRESSION",
        },
        "ab": {
            "status": "pass" if ab_matches(ab.get("verdict"), expected) else "fail",
            "why": f"A/B verdict {ab.get('verdict')}, expected {expected}",
        },
    }


def overall(result: dict[str, Any]) -> tuple[bool, list[str]]:
    """(ok, the reasons it is not): every required check ran and passed, every control caught."""
    cpu = bool(result.get("cpu"))
    names, controls = required(cpu, bool(result.get("nemo2_requested")))
    checks = {**result.get("checks", {}), **pair_checks(result.get("pairs") or {})}
    checks["product"] = {
        "status": "pass" if (result.get("product") or {}).get("ok") else "fail",
        "why": (result.get("product") or {}).get("line", "not run"),
    }
    not_run = result.get("not_run", {})
    failed = []
    for name in names:
        check = checks.get(name)
        if check is None or check.get("status") not in ("pass", "fail"):
            why = not_run.get(name) or (check or {}).get("why") or "did not run"
            failed.append(f"{name}: not run ({why})")
        elif check["status"] == "fail" and not (cpu and name in LOAD_BOUND):
            failed.append(f"{name}: {check.get('why') or 'failed'}")
    for name in controls:
        control = result.get("controls", {}).get(name)
        if control is None:
            failed.append(f"control {name}: not run ({not_run.get('control ' + name, '?')})")
        elif not control.get("caught"):
            failed.append(f"control {name}: its check passed a known fault ({control.get('why')})")
    failed += [f"run {r}" for r in result.get("failed_runs", [])]
    return not failed, failed


def plumbing(result: dict[str, Any]) -> dict[str, str]:
    """The checks this run proves only the plumbing of, with why (CPU mode), and round trips."""
    out = dict(ROUND_TRIP)
    if result.get("cpu"):
        out.update(PLUMBING_ON_CPU)
    return out
