"""Node names at the door (#29): one grammar, Slurm's host-list rules with a bound, and no bad
name in any --exclude, whatever the history, a log, steps.json or Slurm hands perfgate."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from perfgate import nodenames, notices
from perfgate.launch import planning, slurmstate
from perfgate.launch.executors.slurm import exclude_param
from perfgate.launch.types import LaunchOptions
from perfgate.logs import stepfile, stragglers

HOSTILE_NAMES = [
    "../../etc/passwd",  # '/' makes sbatch read --exclude as a file name
    "n7,n8",  # two names from one
    "gpu[001-512]",  # a range from one name
    "a\nb",
    "a\x1bb",
    "a\\b",
    "a\u202eb",
    "-x",
    "",
    " ",
    "None",
    "assigned",
    "n1 n2",
    "a..b",
    "a" * 254,
    1,
    None,
    ["n1"],
]


@pytest.mark.parametrize("name", ["n1", "gpu-001", "h100-001-253-012", "node_7", "a.b.c", "X"])
def test_host_names_are_names(name):
    assert nodenames.is_name(name)


@pytest.mark.parametrize("name", HOSTILE_NAMES)
def test_anything_else_is_not_one_name(name):
    assert not nodenames.is_name(name)
    assert nodenames.why_not(name)


@pytest.mark.parametrize(
    ("hostlist", "names"),
    [
        ("None assigned", []),
        ("(null)", []),
        ("", []),
        ("n1", ["n1"]),
        ("gpu[001-003,007],login1", ["gpu001", "gpu002", "gpu003", "gpu007", "login1"]),
        ("rack[1-2]-n[1-2]", ["rack1-n1", "rack1-n2", "rack2-n1", "rack2-n2"]),
        ("c[8-10]", ["c8", "c9", "c10"]),
        ("c[08-10]", ["c08", "c09", "c10"]),  # the width of the low bound pads
        ("n1 n2", ["n1", "n2"]),
    ],
)
def test_host_lists_expand_by_slurm_rules(hostlist, names):
    assert nodenames.expand(hostlist) == names


@pytest.mark.parametrize(
    ("hostlist", "why"),
    [
        ("gpu[0-999999999]", "more than 200,000 nodes"),
        ("a[1-3]b[1-100000]", "more than 200,000 nodes"),
        ("gpu[3-1]", "is not low-high"),
        ("gpu[1-", "unbalanced"),
        ("gpu[a-b]", "is not a number or a range"),
        ("../x", "not a host name ('/' is not allowed)"),
        ("n[1-2]/x", "not a host name"),
    ],
)
def test_host_lists_outside_the_grammar_are_one_line(hostlist, why):
    with pytest.raises(nodenames.BadNodes) as e:
        nodenames.expand(hostlist)
    assert why in str(e.value) and "\n" not in str(e.value)


def test_a_list_read_from_outside_keeps_names_and_says_once_what_it_left_out():
    said: list[str] = []
    got = nodenames.names(["n1", *HOSTILE_NAMES, "n1", "n2"], "history.sqlite: run 4", said.append)
    assert got == ("n1", "n2")
    assert len(said) == 1
    assert said[0].startswith("history.sqlite: run 4: node name '../../etc/passwd' left out")
    assert f"(and {len(HOSTILE_NAMES) - 1} more)" in said[0]
    assert nodenames.names("abc", "steps.json", said.append) == ()  # never split into a, b, c
    assert "node names are a list, not str" in said[-1]


def test_sacct_none_assigned_is_no_node_and_its_words_never_are():
    text = "42|job|PENDING|Priority|None assigned|00:00:00|01:00:00|0:0\n"
    assert slurmstate.parse_sacct(text)["42"].nodes is None
    said: list[str] = []
    assert nodenames.host_list("None assigned", "sacct", said.append) == () and said == []


def test_a_hostile_nodelist_from_squeue_is_dropped():
    text = (
        "42|job|RUNNING|None|../../etc/passwd|10:00|1:00\n43|job|RUNNING|None|n[1-2]|10:00|1:00\n"
    )
    said: list[str] = []
    with notices.routed(said.append):
        found = slurmstate.parse_squeue(text)
    assert found["42"].nodes is None and found["43"].nodes == "n[1-2]"
    assert said == [
        "perfgate: warning: squeue: job 42: NodeList: host list left out: '../../etc/passwd': "
        "not a host name ('/' is not allowed)"
    ]


# --- the rerun's --exclude ----------------------------------------------------------------------


def _exclude(given: list, own: str | None = None) -> str | None:
    params = {"exclude": own} if own is not None else {}
    opts = LaunchOptions(executor="slurm", slurm_params=params)
    with notices.routed(lambda line: None):  # what it leaves out: test_fuzz_no_bad_name...
        return exclude_param(planning.confirmation_options(opts, given)).get("exclude")


def test_the_confirmation_exclude_takes_host_names_only():
    assert _exclude(["n2", "n1", *HOSTILE_NAMES]) == "n1,n2"
    assert _exclude(["n1", "gpu3"], own="gpu[1-2]") == "gpu[1-2],gpu3,n1"  # the user's list kept
    assert _exclude(["n1"], own="/etc/exclude.txt") == "/etc/exclude.txt"  # a file: left as is
    assert _exclude(HOSTILE_NAMES) is None


def _valid_exclude(value: str | None) -> bool:
    """An --exclude value is a host list: no '/', no control character, each name a name."""
    if value is None:
        return True
    return "/" not in value and all(nodenames.is_name(n) for n in nodenames.expand(value))


names_from_outside = st.one_of(
    st.text(max_size=40),
    st.sampled_from([n for n in HOSTILE_NAMES if isinstance(n, str)]),
    st.from_regex(r"[a-z]{1,4}[0-9]{1,3}", fullmatch=True),
    st.integers(),
    st.none(),
)


@settings(max_examples=400, deadline=None)
@given(st.lists(names_from_outside, max_size=12))
def test_fuzz_no_bad_name_reaches_an_exclude(given_names):
    said: list[str] = []
    value = _exclude(given_names)
    assert _valid_exclude(value), value
    kept = nodenames.names(given_names, "fuzz", said.append)
    assert all(nodenames.is_name(n) for n in kept)
    assert len(said) <= 1 and all("\n" not in s for s in said)


@settings(max_examples=400, deadline=None)
@given(st.text(max_size=60))
def test_fuzz_host_lists_expand_or_are_refused_in_one_line(text):
    try:
        found = nodenames.expand(text)
    except nodenames.BadNodes as e:
        assert "\n" not in str(e) and "\x1b" not in str(e)
        return
    assert len(found) <= nodenames.MAX_NODES
    assert all(nodenames.is_name(n) for n in found)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=30), st.text(max_size=30))
def test_fuzz_slurm_and_log_lines_give_names_or_none(field, node):
    said: list[str] = []
    sacct = f"42|job|RUNNING|None|{field}|00:10:00|01:00:00|0:0\n"
    report = ["GPU relative performance:", f"Rank=3 Node={node} Score=0.5", "done"]
    with notices.routed(said.append):
        info = slurmstate.parse_sacct(sacct).get("42")
        found = stragglers.slowest_rank(report, "fuzz.log")
    assert all("\n" not in s and "\x1b" not in s for s in said)
    assert info is None or info.nodes is None or _valid_exclude(info.nodes)
    assert found is None or found.node is None or nodenames.is_name(found.node)


@settings(max_examples=200, deadline=None)
@given(st.one_of(st.lists(names_from_outside, max_size=6), names_from_outside))
def test_fuzz_steps_json_nodes(tmp_path_factory, nodes):
    path = tmp_path_factory.mktemp("steps") / "steps.json"
    data = {"schema": stepfile.SCHEMA, "row_id": "r", "backend": "command", "nodes": nodes}
    path.write_text(json.dumps(data))
    with notices.routed(lambda line: None):
        rec = stepfile.read(path)  # a bad name is dropped, never the whole file
    assert all(nodenames.is_name(n) for n in rec.nodes)


@pytest.mark.parametrize("nodes", [[1, 2], "abc", ["n1,n2"], ["gpu[001-512]"], {"n1": 1}])
def test_steps_json_nodes_that_are_not_names_are_dropped_not_split(tmp_path, nodes):
    path = tmp_path / "steps.json"
    data = {"schema": stepfile.SCHEMA, "row_id": "r", "backend": "command", "nodes": nodes}
    path.write_text(json.dumps(data))
    said: list[str] = []
    with notices.routed(said.append):
        assert stepfile.read(path).nodes == []
    assert len(said) == 1 and str(path) in said[0]


class _Runner:
    """The part of a live runner the confirmer asks about nodes."""

    excludes_nodes = True

    def nodes_of(self, row_id: str) -> list:
        return ["n3", "n1\n#SBATCH --wrap=x", 7]

    def partition_nodes(self) -> None:
        return None  # unknown: the flagged nodes are kept off reruns, uncapped


def test_the_confirmer_keeps_a_rerun_off_host_names_only():
    from rowfactory import make_row

    from perfgate.suite.confirming import Confirmer
    from perfgate.verdicts.confirm import RerunPolicy

    flagged = ["n9", "../../etc/passwd", "gpu[001-512]", "n7,n8"]
    c = Confirmer(_Runner(), judge=None, policy=RerunPolicy(1), inconclusive=False, flagged=flagged)
    with notices.routed(lambda line: None):
        assert c.exclude(make_row(), 1) == ["n3", "n9"]
