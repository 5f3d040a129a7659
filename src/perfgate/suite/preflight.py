"""What a session settles before it submits anything: overrides, the selection, the GPU-hours.

- The session's --override paths are checked against every selected row at once: one usage
  error names each path some rows reject, the backends and rows rejecting it and why (with
  the closest valid field), and which backends accept it. A path valid for some selected
  rows only is an error too: perfgate never applies an override to part of a selection
  silently; select the rows that have it (e.g. -m nemo2).
- A live session without a selection (-m, -k, --gpus or test ids) would submit the whole
  catalog: it needs --all-rows. Above --max-gpu-hours (time-limit bound) it asks on the
  terminal, or needs --yes where nobody can answer (no terminal, or CI set).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from perfgate.catalog import Row
from perfgate.errors import ConfigError
from perfgate.launch.executors import executor_for
from perfgate.launch.types import JobPlan
from perfgate.verdicts.confirm import OFF, RerunPolicy

DEFAULT_MAX_GPU_HOURS = 512.0
SHOWN_ROWS = 3  # rows named per rejecting backend before "+N more"


# --- overrides ----------------------------------------------------------------------------


def check_session_overrides(
    rows: Sequence[Row],
    overrides: Mapping[str, Any],
    check: Callable[[Row, Mapping[str, Any]], object],
    markexpr: str = "",
) -> None:
    """Check every row with the session's overrides; raise one ConfigError for the session.

    check(row, overrides) raises a ConfigError naming the bad path (workload.validate's
    check_overrides). A row whose own catalog overrides are bad is reported as such.
    markexpr (the session's -m) is the start of the expression the error suggests.
    """
    rejected: dict[str, list[tuple[Row, str]]] = {}
    accepted: list[Row] = []
    for row in rows:
        try:
            check(row, overrides)
        except ConfigError as e:
            path = next((p for p in overrides if repr(p) in str(e)), None)
            if path is None:
                raise  # the row's own override: the catalog's error, naming the row
            rejected.setdefault(path, []).append((row, _reason(str(e), path)))
        else:
            accepted.append(row)
    if rejected:
        raise ConfigError(_rejection(rejected, accepted, len(rows), markexpr))


def _reason(message: str, path: str) -> str:
    """The part of a check's message after the path: why this row rejects it."""
    return message.split(repr(path), 1)[1].lstrip(":, ").strip()


def keeping(markexpr: str, accepting: Sequence[str], rejecting: Sequence[str]) -> str:
    """The -m expression that keeps the selection's rows of the accepting backends only:
    `h100 and nemo2`, or `h100 and not automodel` when several backends accept."""
    if len(accepting) == 1:
        part = accepting[0]
    else:
        part = " and ".join(f"not {b}" for b in sorted(rejecting))
    base = markexpr.strip()
    if not base:
        return part
    return f"{base} and {part}" if base.isidentifier() else f"({base}) and {part}"


def _rejection(
    rejected: Mapping[str, list[tuple[Row, str]]],
    accepted: Sequence[Row],
    n_rows: int,
    markexpr: str = "",
) -> str:
    path, bad = next(iter(rejected.items()))
    by_backend: dict[str, list[tuple[Row, str]]] = {}
    for row, reason in bad:
        by_backend.setdefault(row.backend, []).append((row, reason))
    parts = []
    for backend, items in by_backend.items():
        ids = [r.id for r, _ in items]
        shown = ", ".join(ids[:SHOWN_ROWS]) + (
            f" +{len(ids) - SHOWN_ROWS} more" if len(ids) > SHOWN_ROWS else ""
        )
        parts.append(f"{backend} ({len(ids)} row(s): {shown}): {items[0][1]}")
    msg = f"--override {path!r}: rejected by {len(bad)} of {n_rows} selected row(s): "
    msg += "; ".join(parts)
    backends = sorted({r.backend for r in accepted})
    if accepted and not set(backends) & set(by_backend):  # whole backends accept, or reject
        expr = keeping(markexpr, backends, list(by_backend))
        shown = f'"{expr}"' if " " in expr else expr
        msg += (
            f"; valid for the {len(accepted)} {' and '.join(backends)} row(s): select them all "
            f"with -m {shown}"
        )
    elif accepted:
        msg += (
            f"; valid for {len(accepted)} other row(s) ({', '.join(backends)}): select only those"
        )
    others = [p for p in rejected if p != path]
    if others:
        msg += f"; also rejected: {', '.join(repr(p) for p in others)}"
    return msg


# --- the selection and its cost ---------------------------------------------------------------


def has_selection(config: Any) -> bool:
    """True when the rows were chosen: -m, -k, --gpus, or a test id (path::test[row])."""
    opt = config.option
    if getattr(opt, "markexpr", "") or getattr(opt, "keyword", "") or getattr(opt, "gpus", None):
        return True
    return any("::" in str(arg) for arg in config.args)


@dataclass(frozen=True)
class Cost:
    """What a live session is about to ask of the cluster (time-limit bound)."""

    rows: int
    nodes: int
    gpu_hours: float  # the rows' jobs
    confirm_gpu_hours: float = 0.0  # up to: the reruns on other nodes the policy allows
    confirm: RerunPolicy = OFF

    @classmethod
    def of(cls, plans: Iterable[JobPlan], confirm: RerunPolicy = OFF) -> Cost:
        """The sum over the rows' plans; confirm: the rerun policy (--confirm N: N reruns of
        each one-run row, each as long as its row's job at most; auto: one, its budget)."""
        plans = list(plans)
        one_run = sum(p.gpu_hours for p in plans if len(p.launches) == 1)
        return cls(
            len(plans),
            sum(p.nodes for p in plans),
            sum(p.gpu_hours for p in plans),
            one_run * reruns_counted(confirm),
            confirm,
        )

    @property
    def total_gpu_hours(self) -> float:
        """What the session may use at most: its jobs and every confirmation they may need."""
        return self.gpu_hours + self.confirm_gpu_hours

    def line(self) -> str:
        """The plan in one line, shown before anything is submitted."""
        reruns = ""
        if self.confirm_gpu_hours:
            reruns = (
                f" + up to {self.confirm_gpu_hours:,.1f} for confirmation reruns "
                f"({rerun_words(self.confirm)})"
            )
        return (
            f"perfgate: plan: {self.rows} row(s), {self.nodes} node allocation(s), "
            f"{self.gpu_hours:,.1f} GPU-hours at most (time-limit bound){reruns}"
        )


def reruns_counted(confirm: RerunPolicy) -> int:
    """How many reruns of each one-run row the plan counts as "up to": N for --confirm N,
    one for auto (its second reruns stay within that budget: perfgate.suite.confirming)."""
    return 1 if confirm.budget and confirm.most else confirm.most


def rerun_words(confirm: RerunPolicy) -> str:
    """The policy in the plan's words."""
    if confirm.budget:
        return (
            "--confirm auto: a REGRESSION rerun on other nodes, a second rerun only when the "
            "first reproduced it (a third when the second neither reproduced nor contradicted "
            "it), all reruns within one per row"
        )
    return f"--confirm {confirm.most}: a REGRESSION rerun on other nodes"


def consent(
    cost: Cost,
    *,
    selected: bool,
    all_rows: bool,
    yes: bool,
    max_gpu_hours: float,
    ask: Callable[[str], bool | None],
) -> str:
    """Say why the session may submit, or raise a one-line ConfigError saying why not.

    ask(question) answers True/False at a terminal, None where nobody can answer.
    """
    if not selected and not all_rows:
        raise ConfigError(
            f"no rows selected: this would submit all {cost.rows} rows collected "
            f"({cost.total_gpu_hours:,.1f} GPU-hours at most); choose rows with -m, -k, --gpus or "
            "test ids (--dry-run shows the plan), or pass --all-rows"
        )
    if cost.total_gpu_hours <= max_gpu_hours:
        return f"within --max-gpu-hours {max_gpu_hours:g}"
    if yes:
        return f"above --max-gpu-hours {max_gpu_hours:g}, confirmed by --yes"
    answer = ask(
        f"perfgate: submit {cost.rows} rows, {cost.total_gpu_hours:,.1f} GPU-hours? [y/N] "
    )
    if answer is None:
        raise ConfigError(
            f"{cost.rows} rows need up to {cost.total_gpu_hours:,.1f} GPU-hours, above "
            f"--max-gpu-hours {max_gpu_hours:g}, and there is no terminal to ask: pass --yes "
            "to submit them anyway, or raise --max-gpu-hours"
        )
    if not answer:
        raise ConfigError("nothing submitted: the GPU-hours were not confirmed")
    return f"above --max-gpu-hours {max_gpu_hours:g}, confirmed at the terminal"


def ask_terminal(question: str) -> bool | None:
    """Ask on the controlling terminal; None without one or under CI.

    /dev/tty, not stdin: pytest's capture replaces stdin (fd 0 reads /dev/null).
    """
    if os.environ.get("CI"):
        return None
    try:
        fd = os.open("/dev/tty", os.O_RDWR | os.O_NOCTTY)
    except OSError:
        return None
    with open(fd, "r+b", buffering=0) as tty:  # unbuffered: a terminal does not seek
        tty.write(question.encode())
        answer = tty.readline().decode(errors="replace")
    return answer.strip().lower() in ("y", "yes")


def container_warning(executor: str, runtime: str, image: str | None) -> str | None:
    """A warning when Slurm jobs would run outside any container without saying so (an
    executor that starts no container runs where perfgate runs: nothing to warn of)."""
    if executor_for(executor).starts_containers and runtime == "pyxis" and not image:
        return (
            "perfgate: WARNING: no --container-image: the rows run on the nodes' own software, "
            "not in a NeMo container (give --container-image IMG, or --container-runtime none "
            "to mean bare metal)"
        )
    return None
