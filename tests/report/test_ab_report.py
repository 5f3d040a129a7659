"""The A/B part of the report: both containers side by side, each pair, the estimate, drift;
in the table, the sign-off, the plot and `perfgate report`, escaped (images are user text)."""

from __future__ import annotations

import json
import math
import re
from html import unescape
from html.parser import HTMLParser

from rowfactory import make_row

from perfgate.catalog import Baseline, Provenance
from perfgate.logs import Step, StepSeries
from perfgate.report import ab, page, results, sessionfiles, signoff, table
from perfgate.report.plot import COLORS, svg_for_record
from perfgate.runs import RunRecord, RunResult
from perfgate.verdicts import pairs_rule
from perfgate.verdicts.paired import evaluate_ab
from report.test_html_report import row_details

EVIL = "<script>alert(1)</script>"
OLD, NEW = f"/lustre/{EVIL}nemo-25.07.sqsh", "/lustre/nemo-25.09.sqsh"
ROW = make_row(
    model="llama3_8b",
    num_gpus=8,
    tp=1,
    gbs=8,  # about 45% MFU at 1 s (a faster row would be INFRA IMPOSSIBLE)
    mbs=1,
    seq_len=8192,
    baseline=Baseline(step_time_s=1.0, provenance=Provenance("test"), tolerance=0.03),
)


def run(label: str, median: float, k: int) -> RunRecord:
    # 30 steps: 5 warm-up steps, then a steady +-0.5% pattern around the median
    times = [3.0 * median] * 5 + [median * (1 + 0.005 * math.sin(i + k)) for i in range(25)]
    versions = {"nemo": "2.4.0", "torch": "2.7.0", "nccl": "2.26.5"}
    if label == "candidate":
        versions = {**versions, "nemo": "2.5.0", "nccl": "2.27.3"}
    return RunRecord(
        image=OLD if label == "baseline" else NEW,
        label=label,
        series=StepSeries("perfgate", tuple(Step(i, t) for i, t in enumerate(times))),
        versions=versions,
        image_digest=f"sha256:{label[0] * 64}",
    )


def ab_record(slowdown: float = 0.08) -> dict:
    runs = []
    for i in range(3):  # AB BA AB
        pair = [run("baseline", 1.0, i), run("candidate", 1.0 + slowdown, i)]
        runs += pair if i % 2 == 0 else pair[::-1]
    res = RunResult(ROW.id, "77", "COMPLETED", runs=tuple(runs), nodes=("n1",))
    ev = evaluate_ab(ROW, res, source="live", first_pairs=3, max_pairs=8)
    return results.record(ev, ROW, nodeid="t::x", outcome="failed", repro="pytest", source="live")


class _Text(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.text: list[str] = []
        self.tags: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)

    def handle_data(self, data):
        self.text.append(data)


def test_record_keeps_both_sides_each_pair_and_the_estimate():
    rec = json.loads(json.dumps(ab_record()))  # what results.json holds
    assert rec["verdict"] == "REGRESSION" and rec["mode"] == "paired"
    a = rec["ab"]
    assert a["changed"] == {
        "nemo": {"baseline": "2.4.0", "candidate": "2.5.0"},
        "nccl": {"baseline": "2.26.5", "candidate": "2.27.3"},
    }
    assert a["sides"]["candidate"]["digest"] == "sha256:" + "c" * 64
    assert "".join(r["image_digest"][7] for r in rec["runs"]) == "bccbbc"  # AB BA AB
    c = rec["comparison"]
    assert c["delta"] == abs(c["delta"]) and abs(c["delta"] - 0.08) < 0.002
    assert c["alpha"] == pairs_rule.alpha_for(3, 8) and c["detectable"] > c["tolerance"]
    assert c["n_candidate"] == 3 and len(c["pair_deltas"]) == 3


def test_ab_block_is_escaped_and_highlights_what_changed():
    html = ab.ab_html(ab_record())
    p = _Text()
    p.feed(html)
    text = "".join(p.text)
    assert "script" not in p.tags and EVIL in text  # shown as text, never run
    assert "Launch order (A baseline, B candidate): AB BA AB" in text
    assert "versions changed: NeMo 2.4.0 -> 2.5.0, NCCL 2.26.5 -> 2.27.3" in text
    assert "sha256:" + "b" * 64 + " (sha256 of the squashfs file; with podman, its image" in text
    changed = re.findall(r'<tr class="pg-changed"><td>([^<]+)</td>', html)
    assert changed == ["Digest", "NeMo", "NCCL"]  # PyTorch is the same on both sides
    assert "<td>2</td><td>BA</td><td>3-4</td><td>1 s</td><td>1.08 s</td><td>+8.0%</td>" in html
    assert "Paired estimate: Δ step time +8.0" in text and "3 of 3 pairs used" in text
    assert re.search(r"Drift vs the stored baseline 1 s: baseline image [+-]0\.\d%", text)


def test_table_signoff_and_plot_name_the_mode():
    rec = ab_record()
    cells = dict(zip([k for k, _, _ in table.COLUMNS], table.row_cells(rec), strict=True))
    assert ">A/B 3 pairs</td>" in cells["mode"]
    assert re.search(r">0\.99\d+ s \(A/B\)</td>", cells["baseline"])  # the baseline image
    lines = signoff.terminal_lines([rec])
    assert lines[:2] == ["sign-off: Not ready: 1 REGRESSION", "REGRESSION: 1"]
    assert lines[2].startswith("A/B gate: 1 of 1 rows judged by A/B pairs in one allocation")
    assert "versions changed: NeMo 2.4.0 -> 2.5.0, NCCL 2.26.5 -> 2.27.3." in lines[2]
    svg = svg_for_record(rec)
    # six runs, two colors, one legend entry per side
    assert svg.count(f'stroke="{COLORS[0]}"') == 3 and svg.count(f'stroke="{COLORS[1]}"') == 3
    assert svg.count("3 runs)</text>") == 2


def test_perfgate_report_renders_the_ab_rows(tmp_path):
    f = sessionfiles.ResultsFile(tmp_path / "results.json", {"mode": "live"})
    f.add(ab_record())
    html = page.render(sessionfiles.read(f.path))
    (detail,) = row_details(html).values()
    assert "Baseline (A)" in detail and "Candidate (B)" in detail and "<script>" not in detail
    assert "A/B gate: 1 of 1 rows judged by A/B pairs" in html
    # stats of the row carry the A/B details
    assert '"order": "AB BA AB"' in unescape(detail)
