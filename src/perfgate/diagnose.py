"""Why a job failed: a cause from CAUSES, the line that shows it, and the raw log tail.

Causes come from the Slurm state when Slurm ended the job (cancelled, preempted, node
failure), else from the first hard evidence in the logs (container, CUDA OOM, NCCL, NaN, a
Python exception), else from the state (time limit, host OOM) and the exit status. The
patterns are the exact wording of pyxis/enroot, slurmstepd, PyTorch and NCCL. Log text is
untrusted: kept raw (the report escapes it) but with secrets masked.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from perfgate import inputs
from perfgate.errors import PerfgateError
from perfgate.logs.series import StepSeries
from perfgate.runs import Diagnosis
from perfgate.secrets import redact

TAIL_LINES = 60
MAX_EVIDENCE = 400
READ_BYTES = 512 * 1024  # NCCL INFO floods make logs huge: the end is what matters
MAX_EXCEPTION_LINE = 4096
MAX_TASKS = 100_000  # task ids failing_tasks lists at most


@dataclass(frozen=True)
class Pattern:
    """A log line that proves a cause."""

    cause: str
    regex: re.Pattern[str]
    message: str


def _line_re(regex: str, flags: int = 0) -> re.Pattern[str]:
    """A pattern that finds its text anywhere in a line, in linear time.

    The wordings below are written as whole lines (`.*CUDA out of memory.*`); searched with a
    leading `.*` every start position rescans the rest of the line, so one 100 kB line without
    a newline cost minutes. The `.*` ends add nothing to a search: they are dropped here.
    """
    regex = regex.removeprefix(".*")
    if regex.endswith(".*") and not regex.endswith("\\.*"):
        regex = regex[:-2]
    return re.compile(regex, flags)


def _p(cause: str, regex: str, message: str, flags: int = 0) -> Pattern:
    return Pattern(cause, _line_re(regex, flags), message)


# Order matters: a CUDA OOM on one rank makes the others fail in NCCL, so OOM comes first;
# a container that never started explains everything after it.
LOG_PATTERNS: tuple[Pattern, ...] = (
    _p("CONTAINER", r"pyxis:\s+\[ERROR\].*", "container image could not be imported"),
    _p("CONTAINER", r"\[ERROR\] URL \S+ returned error code: \d+.*", "image pull failed"),
    _p("CONTAINER", r"pyxis: failed to import docker image", "container image import failed"),
    _p("CONTAINER", r"pyxis: couldn't start container", "container could not start"),
    _p(
        "CONTAINER",
        r"pyxis: failed to create container filesystem for image: .*",
        "container image could not be unpacked",
    ),
    _p("CONTAINER", r"pyxis: container start failed.*", "container could not start"),
    _p("CONTAINER", r"perfgate: enroot import .* failed.*", "container image import failed"),
    _p("CONTAINER", r"perfgate: podman pull .* failed.*", "container image pull failed"),
    _p("CONTAINER", r"perfgate: container image .*: no such file.*", "container image not found"),
    _p("CONTAINER", r"perfgate: pyxis is not available.*", "pyxis is not available"),
    # podman, and enroot or Apptainer run by a --container-command template
    _p(
        "CONTAINER",
        r"^Error: .*(image not known|initializing source|pinging container registry|"
        r"runc create failed|OCI runtime).*",
        "podman could not run the container",
    ),
    _p(
        "CONTAINER",
        r"^\[ERROR\] (No such file or directory|Invalid image format|Invalid argument|"
        r"Could not|Failed).*",
        "the container runtime could not use the image",
    ),
    _p("CONTAINER", r"^enroot-mount: failed to mount: .*", "a container mount failed"),
    _p("CONTAINER", r"^FATAL:\s+.*", "the container runtime failed"),
    _p("CONTAINER", r"unrecognized option '--container-image.*", "srun has no pyxis plugin"),
    _p("CONTAINER", r"spank: required plugin spank_pyxis\.so.*failed.*", "pyxis failed"),
    _p("OOM", r".*CUDA out of memory.*", "CUDA out of memory"),
    _p("OOM", r".*CUDA error: out of memory.*", "CUDA out of memory"),
    _p("NCCL", r".*Watchdog caught collective operation timeout.*", "NCCL collective timed out"),
    _p("NCCL", r".*NCCL error.*", "NCCL error"),
    _p(
        "NCCL",
        r".*\b(ncclInternalError|ncclSystemError|ncclUnhandledCudaError|ncclRemoteError)\b.*",
        "NCCL error",
    ),
    _p("NCCL", r".*NCCL communicator was aborted.*", "NCCL communicator aborted"),
    _p("NAN", r".*found NaN in local grad norm.*", "NaN grad norm"),
    _p("NAN", r".*\bgrad[ _]norm\s*[:=]\s*nan\b.*", "NaN grad norm", re.IGNORECASE),
)
HOST_OOM = _line_re(r".*Detected \d+ oom[-_]kill event.*")
SLURM_KILL = _line_re(r".*\*\*\* (?:JOB|STEP) \S+ ON \S+ CANCELLED AT \S+(?P<why>.*)\*\*\*.*")
TRACEBACK = "Traceback (most recent call last):"
EXCEPTION = re.compile(
    r"^(?:\S+: |\[rank\d+\]: ?|\[default\d+\]: ?)?"
    r"(?P<line>(?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*(?:Error|Exception|Interrupt|Exit)\b(?::.*)?)$"
)
# The workload's own last word (perfgate.workload.dispatch): it failed by itself.
WORKLOAD_ERROR = re.compile(r"perfgate\.workload \(rank [^)]{1,16}\): error: ")
# srun's report of a task that exited by itself (not killed).
TASK_EXITED = re.compile(r"srun: error: \S+: tasks? [\d,-]+: Exited with exit code [1-9]\d*")
SRUN_ERROR = re.compile(r"^srun: (?:error|fatal): (?!.*: tasks? [\d,-]+: ).*")
SRUN_TASK_EXIT = re.compile(r"srun: error: (\S+): tasks? ([\d,-]+): (Exited with exit code \d+|.*)")

# srun's own report of the node that failed; slurmstepd's `*** JOB 4 ON n1 CANCELLED ... DUE
# TO NODE FAILURE ***` names the batch host, which is usually a healthy node.
NODE_FAILURE = _line_re(r".*srun: error: Node failure on (?P<node>\S+).*")

SLURM_CAUSES = {
    "CANCELLED": ("CANCELLED", "the job was cancelled"),
    "PREEMPTED": ("PREEMPTED", "the job was preempted"),
    "NODE_FAIL": ("NODE_FAIL", "a node of the allocation failed"),
    "BOOT_FAIL": ("NODE_FAIL", "a node of the allocation failed to boot"),
}


def read_log(path: str | Path, limit: int = READ_BYTES) -> str:
    """The last `limit` bytes of a log, decoded leniently (NCCL/banners write non-UTF-8)."""
    try:
        with inputs.open_regular(path) as f:
            f.seek(0, 2)
            size = f.tell()
            f.seek(max(0, size - limit))
            data = f.read()
    except (OSError, PerfgateError):  # missing, or a FIFO planted where a log should be
        return ""
    return data.decode("utf-8", errors="replace")


def failing_tasks(text: str) -> list[int]:
    """Task ids srun reported as failed (`srun: error: n3: task 17: Exited with exit code 1`)."""
    out: list[int] = []
    for m in SRUN_TASK_EXIT.finditer(text):
        for part in m.group(2).split(","):
            lo, _, hi = part.partition("-")
            hi = hi or lo
            # No job has a million tasks: a bigger id or range is a corrupt line, not a list
            # to build (`tasks 0-99999999999999` would never end; 5000 digits raise).
            if lo.isdigit() and hi.isdigit() and len(lo) <= 7 and len(hi) <= 7:
                out.extend(range(int(lo), min(int(hi), int(lo) + MAX_TASKS) + 1))
            if len(out) > MAX_TASKS:
                return out[:MAX_TASKS]
    return out


def failed_nodes(logs: Sequence[tuple[str, str]]) -> list[str]:
    """The nodes srun reported as failed in these logs, in order, each once."""
    out: list[str] = []
    for _, text in logs:
        for m in NODE_FAILURE.finditer(text):
            if m.group("node") not in out:
                out.append(m.group("node"))
    return out


def tail(text: str, lines: int = TAIL_LINES, environ: Mapping[str, str] | None = None) -> str:
    """The last lines of a log, raw but with secret values masked."""
    return redact("\n".join(text.splitlines()[-lines:]), environ)


def _clean(line: str, environ: Mapping[str, str] | None) -> str:
    line = redact(line.strip(), environ)
    return line if len(line) <= MAX_EVIDENCE else line[: MAX_EVIDENCE - 3] + "..."


def find_pattern(
    logs: Sequence[tuple[str, str]], patterns: Sequence[Pattern]
) -> tuple[Pattern, str, str] | None:
    """(pattern, line, log name) of the first pattern, in pattern order, found in any log."""
    for pat in patterns:
        for name, text in logs:
            for line in text.splitlines():
                if pat.regex.search(line):
                    return pat, line, name
    return None


def find_exception(logs: Sequence[tuple[str, str]]) -> tuple[str, str] | None:
    """(exception line, log name): the line ending the first Python traceback found."""
    for name, text in logs:
        lines = text.splitlines()
        for i, line in enumerate(lines):
            if TRACEBACK not in line:
                continue
            for follow in lines[i + 1 : i + 400]:
                # An exception's line is short; a long one (a tensor's repr) is cut before the
                # match, whose nested name groups would backtrack quadratically on it.
                m = EXCEPTION.match(follow.strip()[:MAX_EXCEPTION_LINE])
                if m:
                    return m.group("line"), name
    return None


def find_line(logs: Sequence[tuple[str, str]], regex: re.Pattern[str]) -> tuple[str, str] | None:
    """(line, log name) of the first line in which regex is found."""
    for name, text in logs:
        for line in text.splitlines():
            if regex.search(line):
                return line, name
    return None


def diagnose(
    state: str | None,
    exit_code: int | None,
    logs: Sequence[tuple[str, str]],
    series: StepSeries | None = None,
    expected_steps: int | None = None,
    step_error: str | None = None,
    job_id: str | None = None,
    environ: Mapping[str, str] | None = None,
) -> Diagnosis | None:
    """The cause of a failed run or job, or None when it ran cleanly to its last step.

    logs: (name, text) pairs, most relevant first (failing ranks, rank 0, srun, batch log).
    """
    state = (state or "").split()[0].upper() if state else ""
    job = f"job {job_id}: " if job_id else ""
    main_tail = tail(logs[0][1], environ=environ) if logs else ""

    def make(cause: str, message: str, evidence: str | None, name: str | None = None) -> Diagnosis:
        ev = _clean(evidence, environ) if evidence else None
        where = f" ({Path(name).name})" if name else ""
        text = tail(dict(logs)[name], environ=environ) if name else main_tail
        # "CUDA out of memory: ...CUDA out of memory. Tried..." said it twice: the line itself
        # stays the diagnosis's evidence (shown on its own and marked in the log tail).
        said = bool(ev) and message.lower() in ev.lower()  # type: ignore[union-attr]
        detail = f"{where}" if said else (f": {ev}{where}" if ev else "")
        return Diagnosis(cause, f"{job}{message}{detail}", ev, text)

    kill = find_line(logs, SLURM_KILL)
    if state in SLURM_CAUSES:
        cause, msg = SLURM_CAUSES[state]
        if kill and "TIME LIMIT" in kill[0]:
            cause, msg = "TIMEOUT", "the job hit its time limit"
        down = find_line(logs, NODE_FAILURE) if cause == "NODE_FAIL" else None
        if down:
            node = NODE_FAILURE.search(down[0]).group("node")  # type: ignore[union-attr]
            return make(cause, f"node {node} of the allocation failed", down[0], down[1])
        return make(cause, msg, kill[0] if kill else None, kill[1] if kill else None)
    # A launch that exited 0 with its steps done cannot have died of OOM/NCCL/container
    # trouble; only a NaN can still spoil it (NCCL_DEBUG=INFO floods must not be misread).
    clean = exit_code == 0 and not step_error and state in ("", "COMPLETED", "RUNNING", "LOCAL")
    patterns = [p for p in LOG_PATTERNS if p.cause == "NAN"] if clean else LOG_PATTERNS
    hard = find_pattern(logs, patterns)
    if hard and (state not in ("TIMEOUT", "DEADLINE") or hard[0].cause != "NAN"):
        pat, line, name = hard
        return make(pat.cause, pat.message, line, name)
    if state in ("TIMEOUT", "DEADLINE"):
        return make(
            "TIMEOUT",
            "the job hit its time limit",
            kill[0] if kill else None,
            kill[1] if kill else None,
        )
    if state == "OUT_OF_MEMORY":
        oom = find_line(logs, HOST_OOM)
        return make(
            "OOM",
            "host memory exhausted (Slurm OUT_OF_MEMORY)",
            oom[0] if oom else None,
            oom[1] if oom else None,
        )
    if series is not None and not series.valid:
        return make(series.cause, "the run cannot be judged", series.invalid_reason)
    failed = (exit_code not in (None, 0)) or state == "FAILED" or step_error
    if failed:
        exc = find_exception(logs)
        if exc:
            return make("WORKLOAD_EXCEPTION", "the workload raised", exc[0], exc[1])
        oom = find_line(logs, HOST_OOM)  # the kernel killed it: its wrapper's error follows
        if oom:
            return make("OOM", "host memory exhausted", oom[0], oom[1])
        # The workload's own exit wins over the kill it caused (srun --kill-on-bad-exit
        # cancels the step when a task exits non-zero, and slurmstepd says CANCELLED).
        own = find_line(logs, WORKLOAD_ERROR)
        if own:
            return make("WORKLOAD_EXCEPTION", "the workload failed", own[0], own[1])
        if step_error:
            return make("WORKLOAD_EXCEPTION", "the workload failed", step_error)
        exited = find_line(logs, TASK_EXITED)
        code = f" with status {exit_code}" if exit_code not in (None, 0) else ""
        if exited:
            return make("UNKNOWN", f"the workload exited{code}", exited[0], exited[1])
        if kill:
            return make("CANCELLED", "Slurm killed the job", kill[0], kill[1])
        srun = find_line(logs, SRUN_ERROR) or find_line(logs, SRUN_TASK_EXIT)
        return make(
            "UNKNOWN",
            f"the workload exited{code}",
            srun[0] if srun else None,
            srun[1] if srun else None,
        )
    if series is None or not series.steps:
        return make("TOO_FEW_STEPS", "the workload recorded no step", None)
    if expected_steps and len(series.steps) < expected_steps:
        return make(
            "TOO_FEW_STEPS",
            f"the run ended after {len(series.steps)} of {expected_steps} steps",
            f"last step {series.steps[-1].step}",
        )
    return None
