"""`perfgate bisect`'s course: check the input, show the plan and its GPU-hours, get consent,
probe midpoints one at a time, keep the state, and write the answer with its evidence.

    images 1..n, image 1 good and image n bad (the gate's REGRESSION, or the ends' own probe)
    while the range (good, bad] holds more than one image: probe its midpoint against image 1

Every change is saved to bisect.json at once, so Ctrl-C (which cancels the probe's jobs) or
a dead login shell loses at most the probe in flight, and `--resume` goes on from there.
"""

from __future__ import annotations

import signal
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from perfgate.bisect import inputs, report, state
from perfgate.bisect.probe import Interrupted, ProbeConfig, run_probe
from perfgate.bisect.search import BAD, Search, outcome, replay
from perfgate.errors import ConfigError
from perfgate.launch import planning
from perfgate.launch.digests import ImageDigests
from perfgate.report.dryrun import row_message
from perfgate.suite import preflight

FOUND, NO_ANSWER, INTERRUPTED = 0, 3, 130
Probe = Callable[..., dict[str, dict[str, Any]]]


@dataclass(frozen=True)
class BisectConfig:
    """A bisection as the command line asked for it (images resolved, rows selected)."""

    images: tuple[str, ...]
    probe: ProbeConfig
    results_dir: Path
    gate: str | None = None  # the gate's results.json on the ends
    resume: bool = False
    dry_run: bool = False
    verbose: bool = False
    max_gpu_hours: float = preflight.DEFAULT_MAX_GPU_HOURS
    yes: bool = False

    @property
    def settings(self) -> dict[str, Any]:
        """What makes two bisections the same one (checked by --resume)."""
        p = self.probe
        return {
            "pairs": p.pairs,
            "max_pairs": p.max_pairs,
            "cap": p.cap,
            "tolerance": p.tolerance,
            "alpha": p.noise.alpha,
            "window": list(p.window) if isinstance(p.window, tuple) else p.window,
            "steps": p.options.steps,
            "executor": p.options.executor,
            "runtime": p.options.container_runtime,
        }


class Bisection:
    """One bisection's state file, search and output."""

    def __init__(self, cfg: BisectConfig, say: Callable[[str], None], probe: Probe) -> None:
        self.cfg, self.say, self.probe = cfg, say, probe
        self.path = cfg.results_dir / state.STATE_FILE
        self.state: dict[str, Any] = {}
        self.digests = ImageDigests()

    def open(self, gate: Any) -> None:
        """Load the saved state (--resume) or start a new one; never overwrite another run's."""
        cfg = self.cfg
        fresh = state.new(list(cfg.images), [r.id for r in cfg.probe.rows], cfg.settings, gate)
        saved = state.load(self.path)
        if saved is not None and not cfg.resume and not cfg.dry_run:
            raise ConfigError(
                f"{self.path} holds a bisection already: --resume goes on with it, another "
                "--results-dir starts a new one"
            )
        self.state = (
            state.resumable(saved, fresh, self.path, cfg.results_dir)
            if saved and cfg.resume
            else fresh
        )

    @property
    def search(self) -> Search:
        mids = [p for p in state.finished(self.state) if p.get("kind") != "ends"]
        return replay(len(self.cfg.images), mids)

    @property
    def ends_pending(self) -> bool:
        """No gate said REGRESSION on the ends and their own probe has not run."""
        done = any(p.get("kind") == "ends" for p in state.finished(self.state))
        return self.state.get("gate") is None and not done

    def save(self) -> None:
        self.cfg.results_dir.mkdir(parents=True, exist_ok=True)
        self.state["result"] = report.answer(self.state)
        state.save(self.path, self.state)
        (self.cfg.results_dir / "bisect.html").write_text(report.html(self.state))

    # --- the plan ------------------------------------------------------------------------------

    def plan(self) -> tuple[int, float]:
        """(probes at most, GPU-hours at most) still to run, with the lines that say so."""
        cfg, images = self.cfg, self.cfg.images
        search = self.search
        n = search.left + int(self.ends_pending)
        per = cfg.probe.gpu_hours(images[0], images[-1], cfg.results_dir)
        rows = ", ".join(f"{r.id} ({r.num_gpus} GPUs)" for r in cfg.probe.rows)
        self.say(
            f"perfgate bisect: {len(images)} images, image 1 good ({images[0]}), image "
            f"{len(images)} bad ({images[-1]}); rows: {rows}"
        )
        if self.state.get("gate") is None:
            ends = "the ends' own A/B probe runs first" if self.ends_pending else "ends probed"
        else:
            ends = "the gate's results say REGRESSION on the ends"
        p = cfg.probe
        self.say(
            f"perfgate bisect: plan: at most {n} probe(s) ({ends}; log2 of the "
            f"{search.bad - search.good} image(s) that may be the first slower one), each one "
            "A/B job per row "
            f"against image 1, {p.pairs}..{p.max_pairs} pairs, up to {p.cap} with extension "
            f"jobs: {per:,.2f} GPU-hours per probe, {n * per:,.2f} at most (time-limit bound)"
        )
        return n, n * per

    def dry_run(self) -> None:
        """What the first probe would submit, per row (-v: its sbatch script and srun line)."""
        cfg = self.cfg
        index = len(cfg.images) - 1 if self.ends_pending else self.search.next()
        folder = cfg.results_dir / "dry-run"
        opts = cfg.probe.job_options(
            cfg.images[0], cfg.images[index], folder, cfg.probe.pairs, cfg.probe.max_pairs
        )
        for row in cfg.probe.rows:
            plan = planning.plan(row, opts, job_dir=folder / row.id)
            self.say(f"first probe, image {index + 1}: {row_message(row, plan)}")
            if cfg.verbose:
                self.say(plan.sbatch_script)
                self.say(plan.srun_command)
        self.say("perfgate bisect: dry run: nothing submitted")

    # --- probing -------------------------------------------------------------------------------

    def _entry(self, kind: str, index: int) -> dict[str, Any]:
        """The probe record to run: the pending one when it is this probe, else a new one."""
        pending = state.pending(self.state)
        if pending is not None and (pending["kind"], pending["index"]) == (kind, index):
            pending["status"] = "running"
            return pending
        if pending is not None:
            self.state["probes"].remove(pending)
        k = sum(1 for p in self.state["probes"] if p.get("kind") != "ends") + 1
        name = "ends" if kind == "ends" else f"probe-{k}"
        entry = {
            "kind": kind,
            "index": index,
            "image": self.cfg.images[index],
            "dir": str(self.cfg.results_dir / f"{name}-image-{index + 1}"),
            "status": "running",
        }
        self.state["probes"].append(entry)
        return entry

    def run_one(self, kind: str, index: int) -> str:
        """Probe image `index` against image 1; returns its outcome."""
        entry = self._entry(kind, index)
        self.save()
        if self.cfg.probe.options.container_runtime in ("pyxis", "command"):
            # the two images' sha256, hashed here while their jobs queue and run (once each)
            self.digests.start([self.cfg.images[0], self.cfg.images[index]])
        what = "the ends" if kind == "ends" else f"image {index + 1} of {len(self.cfg.images)}"
        self.say(f"perfgate bisect: probing {what}: {self.cfg.images[index]} against image 1")
        try:
            rows = self.probe(
                self.cfg.probe,
                self.cfg.images[0],
                self.cfg.images[index],
                Path(entry["dir"]),
                self.say,
                self.digests,
            )
        except Interrupted:
            entry["status"] = "cancelled"
            self.save()
            raise
        entry.update(rows=rows, outcome=outcome(ev["verdict"] for ev in rows.values()))
        entry["status"] = "done"
        self.save()
        label = next(label for label, p in report.labels(self.state) if p is entry)
        for line in report.probe_lines(self.state, entry, label):
            self.say(f"perfgate bisect: {line}")
        return entry["outcome"]

    def run(self) -> int:
        """Probe until the answer is known or a probe cannot decide; the exit status."""
        if self.ends_pending and self.run_one("ends", len(self.cfg.images) - 1) != BAD:
            return self.finish()
        search = self.search
        while not search.done:
            index = search.next()
            search = search.after(index, self.run_one("midpoint", index))
        return self.finish()

    def finish(self) -> int:
        self.save()
        for line in report.terminal_lines(self.state)[-1:]:
            self.say(f"perfgate bisect: {line}")
        self.say(f"perfgate bisect: report {self.cfg.results_dir / 'bisect.html'}, {self.path}")
        return FOUND if self.state["result"]["status"] == "found" else NO_ANSWER


def _terminated(signum: int, frame: Any) -> None:
    raise Interrupted([], 128 + signum, "SIGTERM")


def consent(cfg: BisectConfig, n: int, gpu_hours: float, ask: Callable[[str], Any]) -> str:
    """Why the bisection may submit, as the suite asks (--max-gpu-hours, --yes, the terminal)."""
    limit = cfg.max_gpu_hours
    if gpu_hours <= limit:
        return f"within --max-gpu-hours {limit:g}"
    if cfg.yes:
        return f"above --max-gpu-hours {limit:g}, confirmed by --yes"
    answer = ask(f"perfgate bisect: submit up to {n} probe(s), {gpu_hours:,.1f} GPU-hours? [y/N] ")
    if answer is None:
        raise ConfigError(
            f"the bisection needs up to {gpu_hours:,.1f} GPU-hours, above --max-gpu-hours "
            f"{limit:g}, and there is no terminal to ask: pass --yes, or raise --max-gpu-hours"
        )
    if not answer:
        raise ConfigError("nothing submitted: the GPU-hours were not confirmed")
    return f"above --max-gpu-hours {limit:g}, confirmed at the terminal"


def bisect(
    cfg: BisectConfig,
    say: Callable[[str], None] = print,
    ask: Callable[[str], bool | None] = preflight.ask_terminal,
    probe: Probe = run_probe,
) -> int:
    """Run (or resume, or plan) a bisection; the exit status (0 found, 3 no answer, 130 ^C).

    Input problems are ConfigErrors raised before anything is submitted.
    """
    rows = cfg.probe.rows
    first, last = cfg.images[0], cfg.images[-1]
    gate = inputs.check_gate(cfg.gate, rows, first, last) if cfg.gate else None
    if gate is None:
        inputs.check_ends_differ(first, last)
    b = Bisection(cfg, say, probe)
    b.open(gate)
    n, gpu_hours = b.plan()
    if cfg.dry_run:
        b.dry_run()
        return 0
    if n == 0:
        return b.finish()
    why = consent(cfg, n, gpu_hours, ask)
    say(f"perfgate bisect: submitting ({why})")
    # SIGTERM between a probe's jobs (its session's own handler holds while they run) stops
    # the bisection as Ctrl-C does: the probe in flight is recorded as cancelled, never lost.
    try:
        old = signal.signal(signal.SIGTERM, _terminated)
    except ValueError:  # not the main thread (an embedding program keeps its own handler)
        old = None
    try:
        return b.run()
    except Interrupted as stop:
        gone = ", ".join(stop.cancelled) or "no job was running"
        say(
            f"perfgate bisect: interrupted ({stop.how}): the probe is recorded as cancelled, "
            f"jobs cancelled: {gone}; --resume runs this probe again"
        )
        b.save()
        return stop.code
    finally:
        if old is not None:
            signal.signal(signal.SIGTERM, old)
