"""The history store's interface: what every reader and writer of a row's history sees.

Two implementations: perfgate.history.sqlite (one file, the embedded default) and
perfgate.history.postgres (one server a team shares); perfgate.history.stores opens the one a
--history value names. Both keep the same tables, with the same meaning:

    sessions      one per pytest session that ran rows: when, where (host, Slurm cluster), the
                  images, perfgate's version, `git describe` of the checkout, the command line
                  (secrets redacted), the mode (live / ab / repeat / replay), and a uid made
                  by the session (a session written twice, e.g. from its spool, is one)
    session_ends  when a session finished (a session killed before its end has none: its
                  rows are kept, it is shown as interrupted)
    runs          one per launch of a row: label (baseline / candidate), job id, attempt,
                  steady median step time, within-run rel SE, steady flag, steps, tokens/s/GPU,
                  MFU, nodes, image and digest, versions, the row's verdict and INFRA cause,
                  the baseline step time and tolerance it was judged against;
                  unique on (session, row, label, launch, job id): written twice, kept once
    exclusions    `perfgate history --forget SESSION`: a session left out of trends and noise
                  (a known-bad cluster day), recorded by inserting a row, never by deleting

The suite only inserts, one transaction per row as it finishes. Between the stores and their
readers: plain data (Session, Run in; dicts, Points, NodeRuns and NodeTotals out).
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Protocol

from perfgate.history.nodes import NodeRun, NodeTotal
from perfgate.history.trend import Point

SCHEMA_VERSION = 2
DEFAULT_NAME = "history.sqlite"
# The modes of runs that make a row's trend: one image per job (A/B pairs are two).
TREND_MODES = ("stored", "repeat")


def now() -> str:
    """UTC timestamp, ISO 8601, seconds."""
    return datetime.now(timezone.utc).replace(microsecond=0).isoformat()


def new_uid() -> str:
    """A session's own id, the same in every store it is written to."""
    return uuid.uuid4().hex


@dataclass(frozen=True)
class Session:
    """What a session records about itself (secrets already redacted from command)."""

    mode: str  # live, ab, repeat or replay
    started_at: str = field(default_factory=now)
    host: str | None = None
    cluster: str | None = None
    images: tuple[str, ...] = ()
    perfgate_version: str | None = None
    git_describe: str | None = None
    command: str | None = None
    uid: str = field(default_factory=new_uid)


@dataclass(frozen=True)
class Run:
    """One launch of a row, as the store keeps it."""

    row_id: str
    mode: str  # stored (one run vs baseline), repeat, paired
    label: str
    launch: int  # 1-based position in its job
    steady: bool
    step_time_s: float | None = None
    rel_se: float | None = None
    n_steady: int | None = None
    job_id: str | None = None
    attempt: int | None = None
    tokens_per_s_per_gpu: float | None = None
    mfu: float | None = None
    nodes: tuple[str, ...] = ()
    image: str | None = None
    image_digest: str | None = None
    versions: dict[str, str] = field(default_factory=dict)
    verdict: str | None = None
    cause: str | None = None
    delta: float | None = None
    baseline_s: float | None = None  # the baseline step time the row was judged against
    tolerance: float | None = None  # and its tolerance (a fraction)


@dataclass(frozen=True)
class Dump:
    """Sessions as plain rows (export/import, one session at a time): each table's rows as
    dicts; runs, ends and exclusions name their session by its uid."""

    sessions: list[dict[str, Any]]
    ends: list[dict[str, Any]]
    runs: list[dict[str, Any]]
    exclusions: list[dict[str, Any]]

    def counts(self) -> dict[str, int]:
        """Rows per table."""
        return {
            "sessions": len(self.sessions),
            "session_ends": len(self.ends),
            "runs": len(self.runs),
            "exclusions": len(self.exclusions),
        }


class HistoryStore(Protocol):
    """A history, wherever it lives: every reader and writer of it uses only this."""

    notes: list[str]  # rows its reads left out (perfgate.history.decode), one line each

    @property
    def location(self) -> str:
        """Where it is, fit to print (a file name; a URL without its password)."""
        ...

    def check(self) -> None:
        """Reach the store now (PerfgateError in one line when it cannot be reached or is not
        a perfgate history of this schema); a store that does not exist yet is fine."""
        ...

    def start_session(self, s: Session) -> int:
        """Insert a session (or find it by its uid); its id in this store."""
        ...

    def add_runs(self, session_id: int, runs: Sequence[Run]) -> int:
        """Insert one row's runs of a session in one transaction; how many were new."""
        ...

    def finish_session(self, session_id: int, finished_at: str | None = None) -> None:
        """Record that the session ended (once)."""
        ...

    def forget(self, session_id: int, reason: str) -> None:
        """Leave a session out of trends and noise from now on (an exclusion row)."""
        ...

    def sessions(self) -> list[dict[str, Any]]:
        """Every session, oldest first, with finished_at and excluded (reason or None)."""
        ...

    def runs(self, row_id: str) -> list[dict[str, Any]]:
        """Every stored run of a row with its session's fields, oldest first."""
        ...

    def row_ids(self) -> list[str]:
        """Every row id with a stored run."""
        ...

    def points(self, row_id: str, cluster: str | None = None) -> list[Point]:
        """The row's trend (see trend_points)."""
        ...

    def node_runs(self, cluster: str | None = None) -> list[NodeRun]:
        """Every run the node test uses (see node_filter), one by one."""
        ...

    def node_totals(self, cluster: str | None = None) -> list[NodeTotal]:
        """The node test's sums per node, aggregated in the store (perfgate.history.nodes)."""
        ...

    def session_uids(self) -> list[str]:
        """Every session's uid, oldest first."""
        ...

    def dump(self, uid: str) -> Dump:
        """One session with its ends, runs and exclusions (empty when it is not here)."""
        ...

    def load(self, dump: Dump) -> dict[str, int]:
        """Insert a dump in one transaction (what is already here is skipped); rows added
        per table."""
        ...

    def close(self) -> None:
        """Let go of connections (the store opens them again when used)."""
        ...


def trend_points(runs: Iterable[dict[str, Any]], cluster: str | None = None) -> list[Point]:
    """A row's trend from its runs(): steady, undiagnosed runs of single-image sessions not
    forgotten.

    A/B sessions are kept but not part of the trend (two images in one job), nor is a run
    judged UNCONFIRMED (a confirmation on other nodes did not reproduce its slowdown: its
    nodes, not the row, were slow; the confirmation run stands for the night). cluster,
    when given, keeps runs of that Slurm cluster (and those with none recorded).
    """
    return [
        Point(
            session_id=r["session_id"],
            started_at=r["started_at"],
            step_time_s=r["step_time_s"],
            rel_se=r["rel_se"],
            job_id=r["job_id"],
            container=r["image"],
            versions=r["versions"],
            verdict=r["verdict"],
            label=r["label"],
            nodes=tuple(r["nodes"] or ()),
        )
        for r in runs
        if r["steady"]
        and r["step_time_s"]
        and r["cause"] is None
        and r["excluded"] is None
        and r["verdict"] != "UNCONFIRMED"
        and r["mode"] in TREND_MODES
        and (cluster is None or r["cluster"] in (None, cluster))
    ]


def finite(x: float | None) -> float | None:
    """A number as both stores keep it: NaN and infinities are no measurement (None)."""
    return x if x is None or math.isfinite(x) else None
