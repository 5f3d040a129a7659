"""Nodes that slowed several rows in one session (perfgate.history.night_nodes)."""

from __future__ import annotations

import random

from perfgate.history.night_nodes import NightRun, slow_tonight


def night(seed: int, slow_node: str | None = None, rows: int = 145) -> list[NightRun]:
    """A night of one-node rows on 200 nodes, p-values uniform, a slow node's rows slow."""
    rng = random.Random(seed)
    runs = []
    for i in range(rows):
        node = f"n{rng.randrange(200)}"
        if slow_node and i % 40 == 0:
            node = slow_node  # 4 rows land on it tonight
        slow = node == slow_node
        p = rng.uniform(1e-5, 1e-3) if slow else rng.random()
        runs.append(NightRun(f"r{i}", p, slow or p < 0.003, (node,), 0.04 if slow else 0.0))
    return runs


def test_a_node_that_slowed_several_rows_tonight_is_named() -> None:
    found = slow_tonight(night(1, slow_node="s7"))
    assert [f.node for f in found] == ["s7"]
    assert found[0].slow_rows == ("r0", "r40", "r80", "r120") and found[0].runs == 4
    assert found[0].p_value < 1e-8
    assert found[0].to_dict()["deltas"] == [0.04] * 4


def test_nights_without_a_slow_node_name_none() -> None:
    assert sum(len(slow_tonight(night(seed))) for seed in range(200)) == 0


def test_one_slow_row_says_nothing_about_its_nodes_and_two_must_beat_chance() -> None:
    one = [NightRun("a", 1e-9, True, ("n1", "n2")), NightRun("b", 0.4, False, ("n1",))]
    assert slow_tonight(one) == []
    two = [*one, NightRun("c", 1e-9, True, ("n1", "n3"))]
    assert [f.node for f in slow_tonight(two)] == ["n1"]
    # two barely slow rows on a node that also ran fast ones: not beyond chance
    mixed = [NightRun(f"r{i}", 0.02 if i < 2 else 0.9, i < 2, ("n1",)) for i in range(6)]
    mixed += [NightRun(f"o{i}", random.Random(i).random(), False, (f"m{i}",)) for i in range(300)]
    assert slow_tonight(mixed) == []
    nan = [NightRun("a", float("nan"), True, ("n1",)), NightRun("b", float("nan"), True, ("n1",))]
    assert slow_tonight(nan) == []
