"""The bisection's course (perfgate.bisect.run) with a stand-in probe: the order of probes,
the answer, an undecided probe, Ctrl-C and --resume, consent, the state file and the page."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from rowfactory import command_row

from perfgate.bisect.probe import Interrupted, ProbeConfig
from perfgate.bisect.run import BisectConfig, bisect
from perfgate.errors import ConfigError
from perfgate.launch.types import LaunchOptions

ROW = command_row("bisect", steps=20, time_limit_min=2)
IMAGES = tuple(f"nightly-{i}" for i in range(1, 9))


class FakeProbe:
    """Images from `slow_from` (0-based) on are REGRESSIONs; `verdicts` overrides by index."""

    def __init__(self, slow_from: int = 4, verdicts: dict[int, str] | None = None) -> None:
        self.slow_from, self.verdicts = slow_from, verdicts or {}
        self.calls: list[tuple[str, str, Path]] = []
        self.interrupt_at: int | None = None

    def __call__(self, cfg, good, image, folder, say, digests) -> dict[str, dict[str, Any]]:
        index = IMAGES.index(image)
        self.calls.append((good, image, folder))
        if index == self.interrupt_at:
            self.interrupt_at = None
            raise Interrupted([f"{ROW.id} (job 42, RUNNING)"])
        verdict = self.verdicts.get(index, "REGRESSION" if index >= self.slow_from else "PASS")
        slow = index >= self.slow_from
        ab = {
            "pairs_run": 3,
            "changed": {"nccl": {"baseline": "2.27.3", "candidate": "2.27.7"}} if slow else {},
            "sides": {
                "baseline": {"image": good, "versions": {"nccl": "2.27.3"}},
                "candidate": {"image": image, "versions": {"nccl": "2.27.7" if slow else "2.27.3"}},
            },
            "phases": {
                "phases": [
                    {
                        "name": "optimizer",
                        "delta": 0.5 if slow else 0.0,
                        "ci_low": 0.4 if slow else -0.1,
                        "ci_high": 0.6 if slow else 0.1,
                        "share": 0.1 if slow else 0.0,
                        "moved": "slower" if slow else "flat",
                        "pairs": 3,
                    },
                ],
                "moved": ["optimizer"] if slow else [],
            },
        }
        comp = {"delta": 0.1 if slow else 0.0, "ci_low": 0.05 if slow else -0.02, "ci_high": 0.15}
        return {
            ROW.id: {
                "verdict": verdict,
                "message": f"{ROW.id}: {verdict}",
                "ab": ab,
                "comparison": comp,
                "jobs": [{"job_id": str(len(self.calls))}],
            }
        }


def config(tmp_path: Path, **kw: Any) -> BisectConfig:
    opts = LaunchOptions(executor="local", container_runtime="none")
    fields: dict[str, Any] = dict(
        images=IMAGES,
        probe=ProbeConfig(rows=(ROW,), options=opts),
        results_dir=tmp_path / "out",
        gate=None,
        yes=True,
    )
    fields.update(kw)
    return BisectConfig(**fields)


def run(cfg: BisectConfig, probe: FakeProbe, ask=lambda q: None) -> tuple[int, list[str]]:
    said: list[str] = []
    return bisect(cfg, say=said.append, ask=ask, probe=probe), said


def state(cfg: BisectConfig) -> dict[str, Any]:
    return json.loads((cfg.results_dir / "bisect.json").read_text())


def test_the_ends_then_three_probes_name_image_5(tmp_path):
    cfg, probe = config(tmp_path), FakeProbe()
    code, said = run(cfg, probe)
    assert code == 0
    assert [img for _, img, _ in probe.calls] == [
        "nightly-8",
        "nightly-4",
        "nightly-6",
        "nightly-5",
    ]
    assert {good for good, _, _ in probe.calls} == {"nightly-1"}  # always against the good end
    s = state(cfg)
    assert [p["status"] for p in s["probes"]] == ["done"] * 4
    assert s["result"]["first_bad"] == 4 and s["result"]["probes"] == 3
    assert s["result"]["changed"] == ["NCCL 2.27.3 -> 2.27.7"]
    assert said[-2].startswith(
        "perfgate bisect: answer: first slower image: image 5 (nightly-5), "
        "after image 4 (nightly-4), in 3 probe(s); where the time went: "
        "optimizer +50.0% [+40.0%, +60.0%] (+10.0% of the step)"
    )
    page = (cfg.results_dir / "bisect.html").read_text()
    assert "first slower image: image 5 (nightly-5)" in page and page.count("<h2>") == 4


def test_plan_before_anything_with_gpu_hours(tmp_path):
    cfg, probe = config(tmp_path), FakeProbe()
    _, said = run(cfg, probe)
    plan = next(line for line in said if "plan:" in line)
    # 2 GPUs x (2 min x 16 launches) = 1.067 GPU-hours per job, x 16/8 pairs (extensions)
    assert "at most 4 probe(s) (the ends' own A/B probe runs first" in plan
    assert "2.13 GPU-hours per probe, 8.54 at most" in plan
    assert said.index(plan) < next(i for i, line in enumerate(said) if "probing" in line)


def test_an_undecided_probe_stops_with_the_range_and_no_guess(tmp_path):
    probe = FakeProbe(verdicts={5: "INCONCLUSIVE"})
    cfg = config(tmp_path)
    code, _ = run(cfg, probe)
    assert code == 3
    text = state(cfg)["result"]["text"]
    assert text.startswith("stopped at image 6 (nightly-6): ")
    assert text.endswith(
        "the first slower image is one of images 5..8 (after image 4 "
        "(nightly-4)); not narrowed further, no guess"
    )


def test_ends_that_do_not_differ_stop_after_their_own_probe(tmp_path):
    cfg = config(tmp_path)
    code, _ = run(cfg, FakeProbe(slow_from=99))
    assert code == 3 and len(state(cfg)["probes"]) == 1
    assert state(cfg)["result"]["text"].startswith("the ends do not differ: ")


def test_ctrl_c_keeps_the_state_and_resume_runs_that_probe_again_in_its_folder(tmp_path):
    cfg, probe = config(tmp_path), FakeProbe()
    probe.interrupt_at = 5  # the second midpoint
    code, said = run(cfg, probe)
    assert code == 130
    assert said[-1] == (
        "perfgate bisect: interrupted (Ctrl-C): the probe is recorded as cancelled, jobs "
        f"cancelled: {ROW.id} (job 42, RUNNING); --resume runs this probe again"
    )
    s = state(cfg)
    assert [(p["index"], p["status"]) for p in s["probes"]] == [
        (7, "done"),
        (3, "done"),
        (5, "cancelled"),
    ]
    folder = probe.calls[-1][2]
    with pytest.raises(ConfigError, match="holds a bisection already: --resume goes on with it"):
        run(cfg, probe)
    code, _ = run(config(tmp_path, resume=True), probe)
    assert code == 0
    images = [img for _, img, _ in probe.calls]
    assert images == ["nightly-8", "nightly-4", "nightly-6", "nightly-6", "nightly-5"]
    assert probe.calls[3][2] == folder  # the same folder: its jobs re-attach there
    assert state(cfg)["result"]["first_bad"] == 4


def test_resume_of_another_bisection_is_refused(tmp_path):
    run(config(tmp_path), FakeProbe())
    other = config(tmp_path, resume=True, images=(*IMAGES[:-1], "nightly-9"))
    with pytest.raises(ConfigError, match="is a bisection of other images"):
        run(other, FakeProbe())


def test_above_max_gpu_hours_without_a_terminal_or_yes_nothing_runs(tmp_path):
    cfg, probe = config(tmp_path, yes=False, max_gpu_hours=1.0), FakeProbe()
    with pytest.raises(ConfigError, match="above --max-gpu-hours 1, and there is no terminal"):
        run(cfg, probe)
    assert probe.calls == []
    code, said = run(cfg, probe, ask=lambda q: True)
    assert code == 0 and "confirmed at the terminal" in said[2]
