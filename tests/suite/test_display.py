"""The live display (perfgate.suite.display) on JobStatus sequences: sparse lines off a
terminal, one block redrawn in place on one."""

from __future__ import annotations

import itertools

from perfgate.charset import printable
from perfgate.runs import JobStatus
from perfgate.suite.display import BlockDisplay, SparseLines, block

POLL_S = 5.0


def job(k: int, t: float) -> JobStatus:
    """Row k at t seconds: pending 60 s (Priority, then Resources), 30 min of 50 steps, done."""
    rid, jid = f"row-{k:02d}", str(100 + k)
    if t < 30:
        return JobStatus(rid, jid, "PENDING", reason="Priority")
    if t < 60:
        return JobStatus(rid, jid, "PENDING", reason="Resources")
    if t < 60 + 1800:
        step = int((t - 60) / 36) - 1  # 36 s a step; None before the first one ends
        left = 1800 - (t - 60)
        return JobStatus(
            rid,
            jid,
            "RUNNING",
            step=step if step >= 0 else None,
            total_steps=50,
            time_left_s=left,
        )
    return JobStatus(rid, jid, "COMPLETED", done=True)


def test_fifty_thirty_minute_jobs_print_a_few_lines_each_not_one_per_poll():
    clock = [0.0]
    sparse = SparseLines(progress_every_s=300, clock=lambda: clock[0])
    printed: list[str] = []
    polls = 0
    while clock[0] <= 60 + 1800 + POLL_S:
        printed += sparse.lines([job(k, clock[0]) for k in range(50)])
        clock[0] += POLL_S
        polls += 1
    assert polls * 50 > 18_000  # what a line per row per poll would print
    per_row = {k: [ln for ln in printed if f"row-{k:02d} " in ln] for k in range(50)}
    for lines in per_row.values():
        # Priority, Resources, running (no step yet), step 1, progress every 5 min, done.
        assert 8 <= len(lines) <= 10, lines
        assert all(a != b for a, b in itertools.pairwise(lines))
    row0 = per_row[0]
    assert row0[0] == "perfgate: row-00 job 100 PENDING (Priority)"
    assert row0[1] == "perfgate: row-00 job 100 PENDING (Resources)"
    assert row0[2].startswith("perfgate: row-00 job 100 RUNNING 30.0 min left")
    assert row0[3].startswith("perfgate: row-00 job 100 RUNNING step 1/50")
    assert row0[-1] == "perfgate: row-00 job 100 COMPLETED"
    assert len(printed) <= 50 * 10


def test_a_requeue_is_a_line_of_its_own():
    clock = [0.0]
    sparse = SparseLines(clock=lambda: clock[0])
    running = JobStatus("r", "7", "RUNNING", step=12, total_steps=50)
    requeued = JobStatus(
        "r", "7", "PENDING", reason="BeginTime", attempt=2, requeues=("NODE_FAIL on n2",)
    )
    assert len(sparse.lines([running])) == 1
    clock[0] += 10
    assert sparse.lines([requeued]) == [
        "perfgate: r job 7 PENDING (BeginTime) attempt 2, requeued after NODE_FAIL on n2"
    ]
    assert sparse.lines([requeued]) == []


def test_the_block_counts_states_lists_waiting_rows_and_fits_the_width():
    statuses = [job(k, 10 if k < 3 else 700) for k in range(6)] + [job(9, 5000)]
    lines = block(statuses, width=80, max_rows=4)
    assert lines[0] == "perfgate: 7 row(s): 3 PENDING, 3 RUNNING, 1 done"
    assert lines[1] == "  row-00 job 100 PENDING (Priority)"
    assert lines[4] == "  row-03 job 103 RUNNING step 17/50 19.3 min left"
    assert lines[5] == "  ... and 2 more"
    narrow = block(statuses, width=30, max_rows=4)
    assert narrow[4] == "  row-03 job 103 RUNNING st..."
    assert all(len(ln) <= 30 for ln in narrow)


def test_the_block_is_redrawn_over_itself_and_taken_away_for_pytests_output():
    screen: list[str] = []
    d = BlockDisplay(screen.append, lambda: 80)
    d.update([job(0, 10), job(1, 10)])
    assert screen[-1] == (
        "perfgate: 2 row(s): 2 PENDING, 0 done\n"
        "  row-00 job 100 PENDING (Priority)\n  row-01 job 101 PENDING (Priority)\n"
    )
    d.update([job(0, 700), job(1, 5000)])
    assert screen[-1].startswith("\x1b[3F\x1b[Jperfgate: 2 row(s): 1 RUNNING, 1 done\n")
    d.say("perfgate: row-01 re-attached")
    assert screen[-1] == "\x1b[2F\x1b[Jperfgate: row-01 re-attached\n"
    d.update([job(0, 700)])
    d.pause()
    assert screen[-1] == "\x1b[2F\x1b[J" and d.drawn == 0
    d.pause()
    assert len(screen) == 5  # nothing on the screen: nothing to erase


def test_job_text_cannot_act_on_the_terminal():
    # A pending reason or a note is text from Slurm or a job: shown, never obeyed.
    st = JobStatus("r", "7", "PENDING", reason="\x1b[2J\x1b]52;c;eA==\x07fake\u202e")
    (_, line) = block([st], width=200)
    assert "\x1b" not in line and "\\x1b[2J\\x1b]52;c;eA==\\x07fake\\u202e" in line
    (sparse,) = SparseLines().lines([st])
    assert "\x1b" not in sparse and "\\x1b[2J" in sparse
    written: list[str] = []
    display = BlockDisplay(written.append, lambda: 200)
    display.say("perfgate: r: \x1b[31mred\x9b")
    assert written == ["perfgate: r: \\x1b[31mred\\x9b\n"]


def test_printable_keeps_text_and_line_breaks():
    assert printable("step 5: 6.0 s\n\tµ — ok ✓") == "step 5: 6.0 s\n\tµ — ok ✓"
    assert printable("\r\x00\x7f\u2028\ud800") == "\\x0d\\x00\\x7f\\u2028\\ud800"
