"""The sign-off says what happened in this session (#33): a replay ran nothing and reran
nothing; the page has one duration, the session's."""

from __future__ import annotations

from perfgate.report import signoff

ONE_RUN = {"verdict": "PASS", "mode": "single", "comparison": {"delta": 0.01}}
CONFIRMED = {
    "verdict": "REGRESSION",
    "mode": "single",
    "comparison": {"delta": 0.08},
    "confirmation": {"runs": [{"role": "first"}, {"role": "confirmation 1"}]},
}
SESSION = {"started": "2026-11-29T04:00:00+00:00", "finished": "2026-11-29T04:00:02.08+00:00"}


def test_a_replay_says_it_reran_nothing_and_ran_nowhere():
    replay = {**SESSION, "mode": "replay", "options": {"confirm": 1, "executor": "slurm"}}
    text = signoff.night_text([ONE_RUN, ONE_RUN], replay)
    assert text.endswith(
        "; nothing was rerun (a replay reads reruns only from confirm-<n>/ folders)"
    )
    assert "was rerun on other nodes" not in text and "is rerun" not in text
    read = signoff.night_text([ONE_RUN, CONFIRMED], replay)
    assert read.endswith(
        "; 1 row(s) read with their reruns on other nodes from the replayed folders"
    )
    where = signoff.who_when_where(replay)
    assert where.endswith("; logs read here, nothing ran") and "executor" not in where


def test_a_live_session_counts_the_reruns_it_made():
    live = {**SESSION, "mode": "live", "options": {"confirm": 1, "partition": "p6"}}
    text = signoff.night_text([ONE_RUN, CONFIRMED, ONE_RUN], live)
    assert (
        "; each REGRESSION was rerun on other nodes (--confirm 1: one rerun; 1 row(s) were "
        "tonight)" in text
    )
    assert signoff.who_when_where(live).endswith(", took 2.08 s; partition p6")


def test_the_page_has_one_duration():
    took = signoff.session_took(SESSION)
    assert took == "2.08 s"
    assert signoff.ran_html([ONE_RUN], SESSION) == (
        '<p class="pg-ran">1 row(s) judged in a session of 2.08 s.</p>'
    )
    unfinished = {"started": SESSION["started"]}
    assert signoff.session_took(unfinished) == ""
    assert "so far (the session has not finished)" in signoff.ran_html([ONE_RUN], unfinished)
    long = {**SESSION, "finished": "2026-11-29T05:30:00+00:00"}
    assert signoff.session_took(long) == "1.5 h"


def test_repeat_rows_are_not_said_to_be_judged_on_one_run():
    three = {**ONE_RUN, "comparison": {"delta": 0.0, "n_candidate": 3}}
    text = signoff.night_text([three, three], {"mode": "live", "options": {}})
    assert text.startswith("2 rows judged on 3 run(s) each against their baselines at 1.0%")
    mixed = signoff.night_text([three, ONE_RUN], {"mode": "live", "options": {}})
    assert mixed.startswith("2 rows judged on 1/3 run(s) each")
    assert signoff.night_text([ONE_RUN], {"mode": "live"}).startswith(
        "1 rows judged on one run each"
    )
