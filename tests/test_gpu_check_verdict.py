"""scripts/gpu-check's verdict, negative controls and clocks, without torch (#31).

overall: PASS only when every check of the mode ran and passed, every control caught its
fault, A/A is not REGRESSION and A/B is what B's cost predicts. The controls: each fault
fails its check on data shaped like a real run's. The parent's clock (gpucheck.follow) and
the wall, FLOPs-callback and phase checks on numbers whose answer is known.
"""

from __future__ import annotations

import copy
import subprocess
import sys
import threading
import time

import pytest
from testutil import REPO

sys.path.insert(0, str(REPO / "tools"))  # the GPU check: tools/gpucheck

from gpucheck import checks, controls, nemo2, report, verdict
from gpucheck.follow import LogFollower
from gpucheck.wheels import LISTS, SETS, TREE_LIMIT_MIB, mib, read_pins, set_pins, wheel_files
from rowfactory import core_row

from perfgate import flops
from perfgate.catalog.arch import effective_arch
from perfgate.logs import parse_text
from perfgate.models import get as model
from perfgate.workload.megatron_core.clock import iteration_line
from perfgate.workload.nemo2.models import nemo2_flops_convention
from perfgate.workload.validate import check_overrides

CORE = core_row("h200")


def passing(cpu: bool = False, nemo: bool = False) -> dict:
    """A result in which every required check and control of the mode passed."""
    names, ctl = verdict.required(cpu, nemo)
    return {
        "cpu": cpu,
        "nemo2_requested": nemo,
        "product": {"ok": True, "line": "pytest exit 0, verdict NO_BASELINE"},
        "checks": {n: {"status": "pass"} for n in names if n not in ("product", "aa", "ab")},
        "controls": {n: {"status": "pass", "caught": True} for n in ctl},
        "pairs": {
            "aa": {"verdict": "INCONCLUSIVE", "pairs": 2},
            "ab": {"verdict": "REGRESSION", "pairs": 2},
            "expected_ab": "REGRESSION",
        },
        "environment": {"device": "NVIDIA H200"},
    }


# --- overall -----------------------------------------------------------------------------------


def test_every_required_check_passing_is_a_pass():
    for cpu in (False, True):
        for nemo in (False, True):
            assert verdict.overall(passing(cpu, nemo)) == (True, [])


@pytest.mark.parametrize("name", ["flops", "mfu", "timers.independent", "results"])
def test_a_check_that_did_not_run_fails_with_its_reason(name):
    result = passing()
    del result["checks"][name]
    result["not_run"] = {name: "stage measure raised ImportError: no module named megatron"}
    ok, failed = verdict.overall(result)
    assert not ok and failed == [
        f"{name}: not run (stage measure raised ImportError: no module named megatron)"
    ]
    result["checks"][name] = {"status": "skipped", "why": "no measured values"}
    del result["not_run"]
    assert verdict.overall(result)[1] == [f"{name}: not run (no measured values)"]


def test_the_pairs_are_part_of_the_verdict():
    result = passing()
    result["pairs"]["aa"]["verdict"] = "REGRESSION"
    assert verdict.overall(result)[1] == ["aa: A/A verdict REGRESSION: must not be REGRESSION"]
    result = passing()
    result["pairs"]["ab"]["verdict"] = "INCONCLUSIVE"
    assert verdict.overall(result)[1] == ["ab: A/B verdict INCONCLUSIVE, expected REGRESSION"]
    result["pairs"]["expected_ab"] = "PASS or INCONCLUSIVE (B's cost is below the tolerance)"
    assert verdict.overall(result)[0]
    result["pairs"]["ab"]["verdict"] = None  # no complete pair ran
    assert not verdict.overall(result)[0]
    result["pairs"]["expected_ab"] = "unknown (B's cost was not measured)"
    result["pairs"]["ab"]["verdict"] = "REGRESSION"
    assert not verdict.overall(result)[0]  # nothing to hold the verdict against


def test_a_control_that_was_not_caught_fails_the_run():
    result = passing()
    result["controls"]["timers"] = {"status": "fail", "caught": False, "why": "passed"}
    assert verdict.overall(result)[1] == ["control timers: its check passed a known fault (passed)"]
    del result["controls"]["timers"]
    assert verdict.overall(result)[1] == ["control timers: not run (?)"]


def test_on_cpu_load_bound_checks_must_run_but_do_not_gate():
    result = passing(cpu=True, nemo=True)
    for name in verdict.LOAD_BOUND:
        result["checks"][name] = {"status": "fail"}
    result["pairs"]["aa"]["verdict"] = "REGRESSION"
    assert verdict.overall(result) == (True, [])
    del result["checks"]["timers.wall"]
    assert verdict.overall(result)[1] == ["timers.wall: not run (did not run)"]
    gpu = passing(nemo=True)
    gpu["checks"]["timers.wall"] = {"status": "fail"}
    assert verdict.overall(gpu)[1] == ["timers.wall: failed"]


def test_nemo2_is_required_only_when_asked_and_per_device():
    assert "nemo2.phases" in verdict.required(False, True)[0]
    assert "nemo2.boundary" in verdict.required(True, True)[0]
    assert not any(n.startswith("nemo2") for n in verdict.required(False, False)[0])
    result = passing(nemo=True)
    del result["checks"]["nemo2.flops"]
    result["not_run"] = {"nemo2.flops": "gpu-check: missing wheels in .gpu-wheels: nemo_toolkit"}
    assert verdict.overall(result)[1] == [
        "nemo2.flops: not run (gpu-check: missing wheels in .gpu-wheels: nemo_toolkit)"
    ]


def test_the_summary_says_what_is_plumbing_and_ends_with_the_verdict():
    result = passing(cpu=True)
    result["checks"]["timers.wall"] = {
        "status": "fail",
        "plumbing": verdict.PLUMBING_ON_CPU["timers.wall"],
        "runs": 6,
        "window": [5, 15],
        "sum_of_steps_s": 0.3,
        "wall_s": 0.36,
        "rel_diff": 0.2,
        "tolerance": 0.024,
    }
    text = report.summary(result)
    assert "timers.wall [fail; plumbing only on CPU, not gating]: the parent's clock" in text
    assert "plumbing only: log (perfgate's own Megatron-LM line" in text
    assert text.endswith("overall: PASS\n")
    failing = copy.deepcopy(result)
    failing["product"] = {"ok": False, "line": "pytest exit 1, verdict INFRA"}
    assert report.summary(failing).endswith(
        "overall: FAIL (product: pytest exit 1, verdict INFRA)\n"
    )


def test_the_readme_section_is_filled_from_a_gpu_run_only(tmp_path):
    readme = tmp_path / "README.md"
    readme.write_text(f"# x\n\n{report.readme_section(None)}\n\nafter\n")
    assert report.NO_RUN in readme.read_text()
    report.fill_readme(readme, passing(nemo=True))
    text = readme.read_text()
    assert report.NO_RUN not in text and text.endswith("\n\nafter\n")
    assert "| device | NVIDIA H200 |" in text and "overall: PASS" in text
    with pytest.raises(ValueError, match="GPU runs only"):
        report.fill_readme(readme, passing(cpu=True))


def test_expected_ab_follows_bs_cost():
    assert report.expected_ab(0.086, 0.05) == "REGRESSION"
    assert report.expected_ab(0.02, 0.05) == "PASS or INCONCLUSIVE"
    assert report.expected_ab(0.05, 0.05).startswith("either")


# --- negative controls -------------------------------------------------------------------------


def test_the_timers_control_fails_a_clock_that_stops_before_the_last_micro_batch():
    device = [0.5] + [0.300 + 0.001 * (i % 3) for i in range(11)]
    # two micro-batches: read at the second's start, the clock is short by about half a step
    control = [d * 0.48 for d in device]
    c = controls.timers_control(control, device, "cuda_event")
    assert c["caught"] and c["status"] == "pass" and c["median_short_by"] == pytest.approx(0.52)
    assert c["check_on_fault"]["status"] == "fail"
    honest = controls.timers_control(device, [d * 1.002 for d in device], "cuda_event")
    assert not honest["caught"] and honest["status"] == "fail"  # a right clock is not a fault


def test_the_flops_control_leaves_out_the_logits_and_is_caught():
    a = model("llama32_1b")
    ours = checks.per_step_flops(a, 4096, 4, 1)
    half_attention = 12.0 * 4096**2 * a.head_dim * a.num_attention_heads * a.num_layers * 4 / 2
    counted = ours["megatron"] + half_attention  # FlopCounterMode's view, unfused attention
    forward = counted / 3
    recomputed = checks.layer_forward_flops(a, 4096) * 4  # B re-runs one layer's forward
    measured = {
        "flops_a": {"step": {"total": counted, "by_op": {}}, "forward": {"total": forward}},
        "flops_b": {"step": {"total": counted + recomputed}},
    }
    assert checks.flops_check(a, 4096, 4, 128256, measured, 1)["status"] == "pass"
    c = controls.flops_control(a, 4096, 4, 128256, measured, 1)
    logits = 6 * 4096 * 2048 * 128256 * 4
    assert c["caught"] and c["term_step"] == logits
    assert c["term_share"] == pytest.approx(logits / ours["megatron"])


def megatron_log(host: list[float]) -> str:
    lines = [iteration_line(i + 1, len(host), t, 4, 3e-4, 7.0) for i, t in enumerate(host)]
    return "setup noise\n" + "\n".join(lines) + "\n"


def nemo_log(host: list[float]) -> str:
    lines = [
        f"Training epoch 0, iteration {i}/{len(host) - 1} | lr: 0.0003 | global_step: {i} | "
        f"reduced_train_loss: 11.03 | train_step_timing in s: {t:.4} | TFLOPS_per_GPU: 123.4"
        for i, t in enumerate(host)
    ]
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize(("fmt", "make"), [("megatron", megatron_log), ("nemo2", nemo_log)])
def test_the_log_control_moves_one_line_by_one_printed_unit(fmt, make):
    host = [1.7] + [0.39213 + 0.00007 * (i % 5) for i in range(19)]
    text = make(host)
    series = parse_text(text)
    assert series.format == fmt
    steps, log_s = [s.step for s in series.steps], [s.step_time_s for s in series.steps]
    assert checks.log_check(list(range(20)), host, steps, log_s, fmt)["status"] == "pass"
    c = controls.log_control(text, fmt, list(range(20)), host)
    assert c["caught"] and c["check_on_fault"]["max_diff_in_half_units"] > 1.0
    assert c["step"] == checks.steady_window(host)[0]
    # the shifted text differs from the real one in that one number only
    shifted = controls.shift_line(text, fmt, c["step"], host[c["step"]])[0]
    changed = [a for a, b in zip(text.splitlines(), shifted.splitlines(), strict=True) if a != b]
    assert len(changed) == 1


# --- the clocks --------------------------------------------------------------------------------


def test_the_follower_stamps_each_step_line_when_it_appears(tmp_path):
    log = tmp_path / "run" / "rank-0.log"
    follower = LogFollower(tmp_path / "**" / "rank-0.log", poll_s=0.001)
    follower.start()
    log.parent.mkdir()
    with open(log, "w") as f:
        f.write(megatron_log([0.1, 0.1]))
        f.flush()
        seen = threading.Event()
        deadline = time.monotonic() + 60
        while len(follower.arrivals) < 2 and time.monotonic() < deadline:
            seen.wait(0.001)
        between = time.monotonic()
        f.write(" [x] iteration        3/       3 | partial")  # no newline yet: not a line
        f.flush()
        f.write(" |\nnot a step line\n")
    arrivals = follower.stop()
    assert follower.path == str(log) and len(arrivals) == 3
    assert arrivals[0] <= arrivals[1] <= between <= arrivals[2]


def test_the_wall_check_sets_the_parents_clock_against_the_steps():
    host = [2.0] + [0.3] * 19
    arrivals = list(itertools_accumulate([5.0, *host]))[1:]  # line k at the end of step k
    ok = checks.wall_check(host, arrivals, 0.002)
    assert ok["status"] == "pass" and ok["rel_diff"] == pytest.approx(0.0, abs=1e-12)
    late = [a + 0.01 * k for k, a in enumerate(arrivals)]  # 10 ms between steps unseen
    gap = checks.wall_check(host, late, 0.002)
    assert gap["status"] == "fail" and gap["rel_diff"] == pytest.approx(0.01 / 0.31, rel=1e-6)
    assert checks.wall_check(host, arrivals[:5], 0.002)["status"] == "fail"


def itertools_accumulate(values):
    total = 0.0
    for v in values:
        total += v
        yield total


def test_medians_of_two_loops_and_the_phases_inside_the_step():
    loop = [0.5, 0.45] + [0.300] * 10
    assert checks.medians_check(loop, [x * 1.004 for x in loop], "x")["status"] == "pass"
    assert checks.medians_check(loop, [x * 1.02 for x in loop], "x")["status"] == "fail"
    assert checks.medians_check(loop[:2], loop[:2], "x")["status"] == "fail"
    inside = checks.phases_check({"forward-backward": 0.25, "optimizer": 0.04}, 0.3)
    assert inside["status"] == "pass" and inside["share_of_step"] == pytest.approx(0.29 / 0.3)
    assert checks.phases_check({"forward-backward": 0.29, "optimizer": 0.04}, 0.3)["status"] == (
        "fail"
    )
    assert checks.phases_check(None, 0.3)["why"] == "no timer phases parsed from the log"


# --- NeMo 2 ------------------------------------------------------------------------------------


# NeMo 2.7.3's FLOPsMeasurementCallback, built by the recipe for the nemo2 row (llama32_1b,
# seq 4096, gbs 4) in .venv-nemo: eval_tflops_per_sec_per_gpu(1.0)[1] (gpucheck.nemo2_cpu).
NEMO_273_STEP_FLOPS = 134672994533376.0


def test_nemos_flops_callback_is_counted_in_the_convention_of_its_version():
    row = nemo2.nemo2_row(CORE)
    arch = effective_arch(row)
    host = [1.0, 0.9, 0.95]
    tflops = [NEMO_273_STEP_FLOPS / t / 1e12 for t in host]
    c = checks.nemo_flops_check(tflops, host, row, arch, "2.7.3")
    assert c["convention"] == "nemo2_2509" and c["status"] == "pass"
    assert c["max_rel_diff"] < 1e-12 and c["max_rel_diff.nemo2"] > 0.08  # attention not halved
    older = checks.nemo_flops_check(tflops, host, row, arch, "2.4.0")
    assert older["convention"] == "nemo2" and older["status"] == "fail"
    assert checks.nemo_flops_check([None], [1.0], row, arch, "2.7.3")["status"] == "fail"
    assert nemo2_flops_convention("2.5.0rc0") == "nemo2"
    assert nemo2_flops_convention("2.5.0") == nemo2_flops_convention("2.7.3") == "nemo2_2509"


def test_the_nemo2_row_is_the_megatron_core_shape_with_nemo_overrides_nemo_accepts():
    row = nemo2.nemo2_row(CORE)
    assert row.id == "pretrain-llama32_1b-h200-bf16-1gpu-tp1" and row.backend == "nemo2"
    assert (row.seq_len, row.gbs, row.mbs, row.model) == (4096, 4, 1, "llama32_1b")
    assert effective_arch(row) == model("llama32_1b")  # the overrides change no shape
    # every override path is a real path of NeMo 2.7.3's llama32_1b recipe (the snapshot)
    assert "snapshot" in check_overrides(row, {}, use_nemo=False)
    tiny = nemo2.nemo2_row(CORE, nemo2.TINY_CPU)
    assert effective_arch(tiny).num_layers == 2
    assert (
        flops.of_row(tiny, 1.0, "nemo2").tflops_per_gpu
        < flops.of_row(row, 1.0, "nemo2").tflops_per_gpu
    )


# --- the wheels --------------------------------------------------------------------------------


def test_the_wheel_sets_hold_one_version_of_each_and_fit_the_tree_limit():
    machine = {
        p.partition("==")[0].lower().replace("_", "-")
        for p in (LISTS / "gpu-machine.txt").read_text().splitlines()
        if p and not p.startswith("#")
    }
    for name in SETS:
        pins = set_pins(name)
        assert len({p.key for p in pins}) == len(pins), name
    nemo = read_pins(LISTS / "nemo2.txt")
    assert {p.key for p in nemo if p.sdist} == {"antlr4_python3_runtime", "wget"}
    # what the GPU machine has is not carried again, except NeMo's pin of lightning<=2.4.0
    shadowed = {p.name.lower().replace("_", "-") for p in nemo} & machine
    assert shadowed == {"lightning"}
    files, missing = wheel_files([p for s in SETS for p in set_pins(s)], REPO / ".gpu-wheels")
    if missing:
        pytest.skip(".gpu-wheels lacks wheels (scripts/gpu-wheels fetches them)")
    assert mib(files) < 50.0
    listed = subprocess.run(
        ["git", "ls-files", "-z"], cwd=REPO, capture_output=True, check=False
    ).stdout.split(b"\0")
    tracked = [REPO / name.decode() for name in listed if name]
    if tracked:  # a checkout with its history (CI's second run is a copy without .git)
        tree = sum(p.stat().st_size for p in tracked if p.is_file())
        assert mib(files) + tree / 2**20 < TREE_LIMIT_MIB - 4.0  # room for the results


# --- the NeMo 2 stage on a GPU run's files --------------------------------------------------


def nemo_run_folder(folder, host: list[float], gap_s: float) -> None:
    """What a GPU launch of the nemo2 row leaves: steps.json (TimingCallback's times and the
    FLOPs callback's TFLOP/s), device_clock.json, and NeMo's lines with timer blocks."""
    from perfgate.logs import stepfile
    from perfgate.workload.deviceclock import write_clock

    tflops = [NEMO_273_STEP_FLOPS / t / 1e12 for t in host]
    steps = [
        {"step": i, "step_time_s": t, "tflops_per_gpu": f}
        for i, (t, f) in enumerate(zip(host, tflops, strict=True))
    ]
    record = stepfile.StepRecord(
        "pretrain-llama32_1b-h200-bf16-1gpu-tp1",
        "nemo2",
        status="completed",
        steps=steps,
        versions={"nemo": "2.7.3"},
        flops_convention="nemo2_2509",
    )
    stepfile.write(folder / "steps.json", record)
    write_clock(folder, "cuda_event", "batch start to batch start", [t + gap_s for t in host])
    lines = []
    for i, (t, f) in enumerate(zip(host, tflops, strict=True)):
        lines.append(
            f"Training epoch 0, iteration {i}/{len(host) - 1} | lr: 0.0003 | global_step: {i} | "
            f"reduced_train_loss: 11.03 | train_step_timing in s: {t:.4} | TFLOPS_per_GPU: {f:.4}"
        )
        lines += [
            "(min, max) time across ranks (ms):",
            f"    forward-backward ...............................: ({800 * t:.2f}, {800 * t:.2f})",
            f"    optimizer ......................................: ({100 * t:.2f}, {100 * t:.2f})",
        ]
    (folder / "rank-0.log").write_text("\n".join(lines) + "\n")


class StagesStub:
    """The parts of gpucheck.stages.Stages the NeMo 2 stage reads."""

    def __init__(self, tmp_path):
        self.work, self.gpu_row, self.repo = tmp_path / "work", CORE, REPO
        self.args = type("Args", (), {"out": tmp_path / "out"})()
        self.result = {"checks": {}, "controls": {}}
        self.runs, self.lines = [], []

    def log(self, line: str) -> None:
        self.lines.append(line)

    def timeout(self) -> float:
        return 60.0


@pytest.mark.parametrize(("gap_s", "timers"), [(0.002, "pass"), (0.05, "fail")])
def test_the_gpu_stage_checks_nemos_run_from_its_files(tmp_path, monkeypatch, gap_s, timers):
    from gpucheck.runs import ProductRun, read_run

    host = [3.0] + [0.9 + 0.001 * (i % 3) for i in range(19)]
    run_dir = tmp_path / "launch"
    run_dir.mkdir()
    nemo_run_folder(run_dir, host, gap_s)
    seen = {}

    def product(cmd, row_id, results, env, timeout, cwd):
        seen.update(cmd=cmd, row_id=row_id)
        run = read_run("product", run_dir, 40.0, 0)
        start = 100.0  # the parent saw each line when its step and the gap were done
        run.arrivals = list(itertools_accumulate([start, *(t + gap_s for t in host)]))[1:]
        return ProductRun(0, 40.0, cmd, {"verdict": "NO_BASELINE"}, run, "")

    monkeypatch.setattr(nemo2, "product_run", product)
    stages = StagesStub(tmp_path)
    nemo2.Nemo2Stage(stages, {}, "python3").gpu_stage(core_step_s=0.45)
    c, ctl = stages.result["checks"], stages.result["controls"]
    assert seen["row_id"] == "pretrain-llama32_1b-h200-bf16-1gpu-tp1"
    assert "--executor=local" in seen["cmd"] and "--steps=20" in seen["cmd"]
    assert c["nemo2.product"]["status"] == "pass"
    assert c["nemo2.log"]["status"] == "pass" and c["nemo2.flops"]["status"] == "pass"
    assert c["nemo2.phases"]["status"] == "pass"
    assert c["nemo2.phases"]["share_of_step"] == pytest.approx(0.9, rel=1e-3)
    assert c["nemo2.beside"]["nemo2_over_megatron_core"] == pytest.approx(0.901 / 0.45, rel=1e-2)
    # a gap NeMo's TimingCallback does not see: 2 ms of 0.9 s passes, 50 ms fails both clocks
    assert c["nemo2.timers"]["status"] == c["nemo2.wall"]["status"] == timers
    assert c["nemo2.timers"]["median_gap_s"] == pytest.approx(gap_s)
    assert ctl["nemo2.log"]["caught"]
    assert stages.result["nemo2"]["product"]["ok"] and stages.runs
