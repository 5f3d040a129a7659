"""A site owns its baselines/: `perfgate validate --provenance` and `perfgate fmt` on the
edits a site makes (#28): add a row, drop one, re-measure one, hand-edit a published number,
re-save the files with a plain JSON dump."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from perfgate import catalog, cli
from perfgate.catalog import Baseline, Provenance, provenance
from perfgate.catalog.provenance import SHIPPED_DIR

# A published row with a baseline (seed 001, llmb's Nemotron4 15B table), one without (seed 000).
PUBLISHED = "pretrain-nemotron4_15b-h100-bf16-64gpu-tp2"
NO_NUMBER = "pretrain-llama3_8b-h200-bf16-8gpu-tp1cp2"


@pytest.fixture
def site(tmp_path: Path) -> Path:
    """A site's baselines/ as it starts: the shipped rows, copied."""
    target = tmp_path / "baselines"
    shutil.copytree(SHIPPED_DIR, target)
    return target


def _validate(capsys, *args: str) -> tuple[int, str, str]:
    rc = cli.main(["validate", *args])
    out, err = capsys.readouterr()
    return rc, out, err


def _edit(path: Path, change) -> None:
    rows = json.loads(path.read_text())
    path.write_text(json.dumps(change(rows), indent=2))


def test_the_shipped_rows_are_their_own_exact_provenance(site, capsys):
    rc, out, _ = _validate(capsys, str(site), "--provenance", "--exact", "--json")
    assert rc == 0
    got = json.loads(out)["provenance"][str(site)]
    assert got == {"shipped rows": 147, "unchanged": 147, "re-measured here": 0, "own rows": 0}


def test_an_added_row_is_the_sites_own_and_only_exact_refuses_it(site, capsys):
    def add(rows):
        eight = next(r for r in rows if r["id"] == NO_NUMBER)
        sixteen = {**eight, "num_gpus": 16, "id": NO_NUMBER.replace("8gpu", "16gpu")}
        return [*rows, sixteen]

    _edit(site / "h200.json", add)
    rc, out, _ = _validate(capsys, str(site), "--provenance", "--json")
    assert rc == 0
    data = json.loads(out)
    assert data["total"] == 148 and data["provenance"][str(site)]["own rows"] == 1
    rc, _, err = _validate(capsys, str(site), "--provenance", "--exact")
    assert rc == 2
    assert err == (
        f"perfgate validate: error: {site / 'h200.json'}: row "
        f"{NO_NUMBER.replace('8gpu', '16gpu')}: not a shipped row\n"
    )


def test_a_dropped_shipped_row_is_named(site, capsys):
    _edit(site / "h200.json", lambda rows: [r for r in rows if r["id"] != NO_NUMBER])
    assert _validate(capsys, str(site))[0] == 0  # plain validation: the site's choice
    rc, _, err = _validate(capsys, str(site), "--provenance")
    assert rc == 2
    assert err == f"perfgate validate: error: {site}: row {NO_NUMBER}: shipped row missing\n"


def test_a_changed_configuration_names_the_field_and_both_values(site, capsys):
    def longer_run(rows):
        return [{**r, "steps": 100} if r["id"] == NO_NUMBER else r for r in rows]

    _edit(site / "h200.json", longer_run)
    rc, _, err = _validate(capsys, str(site), "--provenance")
    assert rc == 2
    assert err == (
        f"perfgate validate: error: {site / 'h200.json'}: row {NO_NUMBER}: configuration "
        "changed: field 'steps': 100, shipped 50\n"
    )


def test_a_remeasured_baseline_passes_a_hand_edited_published_number_does_not(site, capsys):
    shipped = catalog.load_catalog(site).get(PUBLISHED).baseline
    measured = Baseline(step_time_s=2.71, provenance=Provenance(source="perfgate run"))
    catalog.update_baselines(site, {PUBLISHED: measured, NO_NUMBER: measured})
    rc, out, _ = _validate(capsys, str(site), "--provenance", "--json")
    assert rc == 0
    assert json.loads(out)["provenance"][str(site)]["re-measured here"] == 2
    assert _validate(capsys, str(site), "--provenance", "--exact")[0] == 2

    catalog.update_baselines(site, {PUBLISHED: replace(shipped, step_time_s=2.68)})
    rc, _, err = _validate(capsys, str(site), "--provenance")
    assert rc == 2
    assert f"row {PUBLISHED}: field 'baseline': not the shipped one and not measured" in err
    assert "llmb Nemotron4" in err  # the source it still claims


def test_report_counts_without_the_cli(site):
    _edit(site / "h200.json", lambda rows: rows[1:])
    report = provenance.check_folder(site)
    assert not report.ok and len(report.problems) == 1
    assert (report.shipped, report.unchanged, report.own) == (147, 146, [])


# --- the canonical form ----------------------------------------------------------------------


def test_a_plain_json_dump_is_valid_and_fmt_restores_the_canonical_bytes(site, capsys):
    canonical = {p.name: p.read_text() for p in site.glob("*.json")}
    for p in site.glob("*.json"):
        p.write_text(json.dumps(json.loads(p.read_text()), indent=4))  # ASCII escapes, no \n
    assert _validate(capsys, str(site), "--provenance", "--exact")[0] == 0  # same rows
    assert cli.main(["fmt", str(site), "--check"]) == 1
    out = capsys.readouterr().out.splitlines()
    assert sorted(out) == sorted(f"{p}: not canonical" for p in site.glob("*.json"))
    assert cli.main(["fmt", str(site)]) == 0
    capsys.readouterr()
    assert {p.name: p.read_text() for p in site.glob("*.json")} == canonical
    assert cli.main(["fmt", str(site), "--check"]) == 0
    assert capsys.readouterr().out == "every file is in canonical form\n"


def test_update_baselines_and_fmt_agree_byte_for_byte(site, tmp_path, capsys):
    new = Baseline(step_time_s=2.7, provenance=Provenance(source="perfgate run", notes="é"))
    catalog.update_baselines(site, {PUBLISHED: new})
    by_update = (site / "h100.json").read_text()
    # The same rows written by hand with another layout, then formatted.
    other = tmp_path / "other"
    other.mkdir()
    rows = [catalog.row_to_dict(r) for r in catalog.load_file(site / "h100.json")]
    (other / "h100.json").write_text(json.dumps(rows, separators=(",", ":")))
    assert cli.main(["fmt", str(other / "h100.json")]) == 0
    assert (other / "h100.json").read_text() == by_update
    assert '"notes": "é"' in by_update  # non-ASCII kept, not escaped


def test_fmt_refuses_a_bad_file_in_one_line_and_writes_nothing(site, capsys):
    (site / "b200.json").write_text('[{"id": 1}]')
    before = (site / "h100.json").read_text()
    assert cli.main(["fmt", str(site)]) == 2
    _, err = capsys.readouterr()
    assert err.count("\n") == 1 and "b200.json" in err
    assert (site / "h100.json").read_text() == before


def test_exact_without_provenance_is_a_usage_error(site, capsys):
    rc, _, err = _validate(capsys, str(site), "--exact")
    assert rc == 2 and "--exact is a mode of --provenance" in err
