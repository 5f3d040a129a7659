"""Before anything is submitted: a selection or --all-rows, the GPU-hours agreed, --override
checked against every selected row as one usage error (also under pytest-xdist)."""

from __future__ import annotations

import os
import pty
import select
import subprocess
import sys
import time
from types import SimpleNamespace

import pytest
from rowfactory import command_row, with_baseline

from perfgate import catalog
from perfgate.catalog.provenance import SHIPPED_DIR
from perfgate.errors import ConfigError
from perfgate.suite import preflight
from perfgate.verdicts.confirm import RerunPolicy

pytest_plugins = ["pytester"]

LOCAL = ("--executor", "local", "--poll-interval", "0.2")
CHEAP = ("--max-gpu-hours", "0.1")  # two 2-GPU rows of 5 min: 0.33 GPU-h, + 0.33 reruns


def _rows() -> list:
    return [with_baseline(command_row(v), 0.0305, tolerance=0.5) for v in ("one", "two")]


def _error(result) -> str:
    (line,) = [ln for ln in result.errlines if ln.startswith("ERROR:")]
    return line


def _no_jobs(suite) -> bool:
    return not (suite.path / "perfgate-results" / "jobs").exists()


def test_bare_live_session_on_the_catalog_submits_nothing(suite, monkeypatch):
    cat = suite.shipped_rows()
    monkeypatch.setenv("CI", "1")  # nobody to ask, whatever terminal runs these tests
    result = suite.run("--partition", "p")
    assert result.ret == 4
    hours = sum(r.nodes * r.tasks_per_node * (r.time_limit_min or 30) / 60 for r in cat.rows)
    # 83 seed rows + 62 published Bridge rows + 2 megatron_core rows
    assert (len(cat.rows), hours) == (147, 13498.0)
    assert _error(result) == (
        "ERROR: no rows selected: this would submit all 147 rows collected (26,996.0 GPU-hours "
        "at most); choose rows with -m, -k, --gpus or test ids (--dry-run shows the plan), "
        "or pass --all-rows"
    )
    assert (
        "perfgate: plan: 147 row(s), 3913 node allocation(s), 13,498.0 GPU-hours at most "
        "(time-limit bound) + up to 13,498.0 for confirmation reruns (--confirm auto: a "
        "REGRESSION rerun on other nodes, a second rerun only when the first reproduced it (a "
        "third when the second neither reproduced nor contradicted it), all reruns within one "
        "per row)"
    ) in "\n".join(result.outlines)
    assert _no_jobs(suite)
    # --all-rows is consent to the catalog, not to its GPU-hours.
    result = suite.run("--partition", "p", "--all-rows")
    assert result.ret == 4 and _no_jobs(suite)
    assert _error(result) == (
        "ERROR: 147 rows need up to 26,996.0 GPU-hours, above --max-gpu-hours 512, and there is "
        "no terminal to ask: pass --yes to submit them anyway, or raise --max-gpu-hours"
    )
    # A selection still above the limit: refused the same way.
    result = suite.run("--partition", "p", "-m", "h100")
    assert result.ret == 4 and "58 rows need up to 19,507.0 GPU-hours" in _error(result)
    # Without confirmation reruns the plan is the rows' jobs alone.
    result = suite.run("--partition", "p", "-m", "h100", "--confirm", "0")
    assert result.ret == 4 and "58 rows need up to 9,753.5 GPU-hours" in _error(result)


def test_modes_that_submit_nothing_need_no_consent(suite, monkeypatch):
    suite.shipped_rows()
    monkeypatch.setenv("CI", "1")
    assert suite.run("--dry-run").ret == 0
    assert suite.run("--collect-only", "-q").ret == 0


def test_selection_all_rows_and_yes(suite, monkeypatch):
    suite.write_rows(_rows())
    monkeypatch.setenv("CI", "1")
    ids = [r.id for r in _rows()]
    # Below the limit: a selection (-k) or --all-rows is enough.
    result = suite.run(*LOCAL, "-k", "one")
    assert result.ret == 0 and result.parseoutcomes()["passed"] == 1
    assert "perfgate: submitting (within --max-gpu-hours 512)" in result.outlines
    result = suite.run(*LOCAL, "--all-rows")
    assert result.ret == 0 and result.parseoutcomes()["passed"] == 2
    # A test id is a selection.
    result = suite.run(*LOCAL, f"benchmarks/pretrain/test_pretrain.py::test_pretrain[{ids[1]}]")
    assert result.ret == 0 and result.parseoutcomes()["passed"] == 1
    # Above --max-gpu-hours without a terminal: refused; --yes submits.
    result = suite.run(*LOCAL, *CHEAP, "--all-rows")
    assert result.ret == 4
    assert "2 rows need up to 0.7 GPU-hours, above --max-gpu-hours 0.1" in _error(result)
    result = suite.run(*LOCAL, *CHEAP, "--all-rows", "--yes")
    assert result.ret == 0 and result.parseoutcomes()["passed"] == 2
    assert "perfgate: submitting (above --max-gpu-hours 0.1, confirmed by --yes)" in (
        result.outlines
    )


def test_no_terminal_means_no_prompt(suite, tmp_path):
    """A process without a controlling terminal (no /dev/tty) refuses, even without CI."""
    suite.write_rows(_rows())
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *LOCAL, *CHEAP, "--all-rows"],
        cwd=suite.path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        start_new_session=True,  # a new session has no controlling terminal
        stdin=subprocess.DEVNULL,
        check=False,
    )
    assert proc.returncode == 4, proc.stdout + proc.stderr
    assert "and there is no terminal to ask: pass --yes" in proc.stderr
    assert _no_jobs(suite)


def _in_a_terminal(cwd, args: list[str], answer: str, timeout: float = 120) -> tuple[int, str]:
    """pytest with a pseudo-terminal as its controlling terminal; answer its prompt."""
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    env["COLUMNS"] = "200"
    pid, fd = pty.fork()
    if pid == 0:  # the child: the pty is its stdin, stdout, stderr and /dev/tty
        os.chdir(cwd)
        os.execve(sys.executable, [sys.executable, "-m", "pytest", *args], env)
    out = b""
    answered = False
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 1.0)
        if not ready:
            continue
        try:
            chunk = os.read(fd, 4096)
        except OSError:  # the child closed the terminal (Linux: EIO)
            break
        if not chunk:
            break
        out += chunk
        if not answered and b"? [y/N] " in out:
            os.write(fd, answer.encode() + b"\n")
            answered = True
    else:
        os.kill(pid, 9)
    _, status = os.waitpid(pid, 0)
    os.close(fd)
    return os.waitstatus_to_exitcode(status), out.decode(errors="replace")


@pytest.mark.parametrize("answer", ["n", "y"])
def test_terminal_prompt_above_the_limit(suite, answer):
    suite.write_rows(_rows())
    args = ["-p", "no:cacheprovider", *LOCAL, *CHEAP, "--all-rows"]
    code, out = _in_a_terminal(suite.path, args, answer)
    assert "perfgate: submit 2 rows, 0.7 GPU-hours? [y/N] " in out
    if answer == "n":
        assert code == 4, out
        assert "ERROR: nothing submitted: the GPU-hours were not confirmed" in out
        assert _no_jobs(suite)
    else:
        assert code == 0, out
        assert "confirmed at the terminal" in out and "2 passed" in out


def test_no_container_image_warns(suite, monkeypatch):
    suite.write_rows(_rows())
    monkeypatch.setenv("CI", "1")
    monkeypatch.setenv("PATH", "/nonexistent")  # no sbatch: stops right after the plan
    result = suite.run("--all-rows", "--partition", "p")
    assert result.ret == 4
    out = "\n".join(result.outlines)
    assert "perfgate: WARNING: no --container-image: the rows run on the nodes' own software" in out
    assert "slurm" in _error(result).lower() and _no_jobs(suite)
    local = suite.run("--all-rows", *LOCAL)  # the local executor runs inside the container
    assert local.ret == 0 and "WARNING: no --container-image" not in "\n".join(local.outlines)


def test_xdist_controller_checks_before_scheduling(suite, monkeypatch):
    suite.write_rows(_rows())
    monkeypatch.setenv("CI", "1")
    result = suite.run(*LOCAL, "-n", "2")
    assert result.ret == 4 and _no_jobs(suite)
    assert "no rows selected: this would submit all 2 rows collected" in _error(result)
    bad = ("--override", "model.config.enable_cuda_graph=true")
    result = suite.run(*LOCAL, "--all-rows", "-n", "2", *bad)
    assert result.ret == 4 and _no_jobs(suite)
    assert "backend 'command' runs a command" in _error(result)
    result = suite.run(*LOCAL, "--all-rows", "-n", "2")
    assert result.ret == 0 and result.parseoutcomes()["passed"] == 2


def test_xdist_controller_counts_only_row_tests(suite, monkeypatch):
    # A session's own unit tests parametrized by a row id are not rows: under -n the
    # controller saw 13 such ids in the suite's own tests and asked for GPU-hours (#28).
    rows = _rows()
    suite.write_rows(rows)
    ids = ", ".join(repr(r.id) for r in rows)
    suite.pytester.makepyfile(
        test_unit=f"import pytest\n@pytest.mark.parametrize('rid', [{ids}])\n"
        "def test_unit(rid):\n    assert rid\n"
    )
    monkeypatch.setenv("CI", "1")
    result = suite.run(*LOCAL, *CHEAP, "-n", "2", "test_unit.py", "-k", "command")
    assert result.ret == 0 and _no_jobs(suite), "\n".join(result.outlines)
    assert result.parseoutcomes()["passed"] == 2


def test_override_valid_for_some_backends_only_names_them(suite):
    cat = catalog.load_catalog(SHIPPED_DIR)
    nemo2 = next(r for r in cat.rows if r.backend == "nemo2" and r.gpu == "h100")
    auto = next(r for r in cat.rows if r.backend == "automodel")
    suite.write_rows([nemo2, auto])
    graph = ("--override", "model.config.enable_cuda_graph=true")
    result = suite.run("--dry-run", *graph)
    assert result.ret == 4
    line = _error(result)
    assert line.startswith(
        "ERROR: --override 'model.config.enable_cuda_graph': rejected by 1 of 2 selected "
        f"row(s): automodel (1 row(s): {auto.id}): model.config has no key 'enable_cuda_graph'"
    )
    assert line.endswith("; valid for the 1 nemo2 row(s): select them all with -m nemo2")
    assert suite.run("--dry-run", "-m", "nemo2", *graph).ret == 0


def test_the_readme_knob_example_names_every_row_it_is_valid_for(suite):
    """#21 item 7: `-m h100 --override model.config.enable_cuda_graph=true` suggested
    `-m megatron_bridge`, dropping the nemo2 rows the path is valid for."""
    suite.shipped_rows()
    graph = ("--override", "model.config.enable_cuda_graph=true")
    line = _error(suite.run("--dry-run", "-m", "h100", *graph))
    assert line.endswith(
        '; valid for the 36 nemo2 row(s): select them all with -m "h100 and nemo2"'
    )
    result = suite.run("--dry-run", "-m", "h100 and nemo2", *graph)
    assert result.ret == 0 and result.parseoutcomes()["passed"] == 36
    bridge = ("--override", "model.enable_cuda_graph=true")  # Bridge's spelling of the knob
    assert suite.run("--dry-run", "-m", "h100 and megatron_bridge", *bridge).ret == 0


def test_a_path_several_backends_accept_keeps_them_all() -> None:
    def row(rid: str, backend: str):
        return SimpleNamespace(id=rid, backend=backend)

    rows = [row("a", "nemo2"), row("b", "megatron_bridge"), row("c", "automodel")]

    def check(r, overrides):
        if r.backend == "automodel":
            raise ConfigError(f"row {r.id!r}: override 'x.y': model has no key 'x'")

    with pytest.raises(ConfigError) as e:
        preflight.check_session_overrides(rows, {"x.y": 1}, check, markexpr="h100")
    assert str(e.value).endswith(
        "; valid for the 2 megatron_bridge and nemo2 row(s): select them all with "
        '-m "h100 and not automodel"'
    )
    assert preflight.keeping("h100 or b200", ["nemo2"], ["automodel"]) == "(h100 or b200) and nemo2"
    assert preflight.keeping("", ["a", "b"], ["c", "d"]) == "not c and not d"


def test_consent_rules_without_pytest() -> None:
    cost = preflight.Cost(rows=3, nodes=3, gpu_hours=600.0)
    asked: list[str] = []

    def ask(answer):
        return lambda q: asked.append(q) or answer

    kw = dict(selected=True, all_rows=False, yes=False, max_gpu_hours=512.0)
    assert preflight.consent(cost, **kw, ask=ask(True)).endswith("confirmed at the terminal")
    assert asked == ["perfgate: submit 3 rows, 600.0 GPU-hours? [y/N] "]
    with pytest.raises(Exception, match="not confirmed"):
        preflight.consent(cost, **kw, ask=ask(False))
    small = preflight.Cost(rows=1, nodes=1, gpu_hours=512.0)  # at the limit: no question
    assert preflight.consent(small, **kw, ask=ask(None)) == "within --max-gpu-hours 512"
    assert len(asked) == 2
    # confirmation reruns count "up to": a 300 GPU-h plan that may rerun every row asks
    one = RerunPolicy(1)
    reruns = preflight.Cost(rows=1, nodes=1, gpu_hours=300.0, confirm_gpu_hours=300.0, confirm=one)
    assert preflight.consent(reruns, **kw, ask=ask(True)).endswith("confirmed at the terminal")
    assert asked[-1] == "perfgate: submit 1 rows, 600.0 GPU-hours? [y/N] "
