"""The bisection without jobs (perfgate.bisect.search): midpoints, outcomes, the stop."""

from __future__ import annotations

import pytest

from perfgate.bisect.search import BAD, GOOD, UNDECIDED, Search, outcome, probes_needed, replay


@pytest.mark.parametrize(("n", "probes"), [(2, 0), (3, 1), (4, 2), (5, 2), (8, 3), (9, 3), (10, 4)])
def test_probes_needed_is_log2_of_the_images_in_question(n, probes):
    assert probes_needed(n) == probes


@pytest.mark.parametrize("first_bad", range(1, 8))
def test_every_first_bad_image_of_eight_is_found_in_at_most_three_probes(first_bad):
    search, probed = Search.start(8), []
    while not search.done:
        i = search.next()
        probed.append(i)
        search = search.after(i, BAD if i >= first_bad else GOOD)
    assert search.found == first_bad and len(probed) <= 3


def test_images_five_to_eight_slower_take_the_probes_4_6_5():
    search, probed = Search.start(8), []
    while not search.done:
        i = search.next()
        probed.append(i)
        search = search.after(i, BAD if i >= 4 else GOOD)
    assert [i + 1 for i in probed] == [4, 6, 5]  # 1-based image numbers
    assert search.found == 4 and (search.good, search.bad) == (3, 4)


def test_an_undecided_probe_stops_the_search_with_its_range():
    search = Search.start(8).after(3, GOOD).after(5, UNDECIDED)
    assert search.done and search.found is None and search.stopped == 5
    assert (search.good, search.bad) == (3, 7) and search.left == 0
    with pytest.raises(ValueError, match="over"):
        search.next()


def test_outcomes_follow_the_gate_words():
    assert outcome(["PASS", "REGRESSION"]) == BAD  # any row slower: the image is bad
    assert outcome(["PASS", "IMPROVEMENT"]) == GOOD
    assert outcome(["PASS", "INCONCLUSIVE"]) == UNDECIDED
    assert outcome(["INFRA"]) == UNDECIDED and outcome([]) == UNDECIDED


def test_replay_of_saved_probes_and_a_probe_outside_the_range():
    saved = [{"index": 3, "outcome": GOOD}, {"index": 5, "outcome": BAD}]
    search = replay(8, saved)
    assert (search.good, search.bad, search.next()) == (3, 5, 4)
    with pytest.raises(ValueError, match="outside"):
        search.after(6, BAD)
