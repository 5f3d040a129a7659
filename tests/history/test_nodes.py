"""`perfgate nodes`: the nodes whose runs are slower than chance, from the history's runs."""

from __future__ import annotations

import json
import math
import random
from pathlib import Path

import pytest

from perfgate.cli import main as perfgate_main
from perfgate.history.nodes import NodeRun, exclude_list, percentiles, slow_nodes
from perfgate.history.sqlite import SqliteStore
from perfgate.history.store import Run, Session

NODES = [f"n{i}" for i in range(16)]


def cluster_history(
    rng: random.Random, nights: int, slow: dict[str, float], rows: int = 12, size: int = 2
) -> list[NodeRun]:
    """rows rows a night, each on `size` random nodes, 1% launch noise; a slow node adds its
    fraction to every run it takes part in."""
    out = []
    for night in range(nights):
        for r in range(rows):
            nodes = tuple(rng.sample(NODES, size))
            t = (1.0 + r) * math.exp(rng.gauss(0, 0.01))
            t *= 1 + max((slow.get(n, 0.0) for n in nodes), default=0.0)
            out.append(NodeRun(f"row{r}", t, nodes, job_id=f"{night}-{r}"))
    return out


def test_percentiles_are_mid_ranks_within_each_row() -> None:
    runs = [NodeRun("a", t, ("x",)) for t in (3.0, 1.0, 2.0)] + [NodeRun("b", 9.0, ("y",))]
    got = {(r.row_id, r.step_time_s): (u, v) for r, u, v in percentiles(runs)}
    var = 8 / 108  # (n^2 - 1) / (12 n^2) for n = 3
    assert got == {("a", 1.0): (1 / 6, var), ("a", 2.0): (0.5, var), ("a", 3.0): (5 / 6, var)}


@pytest.mark.parametrize(("nights", "at_least"), [(5, 0.8), (8, 0.95)])
def test_a_slow_node_is_named_after_a_few_nights_and_no_other(nights: int, at_least: float):
    # 12 two-node rows a night on 16 nodes: a node takes part in ~1.5 runs a night.
    named = others = 0
    for seed in range(40):
        found = slow_nodes(cluster_history(random.Random(seed), nights, slow={"n7": 0.04}))
        flagged = [f.node for f in found if f.flagged]
        named += flagged[:1] == ["n7"]
        others += len([n for n in flagged if n != "n7"])
        if flagged[:1] == ["n7"]:
            assert found[0].mean_percentile > 0.75
            assert exclude_list(found).startswith("--exclude=n7")
    assert named >= at_least * 40
    assert others <= 2  # a good node sharing jobs with n7 is lifted, rarely enough to be named


def test_without_a_slow_node_false_names_stay_below_the_fdr() -> None:
    rng = random.Random(17)
    days = 300
    false = sum(
        any(f.flagged for f in slow_nodes(cluster_history(rng, 5, {}))) for _ in range(days)
    )
    assert (
        false / days <= 0.05
    )  # BH at q = 0.05 over the 16 nodes; the mid-rank test is conservative


def test_nodes_with_too_few_runs_are_not_tested() -> None:
    runs = [NodeRun("a", 1.0 + i, (f"m{i}",)) for i in range(5)]
    assert slow_nodes(runs, min_runs=3) == []


def store_history(store, rng: random.Random, nights: int, slow: dict[str, float]) -> None:
    """cluster_history written night by night into a store (each night one session), with
    an INFRA run a night that is no speed measurement."""
    history = cluster_history(rng, nights, slow)
    for night in range(nights):
        sid = store.start_session(Session("live", started_at=f"2026-05-0{night + 1}T01:00:00Z"))
        tonight = [r for r in history if r.job_id.startswith(f"{night}-")]
        store.add_runs(
            sid,
            [
                Run(r.row_id, "stored", "baseline", 1, True, r.step_time_s, nodes=r.nodes)
                for r in tonight
            ]
            + [Run("row0", "stored", "baseline", 2, False, cause="OOM", nodes=("n9",))],
        )


def test_the_store_and_the_command_name_the_slow_node(tmp_path: Path, capsys) -> None:
    path = tmp_path / "h.sqlite"
    store = SqliteStore(path)
    store_history(store, random.Random(2), nights=5, slow={"n3": 0.05})
    assert len(store.node_runs()) == 60  # the INFRA run is not a speed measurement
    assert perfgate_main(["nodes", "--history", str(path)]) == 0
    out = capsys.readouterr().out
    assert "n3: SLOW" in out and out.strip().endswith("--exclude=n3")
    assert perfgate_main(["nodes", "--history", str(path), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["exclude"] == "--exclude=n3" and data["nodes"][0]["node"] == "n3"


def test_runs_without_nodes_are_said_to_have_none(tmp_path: Path, capsys) -> None:
    path = tmp_path / "h.sqlite"
    store = SqliteStore(path)
    sid = store.start_session(Session("replay", started_at="2026-05-01T01:00:00Z"))
    store.add_runs(sid, [Run("row0", "stored", "baseline", i, True, 1.0) for i in (1, 2)])
    assert perfgate_main(["nodes", "--history", str(path)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("no node to test: 2 run(s) in the history, none with its nodes recorded")
    empty = tmp_path / "e.sqlite"
    SqliteStore(empty).start_session(Session("live", started_at="2026-05-01T01:00:00Z"))
    assert perfgate_main(["nodes", "--history", str(empty)]) == 0
    assert capsys.readouterr().out == "no node to test: the history has no runs yet\n"


def test_bad_input_is_one_line(tmp_path: Path, capsys) -> None:
    assert perfgate_main(["nodes", "--history", str(tmp_path / "none.sqlite")]) == 2
    assert "no history yet" in capsys.readouterr().err
    SqliteStore(tmp_path / "h.sqlite").start_session(Session("live"))
    assert perfgate_main(["nodes", "--history", str(tmp_path / "h.sqlite"), "--fdr", "2"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--fdr 2" in err[0]


@pytest.mark.parametrize("min_runs", [0, 1])
def test_min_runs_must_allow_a_test(tmp_path: Path, capsys, min_runs: int) -> None:
    SqliteStore(tmp_path / "h.sqlite").start_session(Session("live"))
    args = ["nodes", "--history", str(tmp_path / "h.sqlite"), "--min-runs", str(min_runs)]
    assert perfgate_main(args) == 2
    assert f"--min-runs {min_runs}" in capsys.readouterr().err
