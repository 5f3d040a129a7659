"""Dense logs: the template lane and the column resolver give what the record path gives.

perfgate.logs reads the step lines of NeMo 2 and Megatron logs through templates learned
from the first lines (perfgate.logs.template) into columns (perfgate.logs.table), resolved by
perfgate.logs.resolve. Each test here parses the same text three ways: as shipped, without
templates, and without templates or columns (every record a Record object, the generic
resolver), and wants one answer.
"""

from __future__ import annotations

import json
import random
import resource
import time
from pathlib import Path

import pytest
from logdata import LOGS

from perfgate import logs
from perfgate.errors import LogParseError
from perfgate.logs import assemble, template
from perfgate.logs.table import StepTable

NEMO2_LINE = (
    "Training epoch 0, iteration {i}/99 | lr: 6.9e-06 | global_batch_size: 128 | "
    "global_step: {i} | max_memory_reserved: 127785762816 | max_memory_allocated: "
    "115792977920 | reduced_train_loss: {loss} | train_step_timing in s: {t} | "
    "TFLOPS_per_GPU: 1.249e+03 | consumed_samples: 5888"
)
MEGATRON_LINE = (
    " [2024-04-06 02:59:36] iteration {i:8d}/     100 | consumed samples:         5504 | "
    "elapsed time per iteration (ms): {ms} | throughput per GPU (TFLOP/s/GPU): 239.8 | "
    "learning rate: 8.600000E-06 | global batch size:   128 | lm loss: {loss} | "
    "loss scale: 1.0 | grad norm: 1.426 | number of skipped iterations:   0 | "
    "number of nan iterations:   {nan} |"
)
ODD_NUMBERS = ["nan", "NaN", "-inf", "inf", "1e400", "--inf", "1.2.3", "5,856", "", "x", "+.5",
               "5.", "1e-3", "0", "-0.0", "9" * 40, "6.0abc", "1E+2"]  # fmt: skip


def _as_dict(series: logs.StepSeries) -> str:
    return json.dumps({**logs.to_dict(series), "valid": series.valid}, sort_keys=True)


def _three_ways(text: str, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The parse of text as shipped, without templates, and without templates or columns."""
    out = []
    for templates, columns in ((True, True), (False, True), (False, False)):
        with monkeypatch.context() as m:
            if not templates:
                m.setattr(template, "MAX_TEMPLATES", 0)
            if not columns:
                m.setattr(assemble, "RecordTable", type("NoTable", (), {}))
            try:
                out.append(_as_dict(logs.parse_text(text)))
            except LogParseError as e:
                out.append(f"error: {e}")
    return out


def _dense_text(rng: random.Random, n: int = 120) -> str:
    """A NeMo 2 or Megatron log with labels, restarts, repeats, odd numbers and glue."""
    megatron = rng.random() < 0.5
    labels = rng.choice([None, "srun", "torchrun", "stamped"])
    lines = []
    step = 0
    for _ in range(n):
        t = f"{6 + rng.gauss(0, 0.05):.4f}"
        loss = f"{rng.uniform(1, 12):.6E}" if megatron else f"{rng.uniform(1, 12):.3f}"
        if rng.random() < 0.08:
            t = rng.choice(ODD_NUMBERS)
        if rng.random() < 0.04:
            loss = rng.choice(ODD_NUMBERS)
        nan = rng.choice(["0"] * 20 + ["1", "nan"])
        if megatron:
            ms = t if t in ODD_NUMBERS else f"{float(t) * 1000:.1f}"
            line = MEGATRON_LINE.format(i=step + 1, ms=ms, loss=loss, nan=nan)
        else:
            line = NEMO2_LINE.format(i=step, t=t, loss=loss)
        if rng.random() < 0.05:
            line = line.replace(" | lr: 6.9e-06", "").replace(" | grad norm: 1.426", "")
        if rng.random() < 0.03:
            line = line.replace("global_batch_size: 128", "global_batch_size: None")
        if rng.random() < 0.03:
            line = "\x1b[32m" + line + "\x1b[0m"
        rank = rng.choice([0, 0, 0, 1, 7, 12, 123])
        if labels == "srun":
            line = f"{rank:>2}: {line}"
        elif labels == "torchrun":
            line = f"[default{rank}]:{line}"
        elif labels == "stamped":
            line = f"[2025-10-17T11:32:{rng.randrange(60):02d}+08:00] {rank}: {line}"
        if rng.random() < 0.03 and lines:
            lines[-1] += line  # glued: no line break between two records
        else:
            lines.append(line)
        r = rng.random()
        if r < 0.05:
            lines.append(lines[-1])  # an identical repeat
        elif r < 0.08:
            step = max(0, step - rng.randrange(1, 10))  # a restart
        elif r < 0.1:
            pass  # the same step again, maybe with another time
        else:
            step += rng.choice([1, 1, 1, 1, 2, 5])
    return "\n".join(lines) + "\n"


def test_every_test_log_reads_the_same_three_ways(monkeypatch):
    repo = LOGS.parents[2]
    paths = [
        p
        for folder in (repo / "tests" / "data", repo / "examples")
        for p in sorted(folder.rglob("*"))
        if p.is_file() and (p.suffix in (".log", ".txt", ".out") or p.name.startswith("log-"))
    ]
    assert len(paths) > 15
    for path in paths:
        text = path.read_text(errors="replace")
        a, b, c = _three_ways(text, monkeypatch)
        assert a == b == c, path


@pytest.mark.parametrize("seed", range(40))
def test_generated_dense_logs_read_the_same_three_ways(seed, monkeypatch):
    a, b, c = _three_ways(_dense_text(random.Random(seed)), monkeypatch)
    assert a == b == c


@pytest.mark.parametrize("fmt", ["nemo2", "megatron", "srun", "stamped"])
def test_clean_dense_logs_read_in_bulk_the_same_three_ways(fmt, monkeypatch):
    # Thousands of lines of one shape: the trusted template reads them a column at a time.
    rng = random.Random(7)
    lines = []
    for i in range(3000):
        t = 6 + rng.gauss(0, 0.05)
        if fmt == "megatron":
            line = MEGATRON_LINE.format(i=i + 1, ms=f"{t * 1000:.1f}", loss="1.8E+00", nan=0)
        else:
            line = NEMO2_LINE.format(i=i, t=f"{t:.4f}", loss="2.5")
        if fmt == "srun":
            line = f"{i % 3}: {line}"
        elif fmt == "stamped":
            line = f"[2025-10-17T11:32:{i % 60:02d}+08:00] {line}"
        lines.append(line)
        if i % 500 == 7:  # another line of the family now and then: read one by one
            lines.append("saving checkpoint at iteration 5 to /ckpt")
    a, b, c = _three_ways("\n".join(lines) + "\n", monkeypatch)
    assert a == b == c and '"n_steps": 3000' in a


def test_a_template_that_disagrees_with_the_record_path_is_dropped(monkeypatch):
    # Sabotage: every template reads step times 1 s too high. The check of its first lines
    # against the record path must catch it; the parse stays right.
    real = template.learn

    def skewed(line, rec):
        t = real(line, rec)
        if t is not None:
            t.step_of = lambda groups, read, f=t.step_of: f(groups, read) + 1
            t.checked = 0
        return t

    monkeypatch.setattr(template, "learn", skewed)
    text = "".join(NEMO2_LINE.format(i=i, t=6.0, loss=1.0) + "\n" for i in range(200))
    s = logs.parse_text(text)
    assert s.step_numbers == list(range(200))


def test_a_dense_log_is_columns_not_objects():
    text = "".join(NEMO2_LINE.format(i=i, t=6.0, loss=1.0) + "\n" for i in range(50))
    s = logs.parse_text(text)
    assert isinstance(s.steps, StepTable)
    assert s.steps[-1].step == 49 and s.steps[3].mem_peak_gib == pytest.approx(107.84, abs=0.01)
    assert s.step_times == [6.0] * 50 and len(s.steps[10:20]) == 10


def _write_dense(path: Path, n: int) -> None:
    rng = random.Random(1)
    with path.open("w") as f:
        for i in range(n):
            f.write(NEMO2_LINE.format(i=i, t=f"{6 + rng.gauss(0, 0.03):.4f}", loss="2.5") + "\n")


def test_a_million_step_log_parses_in_seconds_at_tens_of_bytes_a_step(tmp_path):
    # A 1 GiB log of 4.17 M steps took > 600 s and 2.9 GB (0.7 kB a step): Step objects.
    path = tmp_path / "dense.log"
    n = 300_000
    _write_dense(path, n)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    start = time.process_time()
    s = logs.parse_files([path])
    took = time.process_time() - start
    assert len(s.steps) == n and s.valid
    # Columns: 8 (step) + 8 (time) + 4 (rank) + 8 per field (4 fields): 52 bytes a step.
    held = sum(a.itemsize * len(a) for a in (s.steps.numbers, s.steps.times, s.steps.ranks))
    held += sum(c.values.itemsize * len(c.values) for c in s.steps.fields.values())
    assert held / n < 80, held / n
    grown_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    assert grown_kib * 1024 / n < 400, grown_kib  # peak while parsing, the file's blocks too
    # CPU time, a guard against a per-line cost that grows with the log (the rate itself is
    # scripts/bench_parse.py's figure: about 240k lines/s on an idle core)
    assert took < 60, took
