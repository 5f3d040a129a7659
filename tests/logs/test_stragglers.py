"""The slowest rank of a run from the straggler reports in its logs, on real excerpts."""

from __future__ import annotations

from pathlib import Path

import pytest

from perfgate.logs.stragglers import node_of, slowest_rank

LOGS = Path(__file__).resolve().parents[1] / "data" / "logs"


def _slowest(name: str):
    return slowest_rank((LOGS / name).read_text().splitlines())


def test_megatron_detector_names_the_rank_with_the_longest_op_time():
    s = _slowest("straggler_megatron_readme.log")
    assert (s.rank, s.node, s.reports, s.of) == (0, None, 1, 1)
    assert (
        s.how == "Megatron straggler detector: longest op time 3468.20 ms (fastest rank 3453.08 ms)"
    )
    s = _slowest("straggler_savanna_40b.log")
    assert (s.rank, s.node) == (30, None) and "1570.32 ms" in s.how


def test_nvrx_names_the_rank_and_node_with_the_lowest_relative_score():
    s = _slowest("straggler_nvrx_nemo2_demo.log")
    assert (s.rank, s.node) == (5, "4809917ea058")  # rank 4 ties at 0.97: the first listed
    assert s.how == "NVRx straggler report: lowest relative score 0.97"
    s = _slowest("straggler_nvrx_512rank_docs.log")
    # the individual-performance section (rank 76 at 0.98 there) is not the relative one
    assert (s.rank, s.node, s.of) == (76, "h100-001-253-012", 1)


def test_the_rank_slowest_most_often_wins_over_one_bad_interval():
    line = "| MnRtt/Rnk: 100.00ms/{fast} | MxRtt/Rnk: {ms}ms/{slow} | MnEtpt/Rnk: 1.00TF/{slow}"
    lines = [line.format(fast=0, ms="110.00", slow=7)] * 5 + [
        line.format(fast=0, ms="150.00", slow=3)
    ]
    s = slowest_rank(lines)
    assert (s.rank, s.reports, s.of) == (7, 5, 6)


def test_a_log_without_reports_names_nobody():
    assert slowest_rank((LOGS / "nemo2_b200_llama3_8b.log").read_text().splitlines()) is None


@pytest.mark.parametrize(
    ("rank", "node"), [(0, "n1"), (7, "n1"), (8, "n2"), (31, "n4"), (32, None)]
)
def test_ranks_map_to_nodes_in_slurms_block_order(rank, node):
    assert node_of(rank, ["n1", "n2", "n3", "n4"], 8) == node
