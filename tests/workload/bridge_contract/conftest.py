"""Contract tests against the real Megatron-Bridge 0.6.2, run with the .venv-bridge interpreter.

Before anything imports Bridge, this conftest (1) puts the Transformer Engine stub (te_stub/)
first on sys.path: Bridge imports transformer_engine unconditionally and the real one needs
CUDA; (2) points the Hugging Face cache at a temporary folder holding the config.json of every
model a recipe loads with AutoBridge.from_hf_pretrained (tests/data/hf_configs), offline.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import warnings
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
HF_CONFIGS = REPO / "tests" / "data" / "hf_configs"
SNAPSHOT = "0" * 40  # any commit id where a recipe pins none: the cache is self-consistent

sys.path.insert(0, str(HERE / "te_stub"))
sys.path.insert(0, str(HERE.parent))  # tests/workload: shared modules of the unit tests
sys.path.insert(0, str(HERE.parents[1]))  # tests/: rowfactory


def write_hf_cache(root: Path) -> None:
    """A Hugging Face hub cache with one snapshot per stored model (config.json and, for a
    remote-code model, its config module)."""
    for folder in sorted(p for p in HF_CONFIGS.iterdir() if p.is_dir()):
        model = root / "hub" / f"models--{folder.name}"  # org--name, as the cache spells org/name
        pinned = folder / "revision"  # the commit a recipe asks for (revision=...)
        commit = pinned.read_text().strip() if pinned.exists() else SNAPSHOT
        (model / "refs").mkdir(parents=True)
        (model / "refs" / "main").write_text(commit)
        snapshot = model / "snapshots" / commit
        snapshot.mkdir(parents=True)
        for path in folder.iterdir():
            if path.is_file() and path != pinned:
                shutil.copyfile(path, snapshot / path.name)


_hf_home = Path(tempfile.mkdtemp(prefix="perfgate-bridge-hf-"))
write_hf_cache(_hf_home)
os.environ.update(HF_HOME=str(_hf_home), HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "bridge: needs Megatron-Bridge (.venv-bridge)")
    warnings.filterwarnings("ignore")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # A conftest's hook sees every item of the session: mark only this suite's own tests.
    for item in items:
        if HERE in Path(item.path).parents:
            item.add_marker(pytest.mark.bridge)
