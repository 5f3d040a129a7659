"""Which nodes a job is kept off (perfgate.launch.avoid), the partition's usable nodes as sinfo
lists them, and the sbatch script that carries the list."""

from __future__ import annotations

import pytest

from perfgate.errors import ConfigError
from perfgate.launch import plan
from perfgate.launch.avoid import CAP_FRACTION, cap_of, exclusions
from perfgate.launch.planning import confirmation_options
from perfgate.launch.slurmstate import partition_nodes
from perfgate.launch.types import LaunchOptions

PART = [f"n{i}" for i in range(40)]


def test_first_runs_keep_off_the_most_suspect_flagged_nodes_within_the_cap() -> None:
    flagged = ["n7", "n3", "n30", "n12", "n19", "gone9"]  # most suspect first
    a = exclusions(flagged, partition=PART, need=8, first_run=True)
    assert cap_of(40, 8) == 4 == int(CAP_FRACTION * 40)  # a tenth of 40 usable nodes
    assert a.flagged == ("n7", "n3", "n30", "n12") and a.nodes == ("n12", "n3", "n30", "n7")
    assert a.left_out == ("n19", "gone9")
    assert a.why == (
        "kept off 4 of the 6 node(s) perfgate nodes flags (cap: 10% of the partition's 40 "
        "usable nodes, at least one, leaving at least 8 for the largest job); not kept off: "
        "n19, gone9 (1 not in the partition)"
    )


def test_a_partition_is_never_starved_for_the_largest_job() -> None:
    small = PART[:10]
    # 10 usable nodes, a 9-node row: one node to spare, whatever a tenth would allow
    assert exclusions(["n1", "n2"], partition=small, need=9, first_run=True).nodes == ("n1",)
    assert exclusions(["n1"], partition=small, need=10, first_run=True).nodes == ()
    # a tenth of 4 nodes is none, but one known-slow node can be spared for 1-node rows
    assert cap_of(4, 1) == 1 and cap_of(4, 4) == 0
    # a rerun keeps off its first run's nodes first, then flagged ones in what is left
    r = exclusions(["n9", "n8"], must=["n1", "n2", "n3"], partition=small, need=6)
    assert r.nodes == ("n1", "n2", "n3", "n9") and r.flagged == ("n9",)
    # ...and when even those do not fit, as many as leave the row its nodes
    tight = exclusions(["n9"], must=["n1", "n2", "n3"], partition=small, need=8)
    assert tight.nodes == ("n1", "n2") and tight.left_out == ("n9",)
    assert tight.why.startswith(
        "kept off 2 of the 3 nodes of its earlier runs only (the partition's 10 usable nodes "
        "must leave 8 for the job)"
    )


def test_without_the_partitions_nodes_only_reruns_keep_off_flagged_nodes() -> None:
    first = exclusions(["n7"], partition=None, need=2, first_run=True)
    assert first.nodes == () and first.left_out == ("n7",)
    assert "partition's nodes are unknown" in first.why
    rerun = exclusions(["n7"], must=["n1", "n2"], partition=None, need=2)
    assert rerun.nodes == ("n1", "n2", "n7") and rerun.why == ""
    assert exclusions([], partition=PART, need=1, first_run=True).nodes == ()


def test_sinfo_node_lines_give_the_partitions_usable_nodes() -> None:
    text = "\n".join(
        [
            "n1|gpu*|idle",
            "n2|gpu*|mix",
            "n3|gpu*|drain",
            "n4|gpu*|down*",
            "n5|gpu*|alloc",
            "n5|debug|alloc",  # one node, two partitions
            "n6|debug|idle~",  # powered down: slurm powers it up for a job
            "garbage line",
            "n7|gpu*|maint",
        ]
    )
    assert partition_nodes(text, None) == ["n1", "n2", "n5"]  # the default partition
    assert partition_nodes(text, "gpu") == ["n1", "n2", "n5"]
    assert partition_nodes(text, "debug") == ["n5", "n6"]
    assert partition_nodes(text, "other") is None


def test_the_sbatch_script_carries_the_users_and_perfgates_exclusions(row16, tmp_path) -> None:
    opts = LaunchOptions(results_dir=str(tmp_path), slurm_params={"exclude": "n99"})
    script = plan(row16, opts).sbatch_script
    assert "#SBATCH --exclude=n99" in script
    first = plan(row16, LaunchOptions(results_dir=str(tmp_path), avoid_nodes=("n7", "n3")))
    assert "#SBATCH --exclude=n3,n7" in first.sbatch_script
    both = plan(row16, LaunchOptions(**{**opts.__dict__, "avoid_nodes": ("n7",)}))
    assert "#SBATCH --exclude=n99,n7" in both.sbatch_script  # the user's list first, as written
    # a rerun's list replaces the first runs'; the user's own exclude and no pin stay
    pinned = LaunchOptions(**{**opts.__dict__, "avoid_nodes": ("n7",),
                              "slurm_params": {"exclude": "n99", "nodelist": "n1"}})  # fmt: skip
    rerun = confirmation_options(pinned, ["n1", "n2"])
    text = plan(row16, rerun).sbatch_script
    assert "#SBATCH --exclude=n99,n1,n2" in text and "nodelist" not in text
    with pytest.raises(ConfigError, match="--exclude="):
        plan(row16, LaunchOptions(results_dir=str(tmp_path), avoid_nodes=("n1\nn2",)))
