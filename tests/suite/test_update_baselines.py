"""--update-baselines: measured rows that ran cleanly are written (atomic, locked, with a diff
in the terminal and provenance); nothing is ever written without the flag."""

from __future__ import annotations

import threading
import time
from datetime import date

from perfgate import catalog
from perfgate.catalog.store import lock_for
from perfgate.errors import ConfigError

from .pytester_suite import EXAMPLES

pytest_plugins = ["pytester"]

UPDATED = {
    "pretrain-nemotron4_15b-h100-bf16-64gpu-tp2",  # PASS
    "pretrain-nemotron4_340b-h100-bf16-256gpu-tp8pp8",  # REGRESSION: accepted on request
    "pretrain-nemotron4_15b-h100-fp8ds-128gpu-tp2",  # INCONCLUSIVE
    "lora-llama3_70b-h100-bf16-8gpu-tp2pp4vp20",  # NO_BASELINE: gets its first baseline
}
INFRA_ROW = "pretrain-nemotron4_15b-h100-bf16-16gpu-tp2"
ARGS = (f"--replay={EXAMPLES}", "-m", "h100", "--tolerance", "0.12")


def _files(suite) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(suite.baselines_dir.glob("*.json"))}


def test_never_on_a_plain_run(suite):
    suite.shipped_rows()
    before = _files(suite)
    suite.run(*ARGS)
    assert _files(suite) == before


def test_update_refuses_example_logs_and_regressions_without_accept(suite):
    suite.shipped_rows()
    before = _files(suite)
    result = suite.run(*ARGS, "--update-baselines")
    assert _files(suite) == before
    out = "\n".join(result.outlines)
    reg = "pretrain-nemotron4_340b-h100-bf16-256gpu-tp8pp8"
    assert (
        f"baseline NOT stored: {reg}: REGRESSION (store it anyway with --accept-regressions)"
        in (out)
    )
    for rid in UPDATED - {reg}:
        assert f"baseline NOT stored: {rid}: replayed example logs (examples/replay)" in out


def test_update_writes_clean_rows_with_provenance_and_prints_the_diff(suite):
    old = suite.shipped_rows()
    result = suite.run(*ARGS, "--update-baselines", "--accept-regressions")
    new = catalog.load_catalog(suite.baselines_dir)  # still a valid catalog
    measured = {rid: rec["measured"] for rid, rec in suite.results()["rows"].items()}
    changed = {r.id for r in new.rows if r.baseline != old.by_id[r.id].baseline}
    assert changed == UPDATED  # not the INFRA row, not the rows without logs
    for rid in UPDATED:
        b = new.by_id[rid].baseline
        assert b.step_time_s == round(measured[rid]["step_time_s"], 6)
        assert b.provenance.source == "perfgate replay"
        assert b.provenance.date == date.today().isoformat()
        assert (
            b.provenance.notes.startswith("replayed from ") and str(EXAMPLES) in b.provenance.notes
        )
        assert b.n_runs == 1 and b.tokens_per_s_per_gpu > 0 and 0 < b.mfu <= 1
        assert len(b.runs) == 1 and b.runs[0].step_time_s == b.step_time_s
    assert new.by_id[INFRA_ROW].baseline == old.by_id[INFRA_ROW].baseline
    reg = new.by_id["pretrain-nemotron4_340b-h100-bf16-256gpu-tp8pp8"].baseline
    assert reg.provenance.job_ids == ("2071234",)  # parsed from the nemo_run log name
    assert reg.flops_convention == "llmb"  # like with like: the row's published convention
    out = "\n".join(result.outlines)
    assert "baselines updated in" in out
    # a few lines per row: old -> new, runs, where it ran
    assert "pretrain-nemotron4_340b-h100-bf16-256gpu-tp8pp8: 4.36 s -> 5.551 s (+27.3%)" in out
    assert "lora-llama3_70b-h100-bf16-8gpu-tp2pp4vp20: new baseline" in out
    assert not list(suite.baselines_dir.glob(".*.tmp"))  # atomic writes leave no temp file


def test_update_waits_for_the_lock_and_keeps_a_concurrent_change(suite):
    suite.shipped_rows()
    path = suite.baselines_dir / "h100.json"
    other = "pretrain-llama3_8b-h100-bf16-8gpu-tp1cp2"
    held = threading.Event()
    released: list[float] = []

    def concurrent_writer() -> None:
        # Another session (or xdist worker) updates a different row of the same file.
        with lock_for(path):
            held.set()
            time.sleep(2.5)  # longer than a whole replay session takes here
            rows = [r if r.id != other else _with_note(r) for r in catalog.load_file(path)]
            path.write_text(catalog.dump_rows(rows))
            released.append(time.time())

    t = threading.Thread(target=concurrent_writer)
    t.start()
    held.wait()
    start = time.monotonic()
    suite.run(*ARGS, "--update-baselines", "--accept-regressions")
    waited = time.monotonic() - start
    t.join()
    final = catalog.load_catalog(suite.baselines_dir)
    assert waited >= 2.0  # the session's update blocked on the lock ...
    assert path.stat().st_mtime >= released[0] - 0.01  # ... and wrote after the other writer
    assert final.by_id[other].notes[-1] == "touched by a concurrent writer"
    assert final.by_id["pretrain-nemotron4_15b-h100-bf16-64gpu-tp2"].baseline.provenance.source == (
        "perfgate replay"
    )


def _with_note(row):
    from dataclasses import replace

    return replace(row, notes=(*row.notes, "touched by a concurrent writer"))


PASS_ROW = "pretrain-nemotron4_15b-h100-bf16-64gpu-tp2"


def test_a_refused_update_fails_the_session(suite):
    """Every test passes, but the row's update was refused: a CI job must notice."""
    suite.shipped_rows()
    result = suite.run(*ARGS, "-k", PASS_ROW, "--update-baselines")
    assert result.parseoutcomes().get("passed") == 1
    assert f"baseline NOT stored: {PASS_ROW}: replayed example logs" in "\n".join(result.outlines)
    assert result.ret == 1


def test_an_update_the_baselines_file_refuses_fails_the_session(suite, monkeypatch):
    suite.shipped_rows()
    before = _files(suite)

    def refuse(folder, updates):
        raise ConfigError(f"{folder}/h100.json: field 'baseline.mfu': must be a fraction")

    monkeypatch.setattr(catalog, "update_baselines", refuse)
    result = suite.run(*ARGS, "-k", PASS_ROW, "--update-baselines", "--accept-regressions")
    assert result.parseoutcomes().get("passed") == 1
    assert "baselines NOT updated: " in "\n".join(result.outlines)
    assert result.ret == 1 and _files(suite) == before


def test_a_stored_update_keeps_exit_status_0(suite):
    suite.shipped_rows()
    result = suite.run(*ARGS, "-k", PASS_ROW, "--update-baselines", "--accept-regressions")
    assert result.ret == 0 and "baselines updated in" in "\n".join(result.outlines)
