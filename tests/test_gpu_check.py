"""scripts/gpu-check (tools/gpucheck) without torch: refusals, the wheel lists, the checks'
arithmetic, the pairs' judgement, the report and the README section.

The verdict, the negative controls and the clocks: tests/test_gpu_check_verdict.py. Its CPU
run end to end: tests/workload/test_megatron_core_venv.py (.venv-bridge and .venv-nemo).
"""

from __future__ import annotations

import dataclasses
import email
import importlib.metadata as md
import math
import subprocess
import sys
import zipfile

import pytest
from packaging.requirements import Requirement
from testutil import REPO

sys.path.insert(0, str(REPO / "tools"))  # the GPU check: tools/gpucheck
sys.path.insert(0, str(REPO / "scripts"))  # the detector data its pair noise is set beside

from gpucheck import checks, pairs, report, runs
from gpucheck.prepare import check_python, check_torch
from gpucheck.wheels import (
    LISTS,
    Pin,
    Refused,
    check_wheels,
    fetch_command,
    prune,
    read_pins,
    set_pins,
    wheel_files,
)
from rowfactory import core_row

from perfgate import models
from perfgate.catalog import load_catalog
from perfgate.catalog.provenance import SHIPPED_DIR
from perfgate.catalog.rows import Row
from perfgate.logs import stepfile
from perfgate.stats import summarize_run
from perfgate.verdicts.single import pooled_measured
from perfgate.workload.megatron_core.clock import StepClock, iteration_line, write_sidecar
from perfgate.workload.megatron_core.plan import settings_for

# The GPU machine's Python, for the dependencies' environment markers.
GPU_MACHINE = {
    "sys_platform": "linux",
    "platform_system": "Linux",
    "python_version": "3.12",
    "python_full_version": "3.12.3",
    "implementation_name": "cpython",
    "extra": "",
}
PINS = set_pins("common") + set_pins("megatron_core")  # the megatron_core stage's
ROW = "pretrain-llama32_1b-h100-bf16-1gpu-tp1-megatron_core"


def row(gpu: str = "h100") -> Row:
    """The check's megatron_core row (as perfgate's shipped catalog holds it)."""
    return core_row(gpu)


def test_the_factorys_row_is_the_shipped_one():
    for gpu in ("h100", "h200"):
        shipped = load_catalog(SHIPPED_DIR).get(ROW.replace("h100", gpu))
        assert settings_for(shipped) == settings_for(row(gpu))


# --- the wheels and the refusals ---------------------------------------------------------------


def requirements(pin: Pin) -> list[str] | None:
    """Requires-Dist of the pinned version: its wheel in .gpu-wheels, else the main venv's copy."""
    files, _ = wheel_files([pin], REPO / ".gpu-wheels")
    if files:
        with zipfile.ZipFile(files[0]) as whl:
            meta = next(n for n in whl.namelist() if n.endswith(".dist-info/METADATA"))
            return email.message_from_bytes(whl.read(meta)).get_all("Requires-Dist") or []
    try:
        installed = md.distribution(pin.name)
    except md.PackageNotFoundError:
        return None
    return installed.requires or [] if installed.version == pin.version else None


def test_the_pinned_lists_fit_pyproject_and_name_every_dependency():
    pinned = {p.key: p for p in PINS}
    assert pinned["megatron_core"].version == "0.19.2"
    tomllib = pytest.importorskip("tomllib")  # Python >= 3.11
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    for text in project["dependencies"]:  # perfgate's own, in the versions it accepts
        req = Requirement(text)
        assert pinned[Pin(req.name, "").key].version in req.specifier, text
    on_the_gpu_machine = {"torch", "numpy"}
    checked = 0
    for pin in PINS:
        needs = requirements(pin)
        if needs is None:
            continue  # neither its wheel nor that version installed here
        checked += 1
        for text in needs:
            req = Requirement(text)
            if req.marker and not req.marker.evaluate(GPU_MACHINE):
                continue  # an extra, Windows, an older Python
            key = Pin(req.name, "").key
            assert key in pinned or key in on_the_gpu_machine, f"{pin} needs {text}"
            if key in pinned:
                assert pinned[key].version in req.specifier, f"{pin} needs {text}"
    assert checked >= len(PINS) - 1  # all but megatron-core without .gpu-wheels


def test_missing_wheels_are_named_in_one_line_and_stale_ones_pruned(tmp_path):
    for pin in PINS[:-1]:
        (tmp_path / f"{pin.key}-{pin.version}-py3-none-any.whl").write_bytes(b"")
    (tmp_path / "pytest-8.0.0-py3-none-any.whl").write_bytes(b"")
    assert [p.name for p in prune(PINS, tmp_path)] == ["pytest-8.0.0-py3-none-any.whl"]
    with pytest.raises(Refused) as e:
        check_wheels(PINS, tmp_path)
    assert str(e.value) == (
        f"gpu-check: missing wheels in {tmp_path}: megatron-core==0.19.2 (run scripts/gpu-wheels "
        "where a package index is reachable, then carry that folder)"
    )
    (tmp_path / "megatron_core-0.19.2-cp312-cp312-manylinux_2_28_x86_64.whl").write_bytes(b"")
    assert len(check_wheels(PINS, tmp_path)) == len(PINS)


def test_a_list_marks_the_pins_built_from_their_sdist(tmp_path):
    listing = tmp_path / "x.txt"
    listing.write_text("# a comment\nwget==3.2  # sdist\nfiddle==0.3.1  # the recipe layer\n")
    wget, fiddle = read_pins(listing)
    assert (wget.sdist, fiddle.sdist) == (True, False)
    assert fetch_command("py", wget, tmp_path)[:6] == [
        "py",
        "-m",
        "pip",
        "wheel",
        "-q",
        "--no-deps",
    ]
    binary = fetch_command("py", fiddle, tmp_path)
    assert "--only-binary=:all:" in binary and binary[-1] == "fiddle==0.3.1"
    assert binary[binary.index("--python-version") + 1] == "3.12"
    listing.write_text("fiddle>=0.3\n")
    with pytest.raises(Refused, match=r"x.txt:1: expected name==version, got 'fiddle>=0.3'"):
        read_pins(listing)


@pytest.mark.parametrize(
    ("facts", "cpu", "expected"),
    [
        ({"error": "ModuleNotFoundError: No module named 'torch'"}, False, "not importable"),
        ({"torch": "2.5.1+cu124"}, False, "torch 2.5.1+cu124 is not supported"),
        ({"torch": "3.0.0"}, True, "3.0.0 is not supported: Megatron-Core 0.19 needs torch 2.x"),
        (
            {"torch": "2.11.0+cu130", "cuda_build": "13.0", "gpus": 0},
            False,
            "no GPU visible to torch 2.11.0+cu130 (CUDA 13.0 build); --cpu runs the CPU check",
        ),
        (
            {"torch": "2.11.0", "gpus": 1, "gpu_name": "NVIDIA A100-SXM4-80GB"},
            False,
            "no megatron_core row for 'NVIDIA A100-SXM4-80GB': rows exist for h100, h200",
        ),
    ],
)
def test_each_bad_machine_is_one_line(facts, cpu, expected):
    with pytest.raises(Refused) as e:
        check_torch(facts, cpu)
    assert str(e.value).startswith("gpu-check: ") and expected in str(e.value)
    assert "\n" not in str(e.value)


def test_the_gpu_picks_its_row():
    facts = {"torch": "2.11.0+cu130", "gpus": 1}
    assert check_torch({**facts, "gpu_name": "NVIDIA H100 80GB HBM3"}, False) == "h100"
    assert check_torch({**facts, "gpu_name": "NVIDIA H200"}, False) == "h200"
    assert check_torch({"torch": "2.13.0", "gpus": 0}, True) is None
    with pytest.raises(Refused) as e:
        check_python(".gpu-wheels", (3, 11))
    assert str(e.value) == (
        "gpu-check: Python 3.11 runs this, the wheels in .gpu-wheels are cp312 builds (give a "
        "Python 3.12 with torch: --python PATH)"
    )


def test_the_wrapper_refuses_a_missing_or_wrong_interpreter(tmp_path):
    def run(*args: str) -> subprocess.CompletedProcess:
        cmd = ["bash", str(REPO / "scripts" / "gpu-check"), "--out", str(tmp_path), *args]
        return subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)

    missing = run("--python", "/nonexistent/python3")
    assert (missing.returncode, missing.stderr) == (
        2,
        "gpu-check: no Python interpreter '/nonexistent/python3' here (give one with --python "
        "PATH)\n",
    )
    # --cpu without wheels: the missing wheels are named, not the Python they were built for
    empty = tmp_path / "no-wheels"
    empty.mkdir()
    nothing = run("--cpu", "--python", sys.executable, "--wheels", str(empty))
    assert nothing.returncode == 2 and nothing.stderr.count("\n") == 1
    assert nothing.stderr.startswith(f"gpu-check: missing wheels in {empty}: pytest==9.2.0, ")
    if sys.version_info[:2] != (3, 12) and wheel_files(PINS, LISTS.parents[2] / ".gpu-wheels")[0]:
        wrong = run("--python", sys.executable)
        assert wrong.returncode == 2 and wrong.stderr.count("\n") == 1
        assert "are cp312 builds (give a Python 3.12 with torch: --python PATH)" in wrong.stderr


# --- the checks --------------------------------------------------------------------------------


def test_timers_agree_within_one_percent_and_say_when_not():
    host = [2.0] + [0.3 + 0.001 * (i % 3) for i in range(19)]
    same = checks.timer_check(host, [h * 1.0001 for h in host], "cuda_event")
    assert same["status"] == "pass" and same["median_rel_diff"] == pytest.approx(1e-4, rel=1e-3)
    assert same["steady"] and same["window"][0] >= 5
    off = checks.timer_check(host, [h * 1.02 for h in host], "cuda_event")
    assert off["status"] == "fail" and off["max_step_rel_diff"] == pytest.approx(1 - 1 / 1.02)
    assert checks.timer_check(host, host[:-1], "x")["status"] == "fail"


def test_the_log_matches_steps_json_to_half_a_printed_unit():
    host = [0.123456, 0.3]
    megatron = checks.log_check([0, 1], host, [0, 1], [0.1235, 0.3], "megatron")  # 123.5 ms
    assert megatron["status"] == "pass" and megatron["half_unit_s"] == pytest.approx(0.05e-3)
    assert checks.log_check([0, 1], host, [0, 1], [0.1236, 0.3], "megatron")["status"] == "fail"
    assert checks.log_check([0, 1], host, [1, 2], host, "megatron")["status"] == "fail"
    # NeMo 2 prints four significant digits: 0.1235 s, half a unit 0.05 ms; 12.35 s: 5 ms
    assert checks.print_unit("nemo2", 0.1235) == pytest.approx(1e-4)
    assert checks.print_unit("nemo2", 12.35) == pytest.approx(1e-2)
    assert checks.log_check([0], [12.3449], [0], [12.34], "nemo2")["status"] == "pass"
    assert checks.log_check([0], [12.3449], [0], [12.35], "nemo2")["status"] == "fail"


def gemm_flops(arch: models.ModelArch, seq: int, padded_vocab: int) -> tuple[int, int]:
    """(forward matmul FLOPs of one sample, of one layer) listed GEMM by GEMM, as torch's
    FlopCounterMode counts them: 2*M*N*K each, both attention products over all s x s."""
    h, d = arch.hidden_size, arch.head_dim
    heads, groups, ffn = arch.num_attention_heads, arch.num_query_groups, arch.ffn_hidden_size
    layer = [
        (seq, (heads + 2 * groups) * d, h),  # fused QKV projection
        (seq, h, heads * d),  # output projection
        (seq, 2 * ffn, h),  # fc1: gate and up (SwiGLU)
        (seq, h, ffn),  # fc2
    ]
    per_layer = sum(2 * m * n * k for m, n, k in layer) + heads * 2 * (2 * seq * seq * d)
    return arch.num_layers * per_layer + 2 * seq * padded_vocab * h, per_layer


# FlopCounterMode's total for one step of the --cpu model, read off a real run (torch 2.13).
CPU_COUNTED = {"a_step": 679477248, "a_forward": 226492416, "b_step": 759169024}


def counts(forward: int, layer: int, samples: int, recomputed: int) -> dict:
    """A measure.json's FLOP counts: fwd+bwd = 3 forwards; B re-runs `recomputed` layers."""
    return {
        "flops_a": {
            "step": {"total": 3 * forward * samples, "by_op": {}},
            "forward": {"total": forward * samples},
        },
        "flops_b": {"step": {"total": (3 * forward + recomputed * layer) * samples}},
    }


def test_flops_are_explained_term_by_term():
    cpu = runs.cpu_row(row())
    s = settings_for(cpu)
    forward, layer = gemm_flops(s.arch, s.seq_len, s.padded_vocab)
    measured = counts(forward, layer, s.gbs, 1)
    assert measured["flops_a"]["step"]["total"] == CPU_COUNTED["a_step"]  # what torch counts
    assert measured["flops_a"]["forward"]["total"] == CPU_COUNTED["a_forward"]
    assert measured["flops_b"]["step"]["total"] == CPU_COUNTED["b_step"]
    ok = checks.flops_check(s.arch, s.seq_len, s.gbs, s.padded_vocab, measured, 1)
    assert ok["status"] == "pass" and max(ok["rel_diffs"].values()) < 1e-12
    big = settings_for(row())  # the GPU row: 16 layers, seq 4096, vocab 128256
    forward, layer = gemm_flops(big.arch, big.seq_len, big.padded_vocab)
    measured = counts(forward, layer, 4, 5)
    ok = checks.flops_check(big.arch, big.seq_len, big.gbs, big.padded_vocab, measured, 5)
    assert ok["status"] == "pass"
    assert ok["megatron_over_counter"] == pytest.approx(8.2198 / 9.0251, rel=1e-4)
    assert ok["b_extra_flops_fraction"] == pytest.approx(5 * layer / (3 * forward))
    measured["flops_a"]["step"]["total"] = int(measured["flops_a"]["step"]["total"] * 1.01)
    assert checks.flops_check(big.arch, 4096, 4, 128256, measured, 5)["status"] == "fail"


# FlopCounterMode's counts for one step of the H200 row, read off a real run (torch 2.11,
# cuDNN attention): the fused backward recomputes the scores, one sixth of full attention.
H200_COUNTED = {
    "a_step": 152265180577792,
    "a_forward": 49289044688896,
    "b_step": 164978283773952,
    "by_op": {
        "aten._scaled_dot_product_cudnn_attention": 8796093022208,
        "aten._scaled_dot_product_cudnn_attention_backward": 21990232555520,
        "aten.mm": 121478855000064,
    },
}


def test_a_fused_attention_backward_is_explained_by_its_recomputed_scores():
    s = settings_for(row("h200"))
    measured = {
        "flops_a": {
            "step": {"total": H200_COUNTED["a_step"], "by_op": H200_COUNTED["by_op"]},
            "forward": {"total": H200_COUNTED["a_forward"]},
        },
        "flops_b": {"step": {"total": H200_COUNTED["b_step"]}},
    }
    ok = checks.flops_check(s.arch, s.seq_len, s.gbs, s.padded_vocab, measured, 5)
    assert ok["fused_attention_backward"] == ["aten._scaled_dot_product_cudnn_attention_backward"]
    assert ok["scores_recompute_step"] == pytest.approx(ok["attention_full_step"] / 6)
    assert ok["status"] == "pass" and max(ok["rel_diffs"].values()) < 1e-9
    # the same counts with an unfused backward named: 3% is left unexplained
    measured["flops_a"]["step"]["by_op"] = {"aten.bmm": 1, "aten.mm": 1}
    bad = checks.flops_check(s.arch, s.seq_len, s.gbs, s.padded_vocab, measured, 5)
    assert bad["status"] == "fail"
    assert bad["rel_diffs"]["counter_vs_megatron_plus_half_attention"] == pytest.approx(
        0.0297, abs=1e-4
    )


def test_results_json_figures_are_recomputed_from_steps_json():
    host = [3.0] + [0.3 + 0.002 * (i % 4) for i in range(29)]
    series = dataclasses.replace(
        stepfile.StepRecord(ROW, "megatron_core"),
        steps=[{"step": i, "step_time_s": t} for i, t in enumerate(host)],
    ).to_series()
    measured = pooled_measured(row(), [summarize_run(host)], [])
    record = {"verdict": "NO_BASELINE", "measured": dataclasses.asdict(measured)}
    assert series.step_times == host
    assert checks.results_check(record, host, row())["status"] == "pass"
    record["measured"]["tflops_per_gpu"]["megatron"] *= 1.001
    assert checks.results_check(record, host, row())["status"] == "fail"
    # no measured values is a failed check with its reason, never a pass
    infra = checks.results_check({"verdict": "INFRA"}, host, row())
    assert infra == {
        "status": "fail",
        "why": "results.json has no measured values (verdict INFRA)",
    }


def test_results_of_a_shrunk_row_count_the_model_it_trains():
    cpu = runs.cpu_row(row())  # 2 layers of hidden 64: what the --cpu product run trains
    host = [0.5] + [0.02 + 0.0001 * (i % 3) for i in range(19)]
    measured = pooled_measured(cpu, [summarize_run(host)], [])
    record = {"verdict": "NO_BASELINE", "measured": dataclasses.asdict(measured)}
    ok = checks.results_check(record, host, cpu)
    assert ok["status"] == "pass"
    catalog_model = models.get("llama32_1b")
    full = checks.per_step_flops(catalog_model, cpu.seq_len, cpu.gbs, 1)["megatron"]
    assert ok["recomputed"]["tflops_per_gpu.megatron"] < 0.01 * full / 0.02 / 1e12


def test_mfu_is_bounded_by_the_measured_gemm_peak():
    step_flops = {"megatron": 1.35e14, "nemo2": 1.48e14}
    m = checks.mfu_check(0.3, step_flops, 1, "h100", 800.0)
    assert m["tflops_per_gpu"]["megatron"] == pytest.approx(450.0)
    assert m["mfu_datasheet"]["megatron"] == pytest.approx(450.0 / 989.0)
    assert m["mfu_measured_peak"]["megatron"] == pytest.approx(450.0 / 800.0)
    assert m["status"] == "pass"
    assert checks.mfu_check(0.1, step_flops, 1, "h100", 800.0)["status"] == "fail"  # 1350 > 800


# --- the pairs ---------------------------------------------------------------------------------


def series(level: float, seed: int) -> list[float]:
    """A 20-step run: a slow first step, then +-0.2% deterministic wobble around level."""
    return [level * 5] + [level * (1 + 0.002 * math.sin(seed * 7 + i)) for i in range(19)]


def test_b_pair_order_and_plan_match_the_gate():
    from perfgate.launch.planning import pair_launches

    assert pairs.b_overrides(16)["model.recompute_num_layers"] == 8
    assert pairs.b_overrides(2)["model.recompute_num_layers"] == 1
    assert pairs.plan(2) == [("aa", 0), ("ab", 0), ("aa", 1), ("ab", 1)]
    for i in range(3):
        assert pairs.launch_order(i) == tuple(label for label, _ in pair_launches(i, "a", "b"))


def test_the_gates_rule_passes_a_a_and_catches_a_ten_percent_b():
    base = [series(0.3, i) for i in range(4)]
    aa = pairs.judged(base, [series(0.3, 10 + i) for i in range(4)])
    ab = pairs.judged(base, [series(0.33, 10 + i) for i in range(4)])
    assert aa["verdict"] == "PASS" and abs(aa["delta"]) < 0.005 and aa["pairs_used"] == 4
    assert ab["verdict"] == "REGRESSION" and ab["delta"] == pytest.approx(0.10, abs=0.005)
    assert aa["sigma_used"] > 0.01  # 4 quiet pairs do not outweigh the 1.6% pair prior
    assert pairs.judged([], [])["verdict"] is None


def test_pair_noise_and_the_assumptions_it_is_set_beside():
    noise = pairs.measured_noise([0.01, -0.01], [0.05, 0.07])
    assert noise["aa_sd_about_zero"] == pytest.approx(0.01)
    assert noise["ab_sd_about_mean"] == pytest.approx(math.sqrt(2) * 0.01)
    assert noise["pooled_pair_sd"] == pytest.approx(math.sqrt(0.0004 / 3))
    assert noise["ab_mean_slowdown"] == pytest.approx(math.expm1(0.06))
    assumed = pairs.evaluator_assumptions()
    assert assumed["gate_pair_prior_sigma"] == 0.016
    assert assumed["production_prior_pair_sigma"] == pytest.approx(0.004493 * math.sqrt(2))
    pytest.importorskip("numpy")
    from detector_data import measure_noise

    resume = measure_noise()["resume_pairs"]  # what scripts/evaluate_detector.py prints
    assert assumed["evaluator_pairs"] == resume["n"]
    assert assumed["evaluator_pair_sd"] == pytest.approx(resume["pair_sigma_sd"])


# --- runs, report, README ------------------------------------------------------------------------


def test_cpu_and_tp2_rows_are_valid_catalog_rows(tmp_path):
    cpu = runs.cpu_row(row())
    assert cpu.id == ROW and cpu.overrides["device"] == "cpu" and cpu.seq_len == 128
    tp2 = runs.tp2_row(cpu)
    assert tp2.id == "pretrain-llama32_1b-h100-bf16-2gpu-tp2-megatron_core"
    folder = runs.write_catalog([cpu, tp2], tmp_path)
    assert load_catalog(folder).get(ROW) == cpu
    cmd = runs.pytest_command("py", ROW, tmp_path / "r", tmp_path / "r.html", 16, folder)
    assert cmd[:3] == ["py", "-m", "pytest"] and cmd[cmd.index("-k") + 1] == ROW
    assert "--executor=local" in cmd and f"--baselines-dir={folder}" in cmd
    long_options = [a for a in cmd if a.startswith("--")]
    assert all("=" in a for a in long_options if a != "--self-contained-html")


def test_a_run_folder_is_read_back_on_both_clocks(tmp_path):
    clock = StepClock(None)
    clock.start()
    for _ in range(3):
        clock.lap()
    steps = [{"step": i, "step_time_s": t, "loss": 7.0 - i} for i, t in enumerate(clock.host_s)]
    record = stepfile.StepRecord(ROW, "megatron_core", status="completed", steps=steps)
    stepfile.write(tmp_path / "steps.json", record)
    write_sidecar(tmp_path, clock, {}, {})
    lines = [iteration_line(i + 1, 3, t, 4, 3e-4, 7.0 - i) for i, t in enumerate(clock.host_s)]
    (tmp_path / "rank-0.log").write_text("noise before\n" + "\n".join(lines) + "\n")
    run = runs.read_run("pair", tmp_path, 1.0, 0)
    assert run.problem is None and run.steps == [0, 1, 2] and run.log_steps == [0, 1, 2]
    assert run.second_s == clock.second_s and run.losses == [7.0, 6.0, 5.0]
    assert run.log_format == "megatron" and run.second_clock == "clock_realtime"
    check = checks.log_check(run.steps, run.host_s, run.log_steps, run.log_s, run.log_format)
    assert check["status"] == "pass"
    bad = runs.read_run("pair", tmp_path / "missing", 1.0, 3)
    assert bad.problem.startswith("exit code 3; ")


def test_the_help_says_how_a_gpu_machine_runs_it():
    out = subprocess.run(
        [sys.executable, "-m", "gpucheck", "--help"],
        capture_output=True,
        text=True,
        env={"PYTHONPATH": f"{REPO / 'src'}:{REPO / 'tools'}:{REPO / 'scripts'}"},
        check=True,
    ).stdout
    usage = out.split("\n\n")[0]
    assert "[--python PATH]" in usage and "[--nemo2]" in usage  # the help tells you to use them
    assert "bash scripts/gpu-check --nemo2 --out OUT" in out
    assert "from the repository root" in out and "bash scripts/gpu-wheels\n" in out
    assert "bash scripts/gpu-check --fill-readme OUT/gpu-check.json" in out
    assert "--budget-min" in out and "docs/gpu-check.md" in out
    # the project's own words: no session's tool, carry list or $OUT
    assert "device tool" not in out and "carry" not in out and "$OUT" not in out


def test_the_readme_holds_the_section_the_script_fills():
    text = (REPO / "README.md").read_text()
    start, end = text.index(report.BEGIN), text.index(report.END) + len(report.END)
    section = text[start:end]
    # Until a GPU run is filled in, the section says plainly that none exists.
    assert section == report.readme_section(None) or "| device | NVIDIA H" in section
    assert "bash scripts/gpu-check --nemo2 --out OUT" in text and "--fill-readme" in text
    assert "docs/gpu-check.md" in text
