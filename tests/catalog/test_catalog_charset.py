"""Every string of a row is checked: names from a fixed set, text without control characters.

The attack this guards against: a baselines change whose free-text `variant` (part of the
canonical id) holds a newline passed validation and became its own line of the sbatch script.
"""

from __future__ import annotations

import copy
import json
from dataclasses import replace
from pathlib import Path

import pytest

from perfgate import catalog
from perfgate.catalog import validate
from perfgate.catalog.provenance import SHIPPED_DIR
from perfgate.errors import ConfigError

REPO = Path(__file__).resolve().parents[2]

GOOD = {
    "id": "pretrain-llama3_8b-h100-bf16-8gpu-tp1cp2",
    "task": "pretrain",
    "model": "llama3_8b",
    "gpu": "h100",
    "precision": "bf16",
    "num_gpus": 8,
    "gbs": 128,
    "mbs": 1,
    "seq_len": 8192,
    "cp": 2,
}
HOSTILE_VARIANT = "x\ntouch /tmp/owned #"


def _write(tmp_path: Path, rows: list[dict]) -> Path:
    path = tmp_path / "h100.json"
    path.write_text(json.dumps(rows))
    return path


def test_a_variant_with_a_newline_is_one_line_naming_file_row_field_and_value(tmp_path):
    hostile = {**GOOD, "variant": HOSTILE_VARIANT, "id": GOOD["id"] + "-" + HOSTILE_VARIANT}
    path = _write(tmp_path, [GOOD | {"variant": "ok", "id": GOOD["id"] + "-ok"}, hostile])
    with pytest.raises(ConfigError) as err:
        catalog.load_file(path)
    msg = str(err.value)
    # The hostile id is not used to name the row: its position is.
    assert msg == (
        f"{path}: row #1: field 'variant' = 'x\\ntouch /tmp/owned #': only letters, digits, "
        "'.', '_' and '-' are allowed, not '\\n'"
    )
    assert "\n" not in msg


@pytest.mark.parametrize(
    ("field", "value", "named"),
    [
        ("variant", "a b", "'variant' = 'a b'"),
        ("variant", "$(id)", "'variant' = '$(id)'"),
        ("variant", "a;b", "'variant' = 'a;b'"),
        ("variant", "`id`", "'variant' = '`id`'"),
        ("variant", "a'b", "'variant' = \"a'b\""),
        ("variant", "a/../b", "'variant' = 'a/../b'"),
        ("variant", "a\x00b", "'variant' = 'a\\x00b'"),
        ("id", GOOD["id"] + "\r", "'id' = "),
        ("task", "pretrain\n", "'task' = 'pretrain\\n'"),
        ("model", "Llama3_8B", "'model' = 'Llama3_8B'"),
        ("source", "seed 001\x1b[2J", "'source' = 'seed 001\\x1b[2J': control character"),
        ("notes", ["fine", "bad\u2028line"], "'notes[1]' = 'bad\\u2028line'"),
        ("notes", ["\u202eevil"], "'notes[0]' = '\\u202eevil'"),
        ("env", {"A B": "1"}, "'env' = 'A B': an environment variable name"),
        ("env", {"NCCL_DEBUG": "INFO\nrm -rf /"}, "'env.NCCL_DEBUG' = 'INFO\\nrm -rf /'"),
        ("env", {"é": "1"}, "'env' = 'é'"),
        ("overrides", {"a;b": 1}, "'overrides key' = 'a;b': a dotted path"),
        ("overrides", {"model.x": "v\nw"}, "'overrides.model.x' = 'v\\nw'"),
        ("overrides", {"model.x": [1, "\x07"]}, "'overrides.model.x[1]' = '\\x07'"),
    ],
)
def test_each_string_field_is_checked(field, value, named):
    data = copy.deepcopy(GOOD) | {field: value}
    with pytest.raises(ConfigError) as err:
        catalog.row_from_dict(data, "baselines/h100.json", index=3, rules=False)
    msg = str(err.value)
    assert msg.startswith("baselines/h100.json: row ")
    assert f"field {named}" in msg
    assert "\n" not in msg and "\r" not in msg


def test_provenance_strings_are_checked():
    base = {"step_time_s": 1.0, "provenance": {"source": "x", "container": "nemo\n:25.07"}}
    with pytest.raises(ConfigError, match=r"field 'baseline.provenance.container' = 'nemo\\n"):
        catalog.row_from_dict(GOOD | {"baseline": base}, "b.json", rules=False)
    base["provenance"] = {"source": "x", "versions": {"nemo": "2.4\x00"}}
    with pytest.raises(ConfigError, match=r"'baseline.provenance.versions.nemo' = '2.4\\x00'"):
        catalog.row_from_dict(GOOD | {"baseline": base}, "b.json", rules=False)


def test_long_values_are_cut_in_the_message():
    with pytest.raises(ConfigError) as err:
        catalog.row_from_dict(GOOD | {"variant": "x" * 500 + "\n"}, "b.json", rules=False)
    shown = str(err.value).split(" = ")[1].split(": ")[0]
    assert shown == "'" + "x" * 38 + "…"


def test_a_secret_env_value_is_never_shown():
    bad = replace(catalog.row_from_dict(GOOD, "b.json"), env={"X_API_KEY": "sk-123\n"})
    with pytest.raises(ConfigError) as err:
        validate.validate_row(bad, "b.json")
    assert "sk-123" not in str(err.value)
    assert "(a secret, not shown)" in str(err.value)


def test_printable_unicode_text_is_still_free_text():
    notes = ["MFU ± 0.5 %, 2×8 GPUs, «published»", "tab-free; quotes ' \" and $(x) are text"]
    row = catalog.row_from_dict(GOOD | {"notes": notes, "source": "seed 001 — table 3"}, "b.json")
    assert row.notes == tuple(notes)


def test_every_stored_row_passes_the_character_rules():
    rows = catalog.load_catalog(SHIPPED_DIR).rows
    # 83 seed rows + 62 of the Megatron-Bridge performance summary + 2 megatron_core rows
    assert len(rows) == 147
    assert all(catalog.canonical_id(r) == r.id for r in rows)


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"env": {"A" * 100_000: "1"}}, "field 'env' = 'AAAA"),
        ({"notes": ["n" * 100_000]}, "field 'notes[0]' = 'nnnn"),
        ({"k" * 100_000: 1}, "unknown row field 'kkkk"),
        ({"overrides": {"model." + "a" * 100_000: 1}}, "field 'overrides key' = 'model.aaa"),
    ],
)
def test_long_names_and_text_are_capped_and_echoed_cut(extra, message):
    """#21 item 16: a 100 kB env name was accepted and a 100 kB key echoed whole."""
    with pytest.raises(ConfigError) as err:
        catalog.row_from_dict(GOOD | extra, "b.json", rules=False)
    assert message in str(err.value) and len(str(err.value)) < 400, str(err.value)[:400]


def test_a_500_mb_note_is_refused_by_the_file_size_cap_at_once(tmp_path):
    path = tmp_path / "h100.json"
    with open(path, "w") as f:
        f.write('[{"notes": ["')
        f.truncate(500 << 20)  # a sparse file: no 500 MB written
    with pytest.raises(ConfigError) as err:
        catalog.load_file(path)
    assert str(err.value) == f"{path}: 500 MiB, above the 16 MiB a baselines file may have"
