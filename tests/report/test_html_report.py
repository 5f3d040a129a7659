"""The sign-off report: pytest-html columns, plot, extras, summary, environment and escaping;
JUnit properties; `perfgate report results.json` re-rendering from results.json alone."""

from __future__ import annotations

import html
import json
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from html import unescape
from html.parser import HTMLParser
from pathlib import Path

from suite.pytester_suite import EXAMPLES

from perfgate.cli import main as perfgate_main

pytest_plugins = ["pytester"]

EVIL = "<script>alert(1)</script>"
OOM_ROW = "pretrain-nemotron4_15b-h100-bf16-16gpu-tp2"
REG_ROW = "pretrain-nemotron4_340b-h100-bf16-256gpu-tp8pp8"


class _Text(HTMLParser):
    """Text content and element names of an HTML fragment (what a browser would build)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.text: list[str] = []
        self.tags: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)

    def handle_data(self, data):
        self.text.append(data)


def _parse(fragment: str) -> _Text:
    p = _Text()
    p.feed(fragment)
    return p


def _replay_with_evil_log(suite, tmp_path: Path) -> Path:
    """The shipped examples, plus an OOM log carrying a script tag (untrusted log text)."""
    import shutil

    logs = tmp_path / "logs"
    shutil.copytree(EXAMPLES, logs)
    oom = next(logs.glob("pretrain_nemotron4_15b_bf16_16/*/*/log-*.out"))
    oom.write_text(oom.read_text().replace("Traceback", f"{EVIL}\nTraceback"))
    return logs


def page_blob(raw: str) -> dict:
    """pytest-html's data of a report page (what its script renders the table from)."""
    return json.loads(unescape(re.search(r'data-jsonblob="([^"]*)"', raw).group(1)))


def row_details(raw: str) -> dict[str, str]:
    """Row id -> its detail block, as the page stores it for its script (perfgate.report.lazy)."""
    found = re.findall(r'<script type="application/json" id="pg-d-([^"]*)">(.*?)</script>', raw)
    return {unescape(rid): json.loads(text) for rid, text in found}


def row_tests(blob: dict) -> dict[str, dict]:
    """Row id -> the row's test data."""
    return {k.split("[")[-1].rstrip("]"): v[-1] for k, v in blob["tests"].items() if v}


def test_pytest_html_report(suite, tmp_path):
    suite.shipped_rows()
    logs = _replay_with_evil_log(suite, tmp_path)
    result = suite.run(
        f"--replay={logs}",
        "-m",
        "h100",
        "--tolerance",
        "0.12",
        "--html",
        "report.html",
        "--self-contained-html",
        "--junitxml",
        "junit.xml",
    )
    assert result.ret == 1
    raw = (suite.path / "report.html").read_text()
    assert "<script>alert(1)" not in raw  # nowhere in the page unescaped
    blob = page_blob(raw)

    # columns: our headers in the table head, one sortable th each; pytest-html's Links gone
    for title in (
        "GPUs",
        "Precision",
        "Parallelism",
        "Step time (median ± SE)",
        "Baseline",
        "Δ step time",
        "Tokens/s/GPU",
        "TFLOP/s/GPU",
        "MFU",
        "Peak memory",
        "Verdict",
        "Slurm job",
    ):
        assert f">{title}</th>" in raw, title
    assert ">Links</th>" not in raw
    # worst first: pytest-html sorts on the verdict column, whose keys order the rows
    assert blob["initialSort"] == "verdict"
    tests = row_tests(blob)
    keys = sorted(tests, key=lambda rid: tests[rid]["verdict"])
    assert keys[:2] == [REG_ROW, OOM_ROW]
    assert keys[-1] == "pretrain-nemotron4_15b-h100-bf16-64gpu-tp2"  # the PASS (tolerance 12%)
    # skipped rows are not in the table: 5 rows judged, 52 skipped folded into one line
    assert len(tests) == 5
    reg = tests[REG_ROW]
    cells = {re.search(r'class="col-(\w+)', c).group(1): _parse(c) for c in reg["resultsTableRow"]}
    assert cells["verdict"].text[-1] == "REGRESSION"
    assert 'class="col-verdict verdict-REGRESSION pg-red"' in reg["resultsTableRow"][3]
    assert cells["testId"].text == [REG_ROW]
    assert cells["delta"].text[-1] == "+27.3%"
    assert cells["baseline"].text[-1] == "4.36 s"
    assert cells["gpus"].text[-1] == "256× H100"
    assert cells["jobid"].text == ["2071234"]
    assert cells["mfu"].text[-1].endswith("(llmb)")  # the baseline's convention, named

    # one html extra: where the detail block goes; the block, with the plot inline (full
    # width, not a thumbnail), waits in the page for its script (filled in when seen)
    (extra,) = reg["extras"]
    assert extra["format_type"] == "html"
    assert extra["content"].startswith(f'<div class="pg-detail" data-detail="pg-d-{REG_ROW}">')
    details = row_details(raw)
    assert sorted(details) == sorted(tests)  # a block for each row of the table, no other
    svg_text = re.search(r"<svg.*?</svg>", details[REG_ROW], re.S).group(0)
    svg = ET.fromstring(svg_text)
    classes = {el.get("class") for el in svg.iter()}
    assert {"steps", "steady-window", "baseline-band", "baseline", "median"} <= classes
    assert "Baseline 4.36 s from seed 001: llmb Nemotron4" in _parse(details[REG_ROW]).text[1]

    # the failure: its cause once, the log tail escaped, the proving line marked in it
    oom = tests[OOM_ROW]
    detail = details[OOM_ROW]
    html_parts = [*oom["resultsTableRow"], oom["log"], detail]
    for part in html_parts:
        assert "script" not in _parse(part).tags
    text = "".join(_parse(detail).text)
    assert EVIL in text  # shown, as text
    assert text.count("Tried to allocate 1.50 GiB") == 1  # in the log tail only
    assert "INFRA OOM: CUDA out of memory (log-pretrain_nemotron4_15b_bf16_16.out)" in text
    assert "<mark>torch.OutOfMemoryError: CUDA out of memory." in detail
    assert oom["log"] == ""  # pytest-html's log area repeats nothing

    # sign-off summary at the top: decision, counts, worst rows linked, skipped in one line
    signoff = raw.split('<div class="perfgate-signoff">', 1)[1].split("</div>", 1)[0]
    text = " ".join(_parse(signoff).text)
    assert "Sign-off: Not ready: 1 REGRESSION, 1 INFRA; to look at: 1 INCONCLUSIVE" in text
    assert "PASS 1" in text and "SKIPPED 53" in text
    assert "53 rows skipped, 89 deselected (-m, -k, --gpus)" in text
    assert "replay of " in text and "; by " in text
    order = [REG_ROW, OOM_ROW, "pretrain-nemotron4_15b-h100-fp8ds-128gpu-tp2"]
    links = re.findall(r'<a href="#([^"]+)">', signoff)
    assert links[:3] == order
    assert "lora-llama3_70b-h100-bf16-8gpu-tp2pp4vp20" in links  # NO_BASELINE listed too
    assert blob["environment"]["perfgate: perfgate mode"] == "replay"

    # JUnit XML carries the key metrics as properties
    junit = ET.parse(suite.path / "junit.xml")
    case = next(c for c in junit.iter("testcase") if REG_ROW in c.get("name"))
    props = {p.get("name"): p.get("value") for p in case.iter("property")}
    assert props["perfgate.verdict"] == "REGRESSION"
    assert float(props["perfgate.baseline_step_time_s"]) == 4.36
    assert float(props["perfgate.step_time_s"]) == float(
        suite.results()["rows"][REG_ROW]["measured"]["step_time_s"]
    )
    assert props["perfgate.flops_convention"] == "llmb" and props["perfgate.job_id"] == "2071234"


def _without_times(raw: str) -> tuple[str, dict]:
    """A page with its generation time and durations taken out, and its data."""
    blob = page_blob(raw)
    for tests in blob["tests"].values():
        for t in tests:
            t.pop("duration")
            t["resultsTableRow"] = [c for c in t["resultsTableRow"] if "col-duration" not in c]
    html = re.sub(r'data-jsonblob="[^"]*"', "", raw)
    html = re.sub(r"generated on .*? by", "", html)
    return re.sub(r'<p class="run-count">[^<]*</p>', "", html), blob


def test_perfgate_report_renders_the_same_page(suite, tmp_path, capsys):
    suite.shipped_rows()
    logs = _replay_with_evil_log(suite, tmp_path)
    suite.run(f"--replay={logs}", "-m", "h100", "--html", "report.html", "--self-contained-html")
    results = suite.path / "perfgate-results" / "results.json"
    saved = results.read_text()
    out = tmp_path / "out.html"
    capsys.readouterr()
    assert perfgate_main(["report", str(results), "--html", str(out), "--json"]) == 0
    counts = json.loads(capsys.readouterr().out)
    assert counts["verdicts"] == {
        "REGRESSION": 1,
        "INFRA": 1,
        "INCONCLUSIVE": 2,
        "NO_BASELINE": 1,
        "SKIPPED": counts["rows"] - 5,
    }
    assert results.read_text() == saved  # rendering reads, never writes
    # one page: pytest-html's, with the same data, cells, details and summary
    html_a, blob_a = _without_times((suite.path / "report.html").read_text())
    html_b, blob_b = _without_times(out.read_text())
    assert blob_a == blob_b
    assert html_a == html_b
    # the terminal says what the page's summary says, line for line (#33)
    assert perfgate_main(["report", str(results)]) == 0
    said = capsys.readouterr().out.splitlines()
    page = html.unescape(re.sub(r"<[^>]+>", "\n", out.read_text()))
    assert (
        said[0]
        == "sign-off: Not ready: 1 REGRESSION, 1 INFRA; to look at: 2 INCONCLUSIVE, 1 NO_BASELINE"
    )
    assert "Sign-off: " + said[0].removeprefix("sign-off: ") in page
    for prefix in ("session: ", "false alarms: "):
        (line,) = [ln for ln in said if ln.startswith(prefix)]
        assert line.removeprefix(prefix) in page, line
    # the same command through a real subprocess, and a bad file is a one-line error
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    proc = subprocess.run(
        [sys.executable, "-m", "perfgate", "report", str(bad)], capture_output=True, text=True
    )
    assert proc.returncode == 2
    assert proc.stderr.strip() == (
        f"perfgate report: error: {bad}: field 'schema' is None, expected 'perfgate.results/1'"
    )
