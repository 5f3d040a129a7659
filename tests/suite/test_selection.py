"""Rows as tests: ids, markers (all registered), -m/-k selection, --gpus deselection, options."""

from __future__ import annotations

import configparser

from rowfactory import make_row

from perfgate import catalog, hardware, models
from perfgate.suite import selection

from .pytester_suite import REPO

pytest_plugins = ["pytester"]


def _ini_markers() -> set[str]:
    ini = configparser.ConfigParser()
    ini.read(REPO / "pytest.ini")
    lines = ini["pytest"]["markers"].strip().splitlines()
    return {line.split(":")[0].strip() for line in lines if line.strip()}


def _registered(result) -> set[str]:
    """Marker names `pytest --markers` lists."""
    return {
        ln.split(":")[0].removeprefix("@pytest.mark.").split("(")[0]
        for ln in result.outlines
        if ln.startswith("@pytest.mark.")
    }


def test_every_value_a_row_may_take_has_a_marker_description():
    families = {models.get(name).family for name in models.MODELS}
    possible = {*hardware.GPUS, *catalog.PRECISIONS, *catalog.TASKS, *catalog.BACKENDS, *families}
    assert set(selection.marker_descriptions()) == possible
    # pytest.ini holds only the suite's own markers: the row markers are not written twice.
    assert _ini_markers() == set(selection.SUITE_MARKERS)


def test_markers_are_exactly_those_of_the_rows(suite):
    cat = suite.shipped_rows()
    result = suite.run("--markers")
    assert result.ret == 0
    row_markers = selection.marker_names(cat.rows)
    ours = set(selection.marker_descriptions()) | set(selection.SUITE_MARKERS)
    assert _registered(result) & ours == row_markers | set(selection.SUITE_MARKERS)
    # B300/GB300, NVFP4 and megatron_bridge have rows (#11's published Bridge rows); the command
    # backend has none, so no marker.
    assert {"b300", "gb300", "nvfp4", "megatron_bridge"} <= _registered(result)
    assert "command" not in _registered(result)
    assert "@pytest.mark.gb200: rows on NVIDIA GB200 (4 GPUs per node)" in result.outlines


def test_a_new_rows_values_become_markers_without_an_edit(suite):
    new = make_row(
        gpu="b300", precision="nvfp4", num_gpus=8, tp=1, gbs=64, mbs=1, model="llama3_8b"
    )
    suite.write_rows([new, make_row()])
    assert {"b300", "nvfp4"} <= _registered(suite.run("--markers"))
    result = suite.run("--collect-only", "-q", "-m", "b300 and nvfp4")  # --strict-markers is on
    assert result.ret == 0 and _ids(result) == [new.id]


def _ids(result) -> list[str]:
    return sorted(
        line.split("[", 1)[1].rstrip("]") for line in result.outlines if "::test_" in line
    )


def test_every_row_is_one_test_with_its_id_as_test_id(suite):
    cat = suite.shipped_rows()
    result = suite.run("--collect-only", "-q")
    assert result.ret == 0
    assert _ids(result) == sorted(r.id for r in cat.rows)
    pre = [ln for ln in result.outlines if ln.startswith("benchmarks/pretrain/")]
    fine = [ln for ln in result.outlines if ln.startswith("benchmarks/finetune/")]
    assert len(pre) == sum(r.task == "pretrain" for r in cat.rows)
    assert len(fine) == sum(r.task in ("sft", "lora") for r in cat.rows)


def test_marker_and_keyword_selection(suite):
    cat = suite.shipped_rows()
    cases = {
        "b200": lambda r: r.gpu == "b200",
        "h100 and fp8": lambda r: r.gpu == "h100" and r.precision == "fp8",
        "lora": lambda r: r.task == "lora",
        "nemotron4 and not bf16": lambda r: (
            r.model.startswith("nemotron4") and r.precision != "bf16"
        ),
        "automodel": lambda r: r.backend == "automodel",
    }
    for expr, pred in cases.items():
        result = suite.run("--collect-only", "-q", "-m", expr)
        expected = sorted(r.id for r in cat.rows if pred(r))
        assert expected and _ids(result) == expected, expr
    result = suite.run("--collect-only", "-q", "-k", "llama3_70b")
    assert _ids(result) == sorted(r.id for r in cat.rows if "llama3_70b" in r.id)


def test_gpus_filters_by_deselection(suite):
    cat = suite.shipped_rows()
    for spec, pred in {
        "64": lambda n: n == 64,
        "8,16": lambda n: n in (8, 16),
        "8-64": lambda n: 8 <= n <= 64,
        "1,256-1024": lambda n: n == 1 or 256 <= n <= 1024,
    }.items():
        result = suite.run("--collect-only", "-q", "--gpus", spec)
        kept = sorted(r.id for r in cat.rows if pred(r.num_gpus))
        assert _ids(result) == kept, spec
        outcome = result.parseoutcomes()
        assert outcome["deselected"] == len(cat.rows) - len(kept), spec
        assert "skipped" not in outcome
    # with -m the two filters combine
    result = suite.run("--collect-only", "-q", "--gpus", "64", "-m", "h100")
    assert _ids(result) == sorted(r.id for r in cat.rows if r.num_gpus == 64 and r.gpu == "h100")


def test_bad_gpus_spec_is_a_one_line_usage_error(suite):
    suite.shipped_rows()
    result = suite.run("--collect-only", "--gpus", "8-x")
    assert result.ret == 4  # pytest's usage error
    errors = [ln for ln in result.errlines if ln.startswith("ERROR:")]
    assert len(errors) == 1 and "8-x" in errors[0]
    assert "Traceback" not in "\n".join(result.errlines)


def test_malformed_baseline_is_a_one_line_error_naming_file_field_value(suite):
    cat = suite.shipped_rows()
    path = suite.baselines_dir / "h200.json"
    text = path.read_text().replace('"mbs": ', '"mbz": ', 1)
    path.write_text(text)
    result = suite.run("--collect-only", "-q")
    assert result.ret == 2  # before collection
    out = "\n".join(result.outlines + result.errlines)
    (line,) = [ln for ln in out.splitlines() if ln.strip()]
    assert str(path.name) in line and "mbz" in line
    assert "Traceback" not in out
    assert cat  # the untouched files were valid


def test_options_are_grouped_under_perfgate_with_help(suite):
    suite.shipped_rows()
    result = suite.run("--help")
    text = "\n".join(result.outlines)
    section = text.split("perfgate:", 1)[1]
    for flag in (
        "--gpus",
        "--partition",
        "--account",
        "--qos",
        "--time-limit",
        "--container-image",
        "--container-mounts",
        "--env-file",
        "--env",
        "--slurm-param",
        "--executor",
        "--steps",
        "--window",
        "--tolerance",
        "--override",
        "--results-dir",
        "--max-concurrent-jobs",
        "--resume",
        "--update-baselines",
        "--dry-run",
        "--replay",
        "--finetune-data",
        "--mock-finetune-data",
    ):
        assert f"{flag} " in section or f"{flag}=" in section, flag
    assert "$SBATCH_ACCOUNT" in section and "$SBATCH_PARTITION" in section


def test_an_empty_gpus_selection_says_which_gpu_counts_it_has(suite):
    """#21 item 8: `--dry-run -m h100 --gpus 7` ended with exit 5 and no word."""
    suite.shipped_rows()
    result = suite.run("--dry-run", "-m", "h100", "--gpus", "7")
    assert result.ret == 5
    assert (
        "perfgate: --gpus 7 keeps none of the 58 row(s) selected; their GPU counts: 1, 8, 16, "
        "32, 64, 128, 256, 512, 1024, 2048"
    ) in result.outlines


def test_an_unknown_marker_names_the_nearest_row_marker(suite):
    """#21 item 8: `-m b2000` got pytest's "Unknown marker(s)" with no hint."""
    suite.shipped_rows()
    result = suite.run("--dry-run", "-m", "b2000 and fp8")
    assert result.ret == 4
    (line,) = [ln for ln in result.errlines if ln.startswith("ERROR:")]
    assert line.startswith(
        "ERROR: -m 'b2000 and fp8': unknown marker b2000 (did you mean b200?); the rows' "
        "markers: automodel, b200, "
    )
    assert suite.run("--dry-run", "-m", "b200 and fp8 and not slurm").ret == 0
