"""The snapshot of Bridge's ConfigContainer paths (perfgate.workload.bridge.snapshot), which a
login node checks --override against, is what the installed Megatron-Bridge builds.

Every megatron_bridge row's ConfigContainer is built with perfgate's build_config and walked;
the result must equal the checked-in paths.json. PERFGATE_WRITE_SNAPSHOT=1 writes it instead
(after a Bridge upgrade), and the test then fails once so the new file is reviewed.
"""

from __future__ import annotations

import os

import pytest
import torch
from bridge_rows import bridge_rows, device

from perfgate.catalog import Row
from perfgate.workload.bridge import snapshot
from perfgate.workload.bridge.job import build_config
from perfgate.workload.bridge.plan import set_attr_path

ROWS = bridge_rows()


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> dict[str, object]:
    """Each row's ConfigContainer (absent: a row this Bridge cannot build, e.g. its gaps)."""
    base = tmp_path_factory.mktemp("base-checkpoint")
    saved = torch.cuda.get_device_properties
    configs = {}
    try:
        for row in ROWS:
            torch.cuda.get_device_properties = lambda *_, gpu=row.gpu: device(gpu)
            extra = {"checkpoint.pretrained_checkpoint": str(base)} if row.task == "lora" else {}
            try:
                configs[row.id] = build_config(row, steps=50, overrides=extra, mock_data=True)[0]
            except Exception:  # the row's own test (test_rows_validate) says why
                continue
    finally:
        torch.cuda.get_device_properties = saved
    return configs


def test_the_snapshot_is_what_the_installed_bridge_builds(built) -> None:
    def build(row: Row) -> object | None:
        return built.get(row.id)

    fresh = snapshot.generate(ROWS, build)
    if os.environ.get("PERFGATE_WRITE_SNAPSHOT"):
        snapshot.write(fresh)
        snapshot.load.cache_clear()
        pytest.fail(f"wrote {snapshot.SNAPSHOT}: review it and run again without the variable")
    stored = snapshot.load()
    assert stored["versions"] == fresh["versions"]
    assert stored["configs"].keys() == fresh["configs"].keys()
    assert stored == fresh, "paths.json is not what this Bridge builds: regenerate it"


def test_every_path_the_snapshot_accepts_is_settable_and_others_are_not(built) -> None:
    """The login node's rule and the job's set_attr_path agree on every row's config."""
    for row in ROWS:
        cfg = built.get(row.id)
        if cfg is None:
            continue
        paths = snapshot.valid_paths(row)
        for path, kind in paths.items():
            if (
                kind in snapshot.OPEN_TYPES
                or "." not in path
                or not _same_objects(cfg, path, paths)
            ):
                continue  # None or another class here, as in another row of the pair
            parent, _, name = path.rpartition(".")
            set_attr_path(cfg, path, getattr(_current(cfg, parent), name))
        with pytest.raises(Exception, match="has no field 'nonsense'"):
            set_attr_path(cfg, "model.nonsense", 1)


def _same_objects(cfg: object, path: str, paths: dict[str, str]) -> bool:
    """Whether every config object on the way to path is of the class the snapshot lists
    (the snapshot is the union over the rows of a task and model)."""
    parts = path.split(".")
    for i in range(1, len(parts)):
        above = ".".join(parts[:i])
        if type(_current(cfg, above)).__name__ != paths.get(above):
            return False
    return True


def _current(cfg: object, path: str) -> object:
    for name in path.split("."):
        cfg = getattr(cfg, name, None)
    return cfg
