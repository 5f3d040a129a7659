"""A guard pytest loads from perfgate's pytest11 entry point, before any conftest.py.

pytest chooses its root folder and reads pytest.ini before it knows the options that
conftest-loaded plugins add. In `pytest --container-image /lustre/nemo.sqsh ...` it takes
`/lustre/nemo.sqsh` for a test path, roots itself in `/`, never reads perfgate's pytest.ini
and never loads perfgate, and then rejects perfgate's options as "unrecognized arguments".
This guard only speaks in exactly that case (no configuration file read, while the folder
pytest was started in holds perfgate's pytest.ini) and says how to write the option instead.
It does nothing in any other project.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest


def _perfgate_ini(folder: Path) -> Path | None:
    """folder/pytest.ini when folder is a perfgate suite (its conftest.py loads the plugin)."""
    ini = folder / "pytest.ini"
    try:
        suite = "perfgate.suite.plugin" in (folder / "conftest.py").read_text(errors="replace")
    except OSError:
        return None
    return ini if suite and ini.is_file() else None


def _outside(arg: str, folder: Path) -> bool:
    """An argument pytest would take for a path: it exists and lies outside folder."""
    if arg.startswith("-") or not os.path.exists(arg):
        return False
    path = Path(os.path.abspath(arg))
    return folder != path and folder not in path.parents


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config: pytest.Config, args: list[str]) -> None:
    """Stop with a one-line fix when a path-valued option made pytest miss perfgate's ini."""
    folder = early_config.invocation_params.dir
    if early_config.inipath is not None:
        return
    ini = _perfgate_ini(folder)
    if ini is None:
        return
    for i, arg in enumerate(args):
        if _outside(arg, folder):
            option = args[i - 1] if i and args[i - 1].startswith("--") else "--option"
            raise pytest.UsageError(
                f"pytest did not read {ini} (it took {arg!r} for a test path and chose "
                f"rootdir {early_config.rootpath}): write the option with '=', "
                f"e.g. {option}={arg}"
            )
