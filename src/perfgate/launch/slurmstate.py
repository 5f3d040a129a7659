"""Job states from Slurm, on the session's own short interval.

submitit's watcher polls sacct with a back-off that grows to minutes and reads only
JobID/State/NodeList; the session needs the pending reason, the time left and the job name
(to check that a resumed job id is still ours). Live jobs are read from slurmctld (squeue),
which is the truth: slurmdbd lags, and was seen here answering sacct for a running job with
a transient record (JobName=allocation, State=PENDING). sacct answers for jobs slurmctld
has forgotten (after MinJobAge), and scontrol for what both miss; a cluster without
accounting still works.

A NodeList is outside input: it is kept only when it reads as a Slurm host list (the one
grammar, perfgate.nodenames: 'None assigned' is no node, a list that is not one is dropped
with a warning naming the command), and a job's nodes are that list expanded by Slurm's rules.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Iterable
from dataclasses import dataclass

from perfgate import nodenames, notices
from perfgate.launch.types import TERMINAL_STATES

ACTIVE_STATES = frozenset(
    {
        "PENDING",
        "CONFIGURING",
        "RUNNING",
        "COMPLETING",
        "REQUEUED",
        "REQUEUE_HOLD",
        "REQUEUE_FED",
        "RESIZING",
        "SUSPENDED",
        "STOPPED",
        "SIGNALING",
        "STAGE_OUT",
        "RESV_DEL_HOLD",
    }
)
QUERY_TIMEOUT_S = 20


@dataclass(frozen=True)
class JobInfo:
    """What Slurm says about one job right now."""

    job_id: str
    state: str  # first word, upper case: RUNNING, PENDING, COMPLETED, CANCELLED, ...
    name: str | None = None
    reason: str | None = None
    nodes: str | None = None
    time_left_s: float | None = None
    elapsed_s: float | None = None
    restarts: int | None = None
    exit_code: str | None = None
    source: str = "sacct"

    @property
    def terminal(self) -> bool:
        """Nothing more will happen to this job."""
        return self.state in TERMINAL_STATES

    @property
    def active(self) -> bool:
        """Queued or running (requeued jobs count: they will run again)."""
        return self.state in ACTIVE_STATES


def parse_duration(text: str | None) -> float | None:
    """Slurm's [D-]HH:MM:SS, MM:SS or minutes as seconds; None for UNLIMITED or garbage."""
    if not text or text.upper() in ("UNLIMITED", "INVALID", "N/A", "NONE"):
        return None
    days = 0
    if "-" in text:
        d, _, text = text.partition("-")
        if not d.isdigit():
            return None
        days = int(d)
    parts = text.split(":")
    try:
        nums = [float(p) for p in parts]
    except ValueError:
        return None
    if len(nums) == 1:
        h, m, s = 0.0, nums[0], 0.0
    elif len(nums) == 2:
        h, m, s = 0.0, nums[0], nums[1]
    elif len(nums) == 3:
        h, m, s = nums
    else:
        return None
    return days * 86400 + h * 3600 + m * 60 + s


def _state(raw: str) -> str:
    # sacct writes "CANCELLED by 0"; scontrol "CANCELLED"
    return raw.split()[0].upper() if raw.strip() else "UNKNOWN"


def _reason(raw: str | None) -> str | None:
    return raw if raw and raw not in ("None", "(null)") else None


def _nodelist(text: str | None, source: str) -> str | None:
    """A NodeList as Slurm printed it, when it names nodes by the grammar; else None (a
    warning when it was neither empty nor Slurm's "no node")."""
    if text is None or text.strip().lower() in nodenames.NO_NODE:
        return None
    return text.strip() if nodenames.host_list(text, source, notices.warn) else None


def _run(cmd: list[str]) -> str | None:
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=QUERY_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return p.stdout if p.returncode == 0 else None


SACCT_FIELDS = "JobIDRaw,JobName,State,Reason,NodeList,Elapsed,Timelimit,ExitCode"


def sacct_records(text: str) -> list[JobInfo]:
    """sacct -X -P -n -o SACCT_FIELDS output, one JobInfo per line, in sacct's order."""
    out = []
    for line in text.splitlines():
        f = line.split("|")
        if len(f) < 8 or not f[0].isdigit():
            continue
        elapsed, limit = parse_duration(f[5]), parse_duration(f[6])
        state = _state(f[2])
        left = (limit - elapsed) if (limit is not None and elapsed is not None) else None
        out.append(
            JobInfo(
                job_id=f[0],
                state=state,
                name=f[1],
                reason=_reason(f[3]),
                nodes=_nodelist(f[4], f"sacct: job {f[0]}: NodeList"),
                time_left_s=left if state == "RUNNING" else None,
                elapsed_s=elapsed,
                exit_code=f[7] or None,
                source="sacct",
            )
        )
    return out


def parse_sacct(text: str) -> dict[str, JobInfo]:
    """sacct -X -P -n -o SACCT_FIELDS output; the latest line of a job wins."""
    return {info.job_id: info for info in sacct_records(text)}


def parse_squeue(text: str) -> dict[str, JobInfo]:
    """squeue -h -o '%i|%j|%T|%r|%N|%L|%M' output."""
    out: dict[str, JobInfo] = {}
    for line in text.splitlines():
        f = line.split("|")
        if len(f) < 7 or not f[0].isdigit():
            continue
        state = _state(f[2])
        out[f[0]] = JobInfo(
            job_id=f[0],
            state=state,
            name=f[1],
            reason=_reason(f[3]),
            nodes=_nodelist(f[4], f"squeue: job {f[0]}: NodeList"),
            time_left_s=parse_duration(f[5]) if state == "RUNNING" else None,
            elapsed_s=parse_duration(f[6]),
            source="squeue",
        )
    return out


_KV = re.compile(r"(\w+)=(\S*)")


def parse_scontrol(text: str) -> JobInfo | None:
    """`scontrol show job -o ID` output (one line of Key=Value)."""
    kv = dict(_KV.findall(text))
    if "JobId" not in kv:
        return None
    state = _state(kv.get("JobState", ""))
    run, limit = parse_duration(kv.get("RunTime")), parse_duration(kv.get("TimeLimit"))
    restarts = kv.get("Restarts")
    return JobInfo(
        job_id=kv["JobId"],
        state=state,
        name=kv.get("JobName"),
        reason=kv.get("Reason") if kv.get("Reason") not in (None, "None") else None,
        nodes=_nodelist(kv.get("NodeList"), f"scontrol: job {kv['JobId']}: NodeList"),
        time_left_s=(limit - run) if state == "RUNNING" and limit and run is not None else None,
        elapsed_s=run,
        restarts=int(restarts) if restarts and restarts.isdigit() else None,
        exit_code=kv.get("ExitCode"),
        source="scontrol",
    )


class SlurmStates:
    """Reads job states in one query per poll: slurmctld (squeue) for the jobs it still holds,
    sacct for the ones it has forgotten, scontrol for what both miss."""

    def __init__(self) -> None:
        self.accounting = True  # set False after sacct fails: do not wait on it every poll
        self.calls = 0

    def query(self, job_ids: Iterable[str]) -> dict[str, JobInfo]:
        """Current info for each job id Slurm knows; unknown ids are absent."""
        ids = sorted({str(j) for j in job_ids}, key=int)
        if not ids:
            return {}
        self.calls += 1
        # -t all: finished jobs stay listed for MinJobAge; an id slurmctld no longer holds
        # makes squeue fail only when no id is known (then everything goes to sacct).
        out = _run(["squeue", "-h", "-t", "all", "-o", "%i|%j|%T|%r|%N|%L|%M", "-j", ",".join(ids)])
        found = parse_squeue(out) if out else {}
        rest = [j for j in ids if j not in found]
        if rest and self.accounting:
            self.calls += 1
            acct = _run(["sacct", "-X", "-P", "-n", "-o", SACCT_FIELDS, "-j", ",".join(rest)])
            if acct is None:
                self.accounting = False
            else:
                found.update(parse_sacct(acct))
        for j in [j for j in ids if j not in found]:
            self.calls += 1
            info = parse_scontrol(_run(["scontrol", "show", "job", "-o", j]) or "")
            if info is not None:
                found[j] = info
        return found

    def nodes(self, job_id: str) -> list[str]:
        """The job's nodes: sacct's NodeList (squeue's while slurmctld still holds the job),
        expanded by Slurm's rules (n[1-3] -> n1 n2 n3); [] when neither records any."""
        for cmd, what in (
            (["sacct", "-X", "-P", "-n", "-o", "NodeList", "-j", str(job_id)], "sacct"),
            (["squeue", "-h", "-o", "%N", "-j", str(job_id)], "squeue"),
        ):
            lines = [x for x in (_run(cmd) or "").splitlines() if x.strip()]
            if lines:  # the last record is the job's latest attempt
                found = nodenames.host_list(
                    lines[-1], f"{what}: job {job_id}: NodeList", notices.warn
                )
                if found:
                    return list(found)
        return []

    def attempts(self, job_id: str) -> list[JobInfo]:
        """Every attempt of a job accounting holds, oldest first (sacct -D: a requeued job
        keeps one record per attempt, e.g. NODE_FAIL then RUNNING); [] without accounting."""
        if not self.accounting:
            return []
        self.calls += 1
        out = _run(["sacct", "-D", "-X", "-P", "-n", "-o", SACCT_FIELDS, "-j", str(job_id)])
        return sacct_records(out or "")


# sinfo's compact states of nodes a new job cannot get (with or without a suffix: *, ~, #, ...)
UNUSABLE = ("down", "drain", "drng", "fail", "futr", "inval", "maint", "unk", "npc", "blocked")


def partition_nodes(sinfo_text: str, partition: str | None) -> list[str] | None:
    """The usable nodes of a partition (None: the default one) from `sinfo -h -N -o %N|%P|%t`
    output, in sinfo's order; None when sinfo lists no such partition. A line that is not
    `node|partition|state` is left out."""
    found: dict[str, None] = {}
    seen = False
    for line in sinfo_text.splitlines():
        parts = line.strip().split("|")
        if len(parts) != 3 or not all(parts):
            continue
        node, part, state = parts
        default = part.endswith("*")
        if (partition or "") != part.rstrip("*") and not (partition is None and default):
            continue
        seen = True
        if not state.lower().rstrip("*~#!%$@^-+").startswith(UNUSABLE):
            found[node] = None
    return list(found) if seen else None


def query_partition_nodes(partition: str | None) -> list[str] | None:
    """The usable nodes of the partition sinfo reports (None: sinfo failed or has none)."""
    out = _run(["sinfo", "-h", "-N", "-o", "%N|%P|%t"])
    return partition_nodes(out, partition) if out is not None else None
