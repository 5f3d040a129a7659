"""A copy of the suite (conftest.py, pytest.ini, benchmarks/) for pytester runs, with the
shipped rows or the test's own rows as its baselines/.

Reusable for a pytester run of the plugin against a real cluster, e.g. with the local Slurm
fixtures of tests/integration (rows.command_row runs the CPU stand-in trainer):

    def test_plugin_on_slurm(suite, slurm_cluster):
        suite.write_rows([with_baseline(command_row("ok", num_gpus=8, gpus_per_node=4), 0.03, 0.5)])
        result = suite.run("--partition", slurm_cluster["partitions"][0], "--poll-interval", "0.5")
        assert result.ret == 0 and suite.results()["rows"][...]["job"]["state"] == "COMPLETED"
"""

from __future__ import annotations

import importlib.util
import json
import shutil
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest

from perfgate import catalog
from perfgate.catalog import Row
from perfgate.catalog.provenance import SHIPPED_DIR
from perfgate.report import sessionfiles

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples" / "replay"


class Suite:
    """The perfgate suite laid out in a pytester folder, with helpers to run and read it."""

    def __init__(self, pytester: pytest.Pytester) -> None:
        self.pytester = pytester
        self.path = pytester.path
        for name in ("conftest.py", "pytest.ini"):
            shutil.copy(REPO / name, self.path / name)
        shutil.copytree(REPO / "benchmarks", self.path / "benchmarks")
        self.baselines_dir = self.path / "baselines"

    def shipped_rows(self) -> catalog.Catalog:
        """Use the rows perfgate ships (perfgate/catalog/shipped), never the site's baselines/:
        a site's own rows and re-measured baselines must not change what a test sees."""
        shutil.copytree(SHIPPED_DIR, self.baselines_dir, dirs_exist_ok=True)
        return catalog.load_catalog(self.baselines_dir)

    def write_rows(self, rows: Iterable[Row]) -> None:
        """Use these rows as baselines/<gpu>.json files."""
        self.baselines_dir.mkdir(exist_ok=True)
        by_gpu: dict[str, list[Row]] = {}
        for r in rows:
            by_gpu.setdefault(r.gpu, []).append(r)
        for gpu, rs in by_gpu.items():
            (self.baselines_dir / f"{gpu}.json").write_text(catalog.dump_rows(rs))

    def run(self, *args: str) -> pytest.RunResult:
        """pytest in the suite folder (in-process, no cache)."""
        # Exit status 2 (a malformed baselines file) is pytest's "interrupted": without
        # no_reraise_ctrlc pytester looks for the Ctrl-C of a session that never configured.
        return self.pytester.runpytest_inprocess(
            "-p", "no:cacheprovider", *args, no_reraise_ctrlc=True
        )

    def results(self) -> dict[str, Any]:
        """The results.json of the last session (its own, under perfgate-results/sessions)."""
        return sessionfiles.read(sessionfiles.session_files(self.path / "perfgate-results")[-1])

    def latest(self) -> dict[str, Any]:
        """perfgate-results/results.json: the latest live or replay session."""
        return json.loads((self.path / "perfgate-results" / "results.json").read_text())


@pytest.fixture
def suite(pytester: pytest.Pytester) -> Suite:
    """The suite in a fresh pytester folder (no baselines yet: call shipped_rows/write_rows)."""
    return Suite(pytester)


def load_examples_module() -> Any:
    """examples/replay/make_examples.py as a module (its NeMo 2 / Bridge line writers)."""
    spec = importlib.util.spec_from_file_location("make_examples", EXAMPLES / "make_examples.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod
