"""The runs of the check: which row, the product path (pytest), direct launches, their files.

The product path is the suite itself: `pytest --executor local -k <row> --results-dir ..
--html ..`, which plans, submits (submitit's local executor), launches the rank with
`python -m perfgate.workload spec.json`, collects steps.json and judges the row. On a GPU the
A/A and A/B pairs start the same entry directly, one process per rank with RANK / LOCAL_RANK /
WORLD_SIZE / MASTER_ADDR / MASTER_PORT, as the local executor does; --cpu starts its runner
(gpucheck.runner) the same way. Every run's folder is read back by read_run.
"""

from __future__ import annotations

import dataclasses
import json
import os
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gpucheck.follow import LogFollower
from gpucheck.wheels import Refused
from perfgate import catalog
from perfgate.catalog.rows import Row, canonical_id
from perfgate.catalog.schema import row_to_dict
from perfgate.logs import parse_files, stepfile
from perfgate.workload.deviceclock import CLOCK_FILE
from perfgate.workload.deviceclock import read_clock as read_device_clock
from perfgate.workload.megatron_core.clock import SIDECAR, read_sidecar
from perfgate.workload.megatron_core.face import env_defaults
from perfgate.workload.spec import WorkloadSpec

BACKEND = "megatron_core"
# The CPU check's model: the row's architecture shrunk to seconds of CPU time per run.
CPU_SHAPE = {"seq_len": 128, "mbs": 2, "gbs": 4}
CPU_OVERRIDES = {
    "device": "cpu",
    "model.num_layers": 2,
    "model.hidden_size": 64,
    "model.ffn_hidden_size": 256,
    "model.num_attention_heads": 4,
    "model.num_query_groups": 2,
    "model.vocab_size": 1024,
}


def check_row(baselines: Path, gpu: str) -> Row:
    """The catalog's one 1-GPU megatron_core row of this GPU."""
    rows = catalog.load_catalog(baselines).select(gpu=gpu, num_gpus="1", backend=BACKEND)
    if len(rows) != 1:
        raise Refused(
            f"gpu-check: expected one 1-GPU {BACKEND} row for {gpu} in {baselines}, "
            f"found {len(rows)}"
        )
    return rows[0]


def cpu_row(row: Row) -> Row:
    """The row shrunk for the CPU check (same id: the suite runs it as that row)."""
    notes = (*row.notes, "gpu-check --cpu: shrunk to a 2-layer model for a CPU run")
    return dataclasses.replace(
        row, **CPU_SHAPE, overrides={**row.overrides, **CPU_OVERRIDES}, notes=notes
    )


def tp2_row(row: Row) -> Row:
    """The (CPU) row on 2 ranks with tensor parallelism 2."""
    wide = dataclasses.replace(row, tp=2, num_gpus=2)
    return dataclasses.replace(wide, id=canonical_id(wide))


def write_catalog(rows: list[Row], folder: Path) -> Path:
    """A baselines folder holding these rows (one <gpu>.json per GPU), as the suite reads it."""
    folder.mkdir(parents=True, exist_ok=True)
    for gpu in sorted({r.gpu for r in rows}):
        data = [row_to_dict(r) for r in rows if r.gpu == gpu]
        (folder / f"{gpu}.json").write_text(json.dumps(data, indent=1) + "\n")
    catalog.load_catalog(folder)  # the suite's own validation, before anything runs
    return folder


@dataclass
class RunData:
    """One launch's files read back: both clocks, the log's parse, the outcome."""

    label: str
    run_dir: Path
    wall_s: float
    exit_code: int
    steps: list[int] = field(default_factory=list)
    host_s: list[float] = field(default_factory=list)  # steps.json: perfgate's timer
    second_s: list[float] = field(default_factory=list)  # sidecar: CUDA events (CPU: realtime)
    second_clock: str | None = None
    log_steps: list[int] = field(default_factory=list)
    log_s: list[float] = field(default_factory=list)  # rank 0's log parsed by perfgate.logs
    log_format: str | None = None
    arrivals: list[float] = field(default_factory=list)  # the parent's clock (gpucheck.follow)
    tflops: list[float | None] = field(default_factory=list)  # steps.json (NeMo's callback)
    losses: list[float | None] = field(default_factory=list)
    versions: dict[str, str] = field(default_factory=dict)
    problem: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready, paths as strings."""
        out = dataclasses.asdict(self)
        out["run_dir"] = str(self.run_dir)
        return out


def read_run(label: str, run_dir: Path, wall_s: float, exit_code: int) -> RunData:
    """Read steps.json, the sidecar and rank 0's log of a launch (what exists of them)."""
    run = RunData(label, run_dir, wall_s, exit_code)
    problems = []
    try:
        record = stepfile.read(run_dir / "steps.json")
        run.steps = [int(s["step"]) for s in record.steps]
        run.host_s = [float(s["step_time_s"]) for s in record.steps]
        run.losses = [s.get("loss") for s in record.steps]
        run.tflops = [s.get("tflops_per_gpu") for s in record.steps]
        run.versions = dict(record.versions)
        if record.status != "completed":
            problems.append(f"steps.json status {record.status}: {record.error}")
    except Exception as e:
        problems.append(str(e))
    try:
        sidecar = read_clock(run_dir)
        run.second_s = [float(x) for x in sidecar["second_step_time_s"]]
        run.second_clock = sidecar["second_clock"]
    except Exception as e:
        problems.append(str(e))
    log = run_dir / "rank-0.log"
    try:
        series = parse_files([log])
        run.log_steps = [s.step for s in series.steps]
        run.log_s = [s.step_time_s for s in series.steps]
        run.log_format = series.format
    except Exception as e:
        problems.append(f"{log.name}: {e}")
    if exit_code:
        problems.insert(0, f"exit code {exit_code}")
    run.problem = "; ".join(problems) or None
    return run


def read_clock(run_dir: Path) -> dict[str, Any]:
    """The launch's second clock: megatron_core.json (megatron_core) or device_clock.json."""
    if (run_dir / SIDECAR).exists():
        return read_sidecar(run_dir / SIDECAR)
    if (run_dir / CLOCK_FILE).exists():
        return read_device_clock(run_dir / CLOCK_FILE)
    raise ValueError(f"no second clock in {run_dir} ({SIDECAR} or {CLOCK_FILE})")


def free_port() -> int:
    """A TCP port free on this host now (for torch.distributed's rendezvous)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_ranks(
    argv: list[str], ranks: int, env: dict[str, str], timeout_s: float, logs: list[Path]
) -> int:
    """Start argv once per rank, as the local executor does; wait; the first failing status."""
    port = str(free_port())
    start = time.monotonic()
    procs, files = [], []
    for r in range(ranks):
        renv = {
            **env,
            "RANK": str(r),
            "LOCAL_RANK": str(r),
            "WORLD_SIZE": str(ranks),
            "LOCAL_WORLD_SIZE": str(ranks),
            "MASTER_ADDR": "127.0.0.1",
            "MASTER_PORT": port,
        }
        files.append(open(logs[r], "wb"))  # noqa: SIM115 (closed below)
        procs.append(subprocess.Popen(argv, env=renv, stdout=files[-1], stderr=subprocess.STDOUT))
    codes = []
    try:
        for p in procs:
            left = max(1.0, timeout_s - (time.monotonic() - start))
            codes.append(p.wait(timeout=left))
    except subprocess.TimeoutExpired:
        codes = [124] * ranks
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        for f in files:
            f.close()
    return next((c for c in codes if c), 0)


def launch(
    python: str,
    spec: WorkloadSpec,
    ranks: int,
    env: dict[str, str],
    timeout_s: float,
) -> RunData:
    """Start `python -m perfgate.workload spec.json` once per rank; wait; read the run."""
    run_dir = Path(spec.output_dir)
    spec_path = spec.write(run_dir / "spec.json")
    start = time.monotonic()
    argv = [python, "-m", "perfgate.workload", str(spec_path)]
    logs = [run_dir / f"rank-{r}.log" for r in range(ranks)]
    follower = LogFollower(logs[0])
    follower.start()
    code = start_ranks(argv, ranks, env, timeout_s, logs)
    run = read_run(spec.label, run_dir, time.monotonic() - start, code)
    run.arrivals = follower.stop()
    return run


@dataclass
class ProductRun:
    """The suite's own run of the row: its verdict record and the launch it made."""

    exit_code: int
    wall_s: float
    command: list[str]
    record: dict[str, Any] | None
    run: RunData | None
    output_tail: str


def pytest_command(
    python: str,
    row_id: str,
    results: Path,
    html: Path,
    steps: int,
    baselines: Path | None,
) -> list[str]:
    """The suite's command line for one row on this machine (options in --opt=value form)."""
    cmd = [python, "-m", "pytest", "-p", "no:cacheprovider"]
    # Plugin autoload is off (the GPU machine's own pytest plugins need not match the carried
    # pytest): the two the suite uses are named.
    cmd += ["-p", "pytest_metadata.plugin", "-p", "pytest_html.plugin"]
    cmd += [
        "--executor=local",
        "-k",
        row_id,
        f"--steps={steps}",
        f"--results-dir={results}",
        f"--history={results / 'history.sqlite'}",
        f"--html={html}",
        "--self-contained-html",
    ]
    if baselines is not None:
        cmd.append(f"--baselines-dir={baselines}")
    return cmd


def product_run(
    cmd: list[str], row_id: str, results: Path, env: dict[str, str], timeout_s: float, cwd: Path
) -> ProductRun:
    """Run the suite for the row; read results.json and the launch's files."""
    start = time.monotonic()
    env = {**env, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    follower = LogFollower(results / "**" / "rank-0.log")
    follower.start()
    try:
        proc = subprocess.run(
            cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout_s, check=False
        )
        code, tail = proc.returncode, (proc.stdout + proc.stderr)[-4000:]
    except subprocess.TimeoutExpired as e:
        code, tail = 124, f"timed out after {timeout_s:.0f} s: {str(e.stdout)[-2000:]}"
    wall = time.monotonic() - start
    arrivals = follower.stop()
    record, run = None, None
    path = results / "results.json"
    if path.exists():
        record = json.loads(path.read_text())["rows"].get(row_id)
    runs = (record or {}).get("runs") or []
    if runs and runs[0].get("log_path"):
        run_dir = Path(runs[0]["log_path"]).parent
        run = read_run("product", run_dir, wall, 0)
        run.arrivals = arrivals if follower.path == str(run_dir / "rank-0.log") else []
    return ProductRun(code, wall, cmd, record, run, tail)


def child_env(sites: list[Path], repo: Path) -> dict[str, str]:
    """The environment of a stage's children: its installed wheels, then perfgate's source."""
    paths = [str(p) for p in (*sites, repo / "src", repo / "tools")]
    old = os.environ.get("PYTHONPATH")
    return {**os.environ, "PYTHONPATH": os.pathsep.join([*paths, *([old] if old else [])])}


def measure_files(row: Any, work: Path) -> tuple[Path, Path, Path]:
    """(spec, output JSON, log) of the measurements, the spec written."""
    folder = work / "measure"
    spec = WorkloadSpec(row=row, steps=0, output_dir=str(folder), mock_data=True)
    return spec.write(folder / "spec.json"), folder / "measure.json", folder / "measure.log"


def read_measure(out: Path, log: Path, code: int) -> tuple[dict | None, str | None]:
    """(the measurements, None) or (None, why there are none)."""
    if code or not out.exists():
        tail = log.read_text(errors="replace")[-1500:] if log.exists() else ""
        return None, f"measure exited {code}: {tail}"
    return json.loads(out.read_text()), None


def measure_child(
    row: Any, env: dict, work: Path, args: list[str], timeout: float
) -> tuple[dict | None, str | None, float]:
    """Run gpucheck.measure in its own process; (its JSON, the error if any, seconds)."""
    spec, out, log_path = measure_files(row, work)
    cmd = [sys.executable, "-m", "gpucheck.measure", str(spec), str(out), *args]
    renv = {**env_defaults(row), **env, "RANK": "0", "WORLD_SIZE": "1", "LOCAL_RANK": "0"}
    renv.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(free_port()))
    start = time.monotonic()
    with open(log_path, "wb") as log:
        try:
            proc = subprocess.run(
                cmd, env=renv, stdout=log, stderr=subprocess.STDOUT, timeout=timeout, check=False
            )
            code = proc.returncode
        except subprocess.TimeoutExpired:
            code = 124
    return (*read_measure(out, log_path, code), time.monotonic() - start)
