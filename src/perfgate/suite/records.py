"""What results.json says: the session (user, host, options) and each test's record, made
from its final pytest report (setup or call)."""

from __future__ import annotations

import getpass
import socket
from typing import Any

import pytest

from perfgate import verdicts
from perfgate.catalog import Row
from perfgate.launch.avoid import Avoid
from perfgate.report import dryrun, results
from perfgate.rowrecord import RowRecord
from perfgate.secrets import recorded, redact
from perfgate.suite.settings import Settings, repro_command


def session_info(
    settings: Settings, deselected: list[str], avoided: Avoid | None = None
) -> dict[str, Any]:
    """What results.json and the report say about the session; avoided: the nodes its first
    runs were kept off (perfgate.suite.avoiding)."""
    launch = settings.launch
    return {
        "avoided_nodes": avoided.to_dict() if avoided is not None else None,
        "mode": settings.mode,
        "user": _user(),
        "host": socket.gethostname(),
        "deselected": list(deselected),
        "options": {
            "executor": launch.executor,
            "partition": launch.partition,
            "account": launch.account,
            "container_image": launch.container_image,
            "candidate_image": launch.candidate_image,
            "pairs": launch.pairs if settings.ab else None,
            "max_pairs": launch.max_pairs if settings.ab else None,
            "container_runtime": launch.container_runtime,
            "steps": launch.steps,
            "window": settings.window,
            "tolerance": settings.tolerance,
            "alpha": settings.noise.alpha,
            "confirm": settings.confirm.name,
            "confirm_inconclusive": settings.confirm_inconclusive,
            "fdr": settings.fdr,
            "overrides": launch.overrides,
            "env": recorded(launch.env),  # knobs' values; every other variable's is ***
            "replay": str(settings.replay) if settings.replay else None,
        },
    }


def row_record(
    info: dict[str, Any],
    nodeid: str,
    row: Row,
    report: pytest.TestReport,
    settings: Settings,
) -> RowRecord:
    """The results.json record of a row's test from its final report (setup or call).

    info: what the test stashed (evaluation, plan, description, skip reason, setup time).
    """
    ev = info.get("evaluation")
    skipped = _skip_text(report) if report.skipped else None
    setup_s = info.get("setup_s", 0.0) if report.when == "call" else 0.0
    rec = results.record(
        ev,
        row,
        nodeid=nodeid,
        outcome="error" if report.when == "setup" and report.failed else report.outcome,
        repro=repro_command(nodeid, settings),
        source=settings.mode,
        plan=info.get("plan"),
        description=info.get("description"),
        skip_reason=info.get("skip_reason") or skipped,
        window=settings.window,
    )
    if ev is None and report.failed:
        lines = report.longreprtext.splitlines() if report.longreprtext else ["error"]
        rec["verdict"] = verdicts.INFRA
        rec["message"] = dryrun.with_id(row.id, lines[-1])
    rec["duration_s"] = round(setup_s + report.duration, 3)
    if report.failed and report.longreprtext:
        text = report.longreprtext.strip()
        expected = {rec["message"], f"{rec['message']} (--strict)"}
        if ev is not None and ev.verdict == verdicts.INFRA:
            expected.add(verdicts.infra_text(ev))
        if text not in expected:  # not the verdict's own failure: show it in the report
            rec["error"] = redact(text)
    return rec


def _skip_text(report: pytest.TestReport) -> str:
    longrepr = report.longrepr
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        return str(longrepr[2]).removeprefix("Skipped: ")
    return str(longrepr)


def _user() -> str | None:
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no passwd entry for the uid (containers)
        return None
