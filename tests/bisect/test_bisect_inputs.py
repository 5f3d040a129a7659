"""`perfgate bisect`'s bad input: one line each, status 2, nothing submitted (no results
folder, no job); and the gate's results.json on the ends (perfgate.bisect.inputs)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from resultsdata import ab_record
from rowfactory import command_row

from perfgate import cli
from perfgate.report.sessionfiles import SCHEMA

ROW = command_row("bisect", steps=20, time_limit_min=2)


def bisect(capsys, *args: str) -> tuple[int, str, str]:
    code = cli.main(["bisect", "-k", "bisect", "--results-dir", "out", *args])
    out, err = capsys.readouterr()
    return code, out, err


def refused(capsys, where: Path, *args: str) -> str:
    code, out, err = bisect(capsys, *args)
    assert code == 2, (out, err)
    assert out == "" and err.count("\n") == 1 and "Traceback" not in err
    assert not (where / "out").exists()  # nothing planned into it, nothing submitted
    return err.removeprefix("perfgate bisect: error: ").strip()


def test_one_image(capsys, where):
    assert refused(capsys, where, "./n1.sqsh") == (
        "bisect needs at least two images, the last known good first and the first known bad "
        "last; got 1: ./n1.sqsh"
    )


def test_an_image_listed_twice_even_under_another_name(capsys, where):
    err = refused(capsys, where, "./n1.sqsh", "./n2.sqsh", f"{where}/n1.sqsh")
    assert err.startswith(f"image '{where}/n1.sqsh' is listed twice (images 1 and 3)")


def test_an_unknown_image(capsys, where):
    err = refused(capsys, where, "./n1.sqsh", "./gone.sqsh", "./n3.sqsh")
    assert err == (
        f"image 2 of 3: container image './gone.sqsh': no such squashfs file ({where}/gone.sqsh)"
    )


def test_ends_that_are_the_same_file_content(capsys, where):
    shutil.copy(where / "n1.sqsh", where / "copy.sqsh")
    err = refused(capsys, where, "./n1.sqsh", "./n2.sqsh", "./copy.sqsh")
    assert err.startswith(f"the ends do not differ: {where}/n1.sqsh and {where}/copy.sqsh are")


def test_an_images_file_with_comments_and_both_ways_at_once(capsys, where):
    (where / "list.txt").write_text("# nightlies\n./n1.sqsh  # good\n\n./n3.sqsh\n")
    code, out, _ = bisect(capsys, "--images-file", "list.txt", "--dry-run")
    assert code == 0 and f"2 images, image 1 good ({where}/n1.sqsh)" in out
    err = refused(capsys, where, "--images-file", "list.txt", "./n2.sqsh")
    assert err == "give the images on the command line or in --images-file, not both"


def test_no_row_selected_and_bad_pair_counts(capsys, where):
    code, _, err = (
        cli.main(["bisect", "-k", "nosuchrow", "./n1.sqsh", "./n3.sqsh"]),
        *capsys.readouterr(),
    )
    assert code == 2 and "no row selected" in err
    err = refused(capsys, where, "./n1.sqsh", "./n3.sqsh", "--pairs", "4", "--max-pairs", "3")
    assert "need 1 <= pairs <= max-pairs <= probe-max-pairs" in err


def gate_file(where: Path, verdict: str, a: str = "n1", b: str = "n3") -> str:
    rec = ab_record(ROW, f"{where}/{a}.sqsh", f"{where}/{b}.sqsh", verdict)
    rec["comparison"].update(delta=0.004, ci_low=-0.01, ci_high=0.018)
    path = where / f"gate-{verdict}.json"
    path.write_text(json.dumps({"schema": SCHEMA, "session": {}, "rows": {ROW.id: rec}}))
    return str(path)


def test_ends_the_gate_passed_do_not_differ(capsys, where):
    err = refused(
        capsys, where, "./n1.sqsh", "./n2.sqsh", "./n3.sqsh", "--gate", gate_file(where, "PASS")
    )
    assert err == (
        f"the ends do not differ: the gate judged row {ROW.id} PASS (delta +0.4% [-1.0%, "
        "+1.8%] over 3 pair(s)); nothing to bisect"
    )


def test_ends_the_gate_could_not_tell_apart(capsys, where):
    gate = gate_file(where, "INCONCLUSIVE")
    err = refused(capsys, where, "./n1.sqsh", "./n3.sqsh", "--gate", gate)
    assert err.startswith(f"the gate could not tell the ends apart on row {ROW.id}")
    assert err.endswith("rerun it with more pairs (--max-pairs) before bisecting")


def test_a_gate_on_other_images_is_refused(capsys, where):
    gate = gate_file(where, "REGRESSION", b="n2")
    err = refused(capsys, where, "./n1.sqsh", "./n3.sqsh", "--gate", gate)
    assert err == (
        f"--gate {gate}: row {ROW.id}'s A/B ran A={where}/n1.sqsh B={where}/n2.sqsh, but the "
        f"image list runs from {where}/n1.sqsh to {where}/n3.sqsh"
    )


def test_a_regression_gate_skips_the_ends_probe_in_the_plan(capsys, where):
    gate = gate_file(where, "REGRESSION")
    code, out, _ = bisect(
        capsys, "./n1.sqsh", "./n2.sqsh", "./n3.sqsh", "--gate", gate, "--dry-run"
    )
    assert code == 0
    assert "at most 1 probe(s) (the gate's results say REGRESSION on the ends" in out
    assert "first probe, image 2:" in out and "dry run: nothing submitted" in out
