"""The table of backends and the face each shows: one per catalog backend, found by name."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
from rowfactory import as_row

from perfgate import catalog
from perfgate.errors import ConfigError
from perfgate.logs import stepfile
from perfgate.workload import backends, dispatch
from perfgate.workload.backend import Backend, no_command
from perfgate.workload.bridge.plan import section_path
from perfgate.workload.describe import describe
from perfgate.workload.overrides import merged_overrides, normalize_path
from perfgate.workload.runtime import STEPS_FILE, RankInfo
from perfgate.workload.spec import WorkloadSpec

COMMAND = {"backend": "command", "overrides": {"command": "train.sh --fast 'a b'"}}


@pytest.mark.parametrize("name", catalog.BACKENDS)
def test_every_catalog_backend_has_a_face_named_as_the_row_names_it(name: str) -> None:
    face = backends.get(name)
    assert isinstance(face, Backend) and face.name == name
    # The job module lives in the face's own package and is found by name in the container.
    assert face.job.rsplit(".", 1)[0] == backends.FACES[name].rsplit(".", 1)[0]
    assert importlib.util.find_spec(face.job) is not None


def test_the_table_lists_the_catalog_backends_in_its_order() -> None:
    assert tuple(backends.FACES) == catalog.BACKENDS


def test_a_backend_without_a_face_is_not_implemented(monkeypatch) -> None:
    monkeypatch.delitem(backends.FACES, "automodel")
    with pytest.raises(ConfigError, match=r"^backend 'automodel' is not implemented in this"):
        backends.get("automodel")


def test_the_job_records_a_backend_without_a_face_as_a_config_error(monkeypatch, tmp_path):
    monkeypatch.delitem(backends.FACES, "command")
    spec = WorkloadSpec(row=as_row(COMMAND), steps=1, output_dir=str(tmp_path), command=["true"])
    assert dispatch.run_spec(spec, RankInfo(0, 1, 0, "single")) == dispatch.EXIT_CONFIG
    rec = stepfile.read(Path(tmp_path) / STEPS_FILE)
    assert rec.status == "failed"
    assert rec.error == "backend 'command' is not implemented in this perfgate"


def test_the_merge_rule_takes_the_row_then_the_user_with_the_backends_path_rule() -> None:
    row = {"recipe.model.config.x": "1", "callbacks.Y.z": "true"}
    user = {"model.config.x": "2"}
    assert merged_overrides(row, user, normalize_path) == {
        "model.config.x": 2,
        "trainer.callbacks.Y.z": True,
    }
    assert merged_overrides({"recipe.train.x": "null"}, {}, section_path) == {"train.x": None}
    with pytest.raises(ConfigError, match="ConfigContainer has no section 'trainer'"):
        merged_overrides({}, {"trainer.x": 1}, section_path)


def test_the_command_backend_takes_its_argv_from_the_command_override() -> None:
    face = backends.get("command")
    row = as_row({**COMMAND, "overrides": {**COMMAND["overrides"], "x": 1}})
    assert face.command_line(row, {"y": "2"}) == (
        ("train.sh", "--fast", "a b"),
        {"x": 1, "y": "2"},
    )
    assert face.command_line(row, {"command": ["run", "it"]})[0] == ("run", "it")
    with pytest.raises(ConfigError, match=r"needs overrides.command .* got None"):
        face.command_line(as_row({"backend": "command"}), {})


def test_other_backends_run_no_argv_and_drop_a_command_override() -> None:
    row = as_row({"overrides": {"model.config.x": 1}})
    assert backends.get("nemo2").command_line is no_command
    assert no_command(row, {"command": "x", "y": 2}) == (None, {"model.config.x": 1, "y": 2})


def test_the_dry_run_of_a_command_row_shows_its_overrides_as_given() -> None:
    env = {"A": "1", "NCCL_ALGO": "Ring"}  # A is no performance knob: its value is not shown
    text = describe(as_row({**COMMAND, "id": "c", "env": env}), {"command": ["b"]})
    assert text == (
        "workload c (backend command)\nenvironment set in the job:\n  A=***\n  NCCL_ALGO=Ring\n"
        "backend command: recipe text is not rendered on the login node\n"
        '{\n "overrides": {\n  "command": [\n   "b"\n  ]\n }\n}\n'
    )
