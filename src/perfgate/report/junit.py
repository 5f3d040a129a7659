"""The key numbers of a row as JUnit XML properties (`--junitxml`), for CI dashboards."""

from __future__ import annotations

from typing import Any

from perfgate.verdicts import Evaluation


def properties(ev: Evaluation) -> list[tuple[str, Any]]:
    """(name, value) pairs of one row: verdict, mode, steady numbers, comparison, A/B, job."""
    props: list[tuple[str, Any]] = [("perfgate.verdict", ev.verdict), ("perfgate.mode", ev.mode)]
    m = ev.measured
    if m is not None:
        conv = ev.convention
        props += [
            ("perfgate.step_time_s", round(m.step_time_s, 6)),
            ("perfgate.step_time_se_s", round(m.se_s, 6)),
            ("perfgate.tokens_per_s_per_gpu", round(m.tokens_per_s_per_gpu, 1)),
            ("perfgate.tflops_per_gpu", round(m.tflops_per_gpu[conv], 1)),
            ("perfgate.mfu", round(m.mfu[conv], 4)),
            ("perfgate.flops_convention", conv),
        ]
    if ev.comparison is not None:
        props += [
            ("perfgate.baseline_step_time_s", ev.comparison.baseline_step_time_s),
            ("perfgate.delta", round(ev.comparison.delta, 5)),
            ("perfgate.tolerance", ev.comparison.tolerance),
        ]
    step = (ev.history or {}).get("step")
    if step is not None:
        first = step.get("first_session") or {}
        props += [
            ("perfgate.history_step", round(step["delta"], 5)),
            ("perfgate.history_step_verdict", step["verdict"]),
            ("perfgate.history_step_since", first.get("started_at") or "this session"),
        ]
    if ev.ab is not None:
        sides = ev.ab["sides"]
        props += [
            ("perfgate.baseline_image", sides["baseline"]["image"]),
            ("perfgate.candidate_image", sides["candidate"]["image"]),
            ("perfgate.pairs", ev.ab.get("pairs_run", 0)),
        ]
        if ev.comparison is not None:
            props.append(("perfgate.resolution", round(ev.comparison.resolution, 5)))
    if ev.result is not None and ev.result.job_id:
        props.append(("perfgate.job_id", ev.result.job_id))
    if ev.cause:
        props.append(("perfgate.cause", ev.cause))
    return props
