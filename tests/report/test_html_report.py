"""The sign-off report: pytest-html columns, plot, extras, summary, environment and escaping;
JUnit properties; `perfgate report results.json` re-rendering from results.json alone."""

from __future__ import annotations

import base64
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


def test_pytest_html_report(suite, tmp_path):
    suite.real_baselines()
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
    blob = json.loads(unescape(re.search(r'data-jsonblob="([^"]*)"', raw).group(1)))

    # columns: our headers in the table head, one sortable th each
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
    tests = {k.split("[")[-1].rstrip("]"): v[-1] for k, v in blob["tests"].items()}
    reg = tests[REG_ROW]
    cells = {re.search(r'class="col-(\w+)', c).group(1): _parse(c) for c in reg["resultsTableRow"]}
    assert cells["verdict"].text[-1] == "REGRESSION"
    assert cells["delta"].text[-1] == "+27.32%"
    assert cells["baseline"].text[-1] == "4.36 s"
    assert cells["gpus"].text[-1] == "256× H100"
    assert cells["jobid"].text == ["2071234"]
    assert cells["mfu"].text[-1].endswith("(llmb)")  # the baseline's convention, named

    # a plot: an SVG image extra with the steps, the steady window and the baseline band
    (img,) = [e for e in reg["extras"] if e["format_type"] == "image"]
    assert img["mime_type"] == "image/svg+xml"
    svg = ET.fromstring(base64.b64decode(img["content"].split("base64,", 1)[1]))
    classes = {el.get("class") for el in svg.iter()}
    assert {"steps", "steady-window", "baseline-band", "baseline", "median"} <= classes

    # the failure's log tail: escaped wherever pytest-html renders HTML
    oom = tests[OOM_ROW]
    html_parts = (
        oom["resultsTableRow"]
        + [oom["log"]]
        + [e["content"] for e in oom["extras"] if e["format_type"] == "html"]
    )
    for part in html_parts:
        assert "script" not in _parse(part).tags
    assert any(EVIL in "".join(_parse(p).text) for p in html_parts[1:])  # shown, as text

    # sign-off summary at the top: counts, worst regression first; environment entries
    signoff = raw.split('<div class="perfgate-signoff">', 1)[1].split("</div>", 1)[0]
    text = " ".join(_parse(signoff).text)
    assert "REGRESSION: 1" in text and "PASS: 1" in text and "INFRA: 1" in text
    order = [
        REG_ROW,
        OOM_ROW,
        "pretrain-nemotron4_15b-h100-fp8ds-128gpu-tp2",
        "lora-llama3_70b-h100-bf16-8gpu-tp2pp4vp20",
    ]
    table = signoff.split("<table>", 1)[1]
    assert [table.index(f"<td>{r}</td>") for r in order] == sorted(
        table.index(f"<td>{r}</td>") for r in order
    )
    env = blob["environment"]
    assert env["perfgate: perfgate mode"] == "replay"

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


def test_perfgate_report_rerenders_from_results_json(suite, tmp_path, capsys):
    suite.real_baselines()
    logs = _replay_with_evil_log(suite, tmp_path)
    suite.run(f"--replay={logs}", "-m", "h100", "--tolerance", "0.12")
    results = suite.path / "perfgate-results" / "results.json"
    saved = results.read_text()
    out = tmp_path / "out.html"
    capsys.readouterr()
    assert perfgate_main(["report", str(results), "--html", str(out), "--json"]) == 0
    counts = json.loads(capsys.readouterr().out)
    assert counts["verdicts"] == {
        "REGRESSION": 1,
        "INFRA": 1,
        "INCONCLUSIVE": 1,
        "NO_BASELINE": 1,
        "PASS": 1,
        "SKIPPED": counts["rows"] - 5,
    }
    page = out.read_text()
    assert results.read_text() == saved  # rendering reads, never writes
    assert "<script" not in page  # static page: no script at all, and the log's is escaped
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert page.count("<svg") == 4  # a plot per row that has steps (PASS, REG, INCONCL, NO_BASE)
    assert page.index(REG_ROW) < page.index(OOM_ROW)  # worst first
    for title in ("Step time (median ± SE)", "Tokens/s/GPU", "TFLOP/s/GPU", "MFU", "Verdict"):
        assert f">{title}</th>" in page
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
