"""The step-time SVG: scaled to the steady part, warm-up clipped, window and band drawn, escaped."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from perfgate.report.plot import Trace, step_time_svg

NS = "{http://www.w3.org/2000/svg}"


def _series(reference):
    path = reference / "third_party_logs" / "together_b200_llama3.1_8b_bf16_gbs128_nemo2602.csv"
    lines = [ln for ln in path.read_text().splitlines() if ln and not ln.startswith("#")][1:]
    # CSV steps are Megatron's 1-based iterations; the plot is 0-based.
    return [(int(a) - 1, float(b)) for a, b in (ln.split(",") for ln in lines)]


def test_real_series_plot_is_scaled_to_the_steady_part(reference):
    pts = _series(reference)
    svg = step_time_svg(
        [Trace("run", pts)],
        "llama3.1 8b",
        window=(20, 49),
        median_s=5.7059,
        baseline_s=5.67,
        tolerance=0.05,
    )
    root = ET.fromstring(svg)
    (poly,) = root.iter(f"{NS}polyline")
    ys = [float(p.split(",")[1]) for p in poly.get("points").split()]
    assert len(ys) == 50
    # Steady steps spread over many pixels (not flattened by the 43.8 s first step) ...
    steady = ys[20:]
    assert max(steady) - min(steady) > 5
    # ... and the first step sits on the top edge, marked as clipped with its value.
    assert ys[0] == min(ys)
    clipped = [t for t in root.iter(f"{NS}text") if t.get("class") == "clipped"]
    assert any(t.find(f"{NS}title").text == "step 0: 43.82 s" for t in clipped)
    window = next(r for r in root.iter(f"{NS}rect") if r.get("class") == "steady-window")
    band = next(r for r in root.iter(f"{NS}rect") if r.get("class") == "baseline-band")
    x_first = float(poly.get("points").split()[20].split(",")[0])
    assert abs(float(window.get("x")) - x_first) < 0.2
    base_y = float(
        next(e for e in root.iter(f"{NS}line") if e.get("class") == "baseline").get("y1")
    )
    assert float(band.get("y")) < base_y < float(band.get("y")) + float(band.get("height"))


def test_text_from_rows_and_logs_is_escaped():
    evil = "<script>alert(1)</script>"
    svg = step_time_svg([Trace(evil, [(0, 1.0), (1, 1.1)])], evil)
    root = ET.fromstring(svg)  # well-formed: nothing leaked as markup
    assert not list(root.iter(f"{NS}script")) and not list(root.iter("script"))
    assert evil in [t.text for t in root.iter(f"{NS}text")]


def test_no_steps():
    svg = step_time_svg([], "row-x")
    assert "no step times recorded" in svg
    ET.fromstring(svg)


def _legend_boxes(root):
    """(x, y, text) of each legend label."""
    out = []
    for g in root.iter(f"{NS}g"):
        if g.get("class") == "legend-item":
            t = g.find(f"{NS}text")
            out.append((float(t.get("x")), float(t.get("y")), t.text))
    return out


def test_legend_is_inside_the_svg_and_labels_do_not_run_over(reference):
    """Issue #15: 'baseline 4.36 s +- 5.0%' was cut off at the SVG's edge."""
    pts = _series(reference)
    long_label = "candidate (nvcr.io/nvidia/nemo:25.09.01-with-a-long-site-suffix, 4 runs)"
    traces = [Trace("baseline (nvcr.io/nvidia/nemo:25.07, 4 runs)", pts), Trace(long_label, pts)]
    svg = step_time_svg(traces, "row", (20, 49), 5.7059, 5.67, 0.05)
    root = ET.fromstring(svg)
    width, height = float(root.get("width")), float(root.get("height"))
    assert root.get("viewBox") == f"0 0 {width:g} {height:g}"
    items = _legend_boxes(root)
    assert [t for _, _, t in items][-1] == "baseline 5.67 s ± 5.0%"
    rows = sorted({y for _, y, _ in items})
    assert len(rows) >= 2  # wrapped, and the SVG grew to hold every row
    assert max(rows) + 6 <= height
    for y in rows:  # per row: labels, at a generous glyph width, end before the next and the edge
        row = sorted((x, t) for x, yy, t in items if yy == y)
        ends = [x + 7.2 * len(t) for x, t in row]
        starts = [x for x, _ in row[1:]] + [width]
        assert all(e <= s for e, s in zip(ends, starts, strict=True)), row


def test_off_scale_values_are_written_above_the_plot_not_over_the_markers(reference):
    pts = _series(reference)  # steps 0 (43.8 s) and a few more are off the scale
    root = ET.fromstring(step_time_svg([Trace("run", pts)], "t", (20, 49), 5.7059, 5.67, 0.05))
    marks = [t for t in root.iter(f"{NS}text") if t.get("class") == "clipped"]
    (note,) = [t for t in root.iter(f"{NS}text") if t.get("class") == "off-scale"]
    assert note.text.startswith("off the scale (▲▼): step 0 43.82 s")
    top = min(float(m.get("y")) for m in marks) - 10  # a 10px marker's top
    assert float(note.get("y")) < top


def test_nan_inf_and_huge_steps_are_named_not_drawn_and_never_hang():
    import math

    pts = [(0, math.nan), (1, 2.0), (2, math.inf), (3, 2.1), (4, 1e300), (5, 2.05)]
    svg = step_time_svg([Trace("run", pts)], "r", window=(1, 5), median_s=math.nan)
    root = ET.fromstring(svg)
    (poly,) = root.iter(f"{NS}polyline")
    assert len(poly.get("points").split()) == 3  # the three finite step times
    note = next(t for t in root.iter(f"{NS}text") if t.get("class") == "off-scale").text
    assert note == "not a step time: step 0 nan, step 2 inf, step 4 1e+300"
    empty = step_time_svg([Trace("run", [(0, math.nan)])], "r")
    assert "no finite step times" in empty


def test_a_results_record_with_null_step_times_renders():
    from perfgate.report.plot import svg_for_record

    rec = {"row_id": "r", "runs": [{"label": "baseline", "steps": [[0, None], [1, 2.0]]}]}
    assert "not a step time: step 0 nan" in svg_for_record(rec)
