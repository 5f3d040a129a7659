"""The report's order and colours: every verdict of perfgate.verdicts, worst first."""

from __future__ import annotations

from perfgate import verdicts
from perfgate.report import table


def test_every_verdict_has_a_place_and_a_colour_in_the_same_order():
    assert [v for v in table.VERDICT_ORDER if v in verdicts.VERDICTS] == list(verdicts.VERDICTS)
    tones = {v: table.VERDICT_TONE[v] for v in verdicts.VERDICTS}
    assert tones["REGRESSION"] == tones["INFRA"] == "red"
    assert tones["INCONCLUSIVE"] == tones["NO_BASELINE"] == table.VERDICT_TONE["SHIFT"] == "amber"
    assert tones["IMPROVEMENT"] == "blue" and tones["PASS"] == "green"


def _rec(row_id: str, verdict: str, delta: float | None) -> dict:
    return {"row_id": row_id, "verdict": verdict, "comparison": {"delta": delta}}


def test_worst_first_by_verdict_then_largest_slowdown():
    recs = [
        _rec("pass-a", "PASS", 0.01),
        _rec("reg-small", "REGRESSION", 0.08),
        _rec("skip", "SKIPPED", None),
        _rec("incon", "INCONCLUSIVE", 0.04),
        _rec("infra", "INFRA", None),
        _rec("reg-big", "REGRESSION", 0.27),
        _rec("shift", "SHIFT", 0.02),
        _rec("improve", "IMPROVEMENT", -0.09),
        _rec("nobase", "NO_BASELINE", None),
        _rec("pass-b", "PASS", -0.02),
    ]
    order = [r["row_id"] for r in table.worst_first(recs)]
    assert order == [
        "reg-big",
        "reg-small",
        "infra",
        "shift",
        "incon",
        "nobase",
        "improve",
        "pass-a",
        "pass-b",
        "skip",
    ]
    # pytest-html sorts the table on the verdict cell's text: the same order
    keys = [table.order_key(r) for r in recs]
    assert [recs[keys.index(k)]["row_id"] for k in sorted(keys)] == order


def test_verdict_cell_carries_its_colour_class():
    cell = table.row_cells(
        {
            "row_id": "x",
            "verdict": "INCONCLUSIVE",
            "comparison": {"delta": 0.0689},
            "row": {
                "num_gpus": 8,
                "gpu": "h100",
                "precision": "bf16",
                "mbs": 1,
                "gbs": 8,
                "seq_len": 4096,
            },
        }
    )
    verdict = next(c for c in cell if "col-verdict" in c)
    assert 'class="col-verdict verdict-INCONCLUSIVE pg-amber"' in verdict
    assert verdict.endswith(">INCONCLUSIVE</td>")
    assert any(">+6.9%</td>" in c for c in cell)
