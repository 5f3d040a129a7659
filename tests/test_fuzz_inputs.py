"""Malformed baselines and logs: one line on stderr, exit 2, no traceback, bounded time and memory.

Three kinds of cases, all seeded (the same cases every run):
- named cases: each malformed form the reliability section of the README lists;
- mutations: real baselines rows and real log lines with random fields, numbers and bytes
  changed, run through `perfgate validate` / `perfgate parse` in this process (an exception
  other than perfgate's own one-line error fails the test: it would be a traceback);
- processes: a few of them run as the user runs them (`python -m perfgate`), with their
  exit status, stderr, wall time and peak memory (the process's own VmHWM),
  including a 200 MB file of garbage that must stream, not load.
"""

from __future__ import annotations

import copy
import gzip
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

import pytest

from perfgate import cli
from perfgate.catalog.provenance import SHIPPED_DIR

REPO = Path(__file__).resolve().parents[1]
LOGS = REPO / "tests" / "data" / "logs"
pytestmark = pytest.mark.long  # a whole replay session, 1,000 mutated files
SEED = 16
N_MUTATED_ROWS = 1000
N_MUTATED_LOGS = 1000
BIG_MB = 200
POOL = [None, True, False, 0, -1, 1, 3.5, -0.0, 1e308, 10**20, "", "x", "h100", "\n", "\x00",
        "$(id)", [], [1, "a"], {}, {"a": {"b": []}}, "nan", "Infinity"]  # fmt: skip


def _cli(capsys, *argv: str) -> tuple[int, str, str]:
    """Run the perfgate command in this process: anything but its own error propagates."""
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _assert_clean(code: int, out: str, err: str, command: str) -> None:
    assert code in (0, 2), (code, err)
    if code == 2:
        assert err.startswith(f"perfgate {command}: error: ") and err.count("\n") == 1, err
        assert "Traceback" not in err and out == ""
    else:
        assert err == ""


# --- baselines ------------------------------------------------------------------------------

STORED = json.loads((SHIPPED_DIR / "h100.json").read_text())
TEXT = (SHIPPED_DIR / "h100.json").read_text()


def _row(i: int = 0) -> dict:
    return copy.deepcopy(STORED[i])


def _based() -> dict:
    """A stored row with a baseline."""
    return copy.deepcopy(next(r for r in STORED if r.get("baseline")))


def _literal(field: str, text: str) -> str:
    """A stored row whose `field` (or baseline.`field`) is the JSON text given, verbatim."""
    row = _based()
    (row["baseline"] if field in row["baseline"] else row)[field] = 4242.125
    return json.dumps([row]).replace("4242.125", text)


NAMED_BASELINES: dict[str, str | bytes] = {
    **{f"truncated at {n}%": TEXT[: len(TEXT) * n // 100] for n in (0, 1, 10, 50, 99)},
    "NaN step time": _literal("step_time_s", "NaN"),
    "Infinity step time": _literal("step_time_s", "Infinity"),
    "-Infinity gbs": _literal("gbs", "-Infinity"),
    "BOM": "\ufeff" + TEXT,
    "UTF-16": TEXT.encode("utf-16"),
    "latin-1 byte": TEXT.encode()[:100] + b"\xe9" + TEXT.encode()[100:],
    "binary": random.Random(SEED).randbytes(4096),
    "object, not a list": json.dumps({"rows": STORED}),
    "null": "null",
    "a row that is a list": json.dumps([list(_row().items())]),
    "num_gpus as string": json.dumps([_row() | {"num_gpus": "8"}]),
    "num_gpus as float": json.dumps([_row() | {"num_gpus": 8.0}]),
    "num_gpus as bool": json.dumps([_row() | {"num_gpus": True}]),
    "id null": json.dumps([_row() | {"id": None}]),
    "overrides as list": json.dumps([_row() | {"overrides": ["a=1"]}]),
    "notes as object": json.dumps([_row() | {"notes": {"a": 1}}]),
    "baseline as number": json.dumps([_row() | {"baseline": 1.5}]),
    "provenance missing": json.dumps([_row() | {"baseline": {"step_time_s": 1.0}}]),
    "step time 1e400": _literal("step_time_s", "1e400"),
    "gbs of 5000 digits": _literal("gbs", "9" * 5000),
    "num_gpus 10**20": json.dumps([_row() | {"num_gpus": 10**20}]),
    "negative step time": _literal("step_time_s", "-1"),
    "null step time": _literal("step_time_s", "null"),
    "duplicate row": json.dumps([_row(), _row()]),
    "duplicate key": json.dumps([_row()])[:-2] + ', "gbs": 1}]',
    "hostile variant": json.dumps([_row() | {"variant": "x\ntouch /tmp/owned #"}]),
    "nested 100000 deep": "[" * 100000,
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(NAMED_BASELINES))
def test_malformed_baselines_are_one_line_exit_2(name, tmp_path, capsys):
    data = NAMED_BASELINES[name]
    path = tmp_path / "h100.json"
    path.write_bytes(data if isinstance(data, bytes) else data.encode("utf-8", "surrogatepass"))
    code, out, err = _cli(capsys, "validate", str(path))
    _assert_clean(code, out, err, "validate")
    assert code == 2, f"{name} was accepted"
    assert str(path) in err


def test_an_empty_baselines_list_is_valid_and_says_zero_rows(tmp_path, capsys):
    (tmp_path / "h100.json").write_text("[]")
    code, out, err = _cli(capsys, "validate", str(tmp_path), "--json")
    assert (code, err, json.loads(out)) == (0, "", {"rows": {str(tmp_path): 0}, "total": 0})


def _mutate_row(rng: random.Random, row: dict) -> dict:
    for _ in range(rng.randint(1, 3)):
        target = row
        if isinstance(row.get("baseline"), dict) and rng.random() < 0.3:
            target = row["baseline"]
            if isinstance(target.get("provenance"), dict) and rng.random() < 0.4:
                target = target["provenance"]
        action = rng.random()
        key = rng.choice(sorted(target)) if target else "id"
        if action < 0.6:
            target[key] = copy.deepcopy(rng.choice(POOL))
        elif action < 0.8:
            target.pop(key, None)
        else:
            target[rng.choice(["sbatch", "gbs ", "Id", key + "_"])] = rng.choice(POOL)
    return row


def _mutate_text(rng: random.Random, text: bytes) -> bytes:
    i = rng.randrange(len(text) + 1)
    j = min(len(text), i + rng.randint(0, 64))
    cut = rng.random()
    if cut < 0.3:
        return text[:i]
    if cut < 0.6:
        return text[:i] + rng.randbytes(rng.randint(1, 16)) + text[j:]
    return text[:i] + text[j:]


def test_mutated_baselines_never_escape_as_a_traceback(tmp_path, capsys):
    rng = random.Random(SEED)
    outcomes = {0: 0, 2: 0}
    for n in range(N_MUTATED_ROWS):
        rows = [_mutate_row(rng, _row(rng.randrange(len(STORED))))]
        text = json.dumps(rows).encode("utf-8", "surrogatepass")
        if rng.random() < 0.2:
            text = _mutate_text(rng, text)
        path = tmp_path / str(n) / "h100.json"
        path.parent.mkdir()
        path.write_bytes(text)
        code, out, err = _cli(capsys, "validate", str(path))
        _assert_clean(code, out, err, "validate")
        outcomes[code] += 1
    # Most mutations break a rule; some (a changed note, a dropped optional field) do not.
    assert outcomes[2] > N_MUTATED_ROWS // 2 and outcomes[0] > 0, outcomes
    print(f"mutated baselines: {outcomes}")


# --- logs -----------------------------------------------------------------------------------

NEMO2 = (LOGS / "nemo2_b200_llama3_8b.log").read_bytes()
MEGATRON = (LOGS / "megatron_mixtral_h100.log").read_bytes()
BRIDGE = (LOGS / "bridge_llama31_8b_b200.log").read_bytes()
TITAN = (LOGS / "torchtitan_gc_profiler.log").read_bytes()


def _nemo2_steps(times: list[str], first: int = 45) -> bytes:
    line = (
        "Training epoch 0, iteration {i}/99 | lr: 6.9e-06 | global_batch_size: 128 | "
        "global_step: {i} | reduced_train_loss: 11.96 | train_step_timing in s: {t} | "
        "consumed_samples: 5888\n"
    )
    return "".join(line.format(i=first + k, t=t) for k, t in enumerate(times)).encode()


D5000 = b"9" * 5000

NAMED_LOGS: dict[str, tuple[bytes, int]] = {  # content, expected exit status
    "empty": (b"", 2),
    "binary": (random.Random(SEED).randbytes(1 << 20), 2),
    "NUL bytes": (bytes(1 << 20), 2),
    "gzip magic, then garbage": (b"\x1f\x8b" + random.Random(SEED).randbytes(4096), 2),
    "truncated gzip": (gzip.compress(NEMO2)[:200], 2),
    "CRLF line ends": (NEMO2.replace(b"\n", b"\r\n"), 0),
    "CR only (tqdm redraws)": (NEMO2.replace(b"\n", b"\r"), 0),
    "gzip of a real log": (gzip.compress(MEGATRON), 0),
    "backwards steps (a restart)": (_nemo2_steps(["6.0"] * 10) + _nemo2_steps(["6.1"] * 8, 40), 0),
    "NaN step times": (_nemo2_steps(["6.0"] * 5 + ["nan"] * 5), 0),
    "negative step times": (_nemo2_steps(["6.0"] * 5 + ["-6.0"] * 5), 2),
    "zero step times": (_nemo2_steps(["0"] * 10), 2),
    "huge step times": (_nemo2_steps(["1e400"] * 10), 2),
    "no line break at all": (NEMO2.replace(b"\n", b" "), 0),
    "cut mid-number": (NEMO2[: NEMO2.rindex(b"timing in s: 6.") + 16], 0),
    # Each of these raised from inside the parser before (found by the mutations below):
    "global_step 1e999": (NEMO2.replace(b"global_step: 47", b"global_step: 1e999"), 0),
    "nan iterations 1e999": (MEGATRON.replace(b"nan iterations:   0", b"nan iterations: 1e999"), 0),
    "a 400-digit step": (MEGATRON.replace(b"iteration       44/", b"iteration 9" + b"9" * 399), 0),
    "a 400-digit TorchTitan step": (TITAN.replace(b"step: 250", b"step: " + b"9" * 400), 0),
    "Bridge iteration line without its time": (BRIDGE.replace(b"(ms): 43824.6", b"(ms): x"), 0),
    # Tracebacks before #24: float('--inf') (NUM matched it), OverflowError in MSER-5 and
    # in the mean of the summary.
    "a --inf step time": (_nemo2_steps(["6.0"] * 19 + ["--inf"]), 0),
    "1e300 step times": (_nemo2_steps(["1e300", "2e300"] * 10), 0),
    "1.7e308 step times": (_nemo2_steps(["1.7e308"] * 20), 0),
    "a conflicting repeat": (_nemo2_steps(["6.0"] * 10) + _nemo2_steps(["99"], 54), 0),
    # int() of more than 4300 digits raises: step numbers and ranks are bounded first.
    "a 5000-digit step": (MEGATRON.replace(b"iteration       44/", b"iteration " + D5000 + b"/"),
                          0),
    "a 5000-digit global_step": (
        NEMO2.replace(b"global_step: 47", b"global_step: " + D5000)
        .replace(b"iteration 47/", b"iteration " + D5000 + b"/"), 0),
    "a 5000-digit TorchTitan step": (TITAN.replace(b"step: 250", b"step: " + D5000), 0),
    "a 5000-digit rank": (BRIDGE.replace(b"Step Time", b"[Rank " + D5000 + b"] Step Time", 1), 0),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(NAMED_LOGS))
def test_malformed_logs_are_one_line_or_parse(name, tmp_path, capsys):
    data, expected = NAMED_LOGS[name]
    path = tmp_path / "slurm-1.out"
    path.write_bytes(data)
    code, out, err = _cli(capsys, "parse", str(path), "--json")
    _assert_clean(code, out, err, "parse")
    assert code == expected, err
    if code == 2:
        assert str(path) in err
    else:
        assert json.loads(out)["summary"]["n_steps"] > 0


@pytest.mark.parametrize("log", [NEMO2, MEGATRON])
def test_crlf_logs_give_the_same_step_times(log, tmp_path, capsys):
    times = []
    for name, data in (("lf", log), ("crlf", log.replace(b"\n", b"\r\n"))):
        (tmp_path / name).write_bytes(data)
        _, out, _ = _cli(capsys, "parse", str(tmp_path / name), "--json")
        times.append([s["step_time_s"] for s in json.loads(out)["steps"]])
    assert times[0] == times[1] and len(times[0]) >= 4
    assert times[0][:2] in ([6.08, 6.061], [5.4449, 5.5338])


_NUMBERS = [b"nan", b"-1", b"1e999", b"inf", b"", b"0", b"-0.0", b"9" * 400, b"1.2.3", b"\xff",
            b"--inf", b"1e300", b"2."]  # fmt: skip


def _mutate_log(rng: random.Random, text: bytes) -> bytes:
    lines = text.split(b"\n")
    for _ in range(rng.randint(1, 6)):
        if not lines:  # a short log can lose every line
            break
        k = rng.randrange(len(lines))
        action = rng.random()
        if action < 0.4:  # a number of a step line becomes something else
            words = lines[k].split(b" ")
            w = rng.randrange(len(words))
            words[w] = rng.choice(_NUMBERS)
            lines[k] = b" ".join(words)
        elif action < 0.55:
            lines.insert(k, lines[rng.randrange(len(lines))])  # duplicated step
        elif action < 0.7:
            lines[k], lines[-1 - k] = lines[-1 - k], lines[k]  # out of order
        elif action < 0.85:
            del lines[k]
        else:
            lines[k] = _mutate_text(rng, lines[k])
    return b"\n".join(lines)


def test_mutated_logs_never_escape_as_a_traceback(tmp_path, capsys):
    rng = random.Random(SEED)
    sources = [p.read_bytes() for p in sorted(LOGS.glob("*.log"))]
    outcomes = {0: 0, 2: 0}
    for n in range(N_MUTATED_LOGS):
        path = tmp_path / f"{n}.log"
        path.write_bytes(_mutate_log(rng, rng.choice(sources)))
        code, out, err = _cli(capsys, "parse", str(path), "--json")
        _assert_clean(code, out, err, "parse")
        if code == 0:
            json.loads(out)
        outcomes[code] += 1
    assert outcomes[0] > 0 and outcomes[2] > 0, outcomes
    print(f"mutated logs: {outcomes}")


# --- as a process: exit status, stderr, time and memory -------------------------------------


# `python -m perfgate ARGV` that writes its own peak RSS (VmHWM, kB) to $HWM_FILE at exit.
# wait4's ru_maxrss would not do: a child started by vfork (subprocess does) inherits the
# parent's high-water mark through exec, so a big pytest process (the whole suite) made
# every child look 214 MiB.
_RUN_AND_REPORT_HWM = (
    "import atexit, os, runpy, sys\n"
    "def hwm():\n"
    "    kb = open('/proc/self/status').read().split('VmHWM:')[1].split()[0]\n"
    "    open(os.environ['HWM_FILE'], 'w').write(kb)\n"
    "atexit.register(hwm)\n"
    "sys.argv = ['perfgate', *sys.argv[1:]]\n"
    "runpy.run_module('perfgate', run_name='__main__', alter_sys=True)\n"
)


def _process(argv: list[str], timeout_s: float) -> tuple[int, str, float, float]:
    """(exit status, stderr, CPU seconds, peak RSS in MiB) of `python -m perfgate argv`.

    CPU seconds (user + system, from the kernel's accounting of the child), not wall time: a
    loaded test machine stretches the wall clock, not the work. timeout_s is a hang guard,
    ten times the bound a test asserts, so a slow machine never turns into a kill.
    """
    with tempfile.NamedTemporaryFile("r") as hwm:
        proc = subprocess.Popen(
            [sys.executable, "-c", _RUN_AND_REPORT_HWM, *argv],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            env={**os.environ, "HWM_FILE": hwm.name},
        )
        killer = threading.Timer(10 * timeout_s, proc.kill)
        killer.start()
        err = proc.stderr.read().decode()  # type: ignore[union-attr]
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        killer.cancel()
        proc.stderr.close()  # type: ignore[union-attr]
        peak_kib = float(hwm.read() or "inf")
    return proc.returncode, err, usage.ru_utime + usage.ru_stime, peak_kib / 1024


@pytest.fixture(scope="session")
def big_garbage(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """200 MB, mostly a hole (NULs, no line break), with garbage and step-like lines in it."""
    path = tmp_path_factory.mktemp("fuzz") / "garbage.log"
    rng = random.Random(SEED)
    with open(path, "wb") as f:
        f.truncate(BIG_MB << 20)
        for offset in range(0, BIG_MB << 20, 16 << 20):
            f.seek(offset)
            f.write(rng.randbytes(1 << 16) + b"\ntrain_step_timing in s: 6.0 | iteration\n")
            f.write(_nemo2_steps(["6.0", "nan", "-1", "1e400"]) + rng.randbytes(1 << 16))
    return path


def test_200mb_of_garbage_streams_in_bounded_time_and_memory(big_garbage):
    code, err, cpu_s, rss_mib = _process(["parse", str(big_garbage)], timeout_s=120)
    assert code == 2 and err.count("\n") == 1 and "Traceback" not in err, err
    assert err.startswith(f"perfgate parse: error: {big_garbage}: ")
    # Streamed: 4 MiB blocks; a line without a break is cut at 64 MiB (logs/scan.py). Loading
    # the file would take > 200 MiB.
    assert rss_mib < 180, rss_mib
    assert cpu_s < 60, cpu_s


@pytest.mark.parametrize(
    ("argv", "problem"),
    [
        (["validate", "{d}/h100.json"], "not valid JSON: NaN is not a JSON number"),
        (["parse", "{d}/binary.log"], "no step-time lines found"),
        (["compare", "--candidate", "{d}/binary.log", "--baseline-step-time", "1"], "no step"),
        (["report", "{d}/h100.json"], "h100.json: not valid JSON: NaN is not a JSON number"),
    ],
)
def test_as_a_process_bad_input_is_one_line_and_exit_2(argv, problem, tmp_path):
    (tmp_path / "h100.json").write_text('[{"id": NaN}]')
    (tmp_path / "binary.log").write_bytes(random.Random(SEED).randbytes(1 << 20))
    code, err, cpu_s, rss_mib = _process([a.format(d=tmp_path) for a in argv], timeout_s=60)
    assert code == 2 and err.count("\n") == 1 and "Traceback" not in err, err
    assert problem in err and str(tmp_path) in err
    assert cpu_s < 30 and rss_mib < 180


# --- hostile and broken logs through a whole replay session ---------------------------------
#
# One `pytest --replay` session as the user runs it (a subprocess, --html and --junitxml), a
# row per log: the plot, the report, results.json, JUnit, the history and the failure
# diagnosis all see every log, in bounded time and memory. Each of these hung the session,
# crashed it (INTERNALERROR, half the verdicts), misled the verdict or reached the terminal.

_RUN_PYTEST_AND_REPORT_HWM = _RUN_AND_REPORT_HWM.replace(
    "sys.argv = ['perfgate', *sys.argv[1:]]\n"
    "runpy.run_module('perfgate', run_name='__main__', alter_sys=True)\n",
    "import pytest\nsys.exit(pytest.main(sys.argv[1:]))\n",
)
DENSE_STEPS = 200_000


def _steps(times: list[str], first: int = 0) -> bytes:
    return _nemo2_steps(times, first)


def _clean(n: int = 60) -> list[str]:
    rng = random.Random(SEED)
    return [f"{6.0 + rng.gauss(0, 0.01):.4f}" for _ in range(n)]


def _dense(n: int) -> bytes:
    rng = random.Random(SEED)
    return b"".join(_steps([f"{6.0 + rng.gauss(0, 0.01):.4f}"], i) for i in range(n))


def _cut_line() -> bytes:
    """Step 60's line, cut while written: `... train_step_timing in s: 2.` (2.5), no break."""
    line = _steps(["2.5"], 60)
    return line[: line.index(b"in s: 2.") + len(b"in s: 2.")]


def _session_logs() -> dict[str, tuple[bytes, str, str | None]]:
    """variant -> (log, expected verdict, expected INFRA cause)."""
    clean = _clean()
    oom = b"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.50 GiB.\n"
    return {
        "nan0": (_steps(["nan", *clean[1:]]), "INFRA", "NAN"),  # passed as warm-up, or crashed
        "inf": (_steps([*clean[:30], "inf", *clean[31:]]), "INFRA", "NAN"),  # hung the plot
        "e400": (_steps([*clean[:30], "1e400", *clean[31:]]), "INFRA", "NAN"),
        "e300": (_steps([*clean[:30], "1e300", *clean[31:]]), "PASS", None),  # OverflowError
        "all-e300": (_steps(["1e300"] * 60), "REGRESSION", None),
        "long-line": (  # a 100 kB line without a break took minutes of regex
            _steps(clean[:20]) + b"x" * 100_000 + b"\n" + oom,
            "INFRA",
            "OOM",
        ),
        "duplicate": (  # a second copy at 99 s was a +3608% REGRESSION
            _steps(clean[:31]) + _steps(["99.0"], 30) + _steps(clean[31:], 31),
            "INFRA",
            "BAD_LOG",
        ),
        "truncated": (_steps(clean) + _cut_line(), "PASS", None),  # `in s: 2.` read as 2.0
        "digits": (  # 400-digit step numbers
            _steps(clean).replace(b"iteration ", b"iteration 9" + b"9" * 399 + b"0"),
            "PASS",
            None,
        ),
        "escapes": (
            b"\x1b[2J\x1b[H===== 57 passed =====\n\x1b]52;c;eA==\x07\n" + oom,
            "INFRA",
            "OOM",
        ),
        "dense": (_dense(DENSE_STEPS), "PASS", None),
    }


def test_hostile_logs_go_through_a_whole_replay_session(tmp_path):
    from rowfactory import make_row

    from perfgate import catalog
    from perfgate.catalog import Baseline, Provenance

    for name in ("conftest.py", "pytest.ini"):
        (tmp_path / name).write_bytes((REPO / name).read_bytes())
    subprocess.run(["cp", "-r", str(REPO / "benchmarks"), str(tmp_path)], check=True)
    logs = _session_logs()
    rows = []
    for variant, (data, _, _) in logs.items():
        row = make_row(  # the defaults: Nemotron4 15B, 64 H100s, TP 2
            variant=variant,
            baseline=Baseline(step_time_s=6.0, provenance=Provenance(source="t"), tolerance=0.1),
        )
        rows.append(row)
        log = tmp_path / "logs" / row.id / "log-run.out"
        log.parent.mkdir(parents=True)
        log.write_bytes(data)
    (tmp_path / "baselines").mkdir()
    (tmp_path / "baselines" / "h100.json").write_text(catalog.dump_rows(rows))
    argv = ["-p", "no:cacheprovider", "--replay", "logs", "--html", "report.html",
            "--self-contained-html", "--junitxml", "junit.xml", "--noise-cv", "0.005",
            "--noise-df", "20"]  # fmt: skip
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    with tempfile.NamedTemporaryFile("r") as hwm:
        proc = subprocess.run(
            [sys.executable, "-c", _RUN_PYTEST_AND_REPORT_HWM, *argv],
            cwd=tmp_path,
            capture_output=True,
            env={**os.environ, "HWM_FILE": hwm.name},
            timeout=3000,  # a hang guard; the bound below is CPU time, which load does not stretch
        )
        rss_mib = float(hwm.read() or "inf") / 1024
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu_s = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    out = proc.stdout.decode(errors="replace") + proc.stderr.decode(errors="replace")
    assert proc.returncode == 1, out[-3000:]  # failures and errors, not INTERNALERROR (3)
    assert "INTERNALERROR" not in out and "Traceback" not in out, out[-3000:]
    assert "\x1b" not in out and "\\x1b[2J" in out
    records = json.loads((tmp_path / "perfgate-results" / "results.json").read_text())["rows"]
    got = {}
    for row in rows:
        rec = records[row.id]
        got[row.variant] = (rec["verdict"], (rec.get("diagnosis") or {}).get("cause"))
    assert got == {v: (verdict, cause) for v, (_, verdict, cause) in logs.items()}
    junit = (tmp_path / "junit.xml").read_text()
    assert junit.count("<testcase ") >= len(rows)
    report = (tmp_path / "report.html").read_text()
    assert all(row.id in report for row in rows) and len(report) < 5_000_000
    dense = next(r for r in rows if r.variant == "dense")
    assert records[dense.id]["runs"][0]["n_steps"] == DENSE_STEPS
    truncated = next(r for r in rows if r.variant == "truncated")
    assert records[truncated.id]["measured"]["n_steps"] == 60
    # The report re-renders from results.json alone.
    again = tmp_path / "again.html"
    code, err, _, _ = _process(
        ["report", str(tmp_path / "perfgate-results" / "results.json"), "--html", str(again)], 120
    )
    assert code == 0 and err == "" and all(row.id in again.read_text() for row in rows), err
    assert cpu_s < 300, cpu_s
    assert rss_mib < 400, rss_mib
    print(f"replay session: {len(rows)} hostile logs, {cpu_s:.0f} CPU-s, {rss_mib:.0f} MiB peak")
