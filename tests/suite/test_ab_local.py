"""The A/B gate through the plugin without Slurm: --executor local, --container-runtime none.

The two "images" are labels that reach the CPU stand-in trainer as $PERFGATE_IMAGE; under
the candidate it sleeps 10% longer per step in the slow row, the same in the other. The
real-Slurm version of this is tests/integration/test_plugin_ab.py.
"""

from __future__ import annotations

from rowfactory import command_row, with_baseline

from perfgate import catalog

pytest_plugins = ["pytester"]

OLD, NEW = "nemo:25.07", "nemo:25.09"
AB = (
    "--all-rows",
    "--executor",
    "local",
    "--container-runtime",
    "none",
    "--container-image",
    OLD,
    "--candidate-image",
    NEW,
    "--tolerance",
    "0.03",
    "--poll-interval",
    "0.2",
)


def ab_rows():
    step = ("--step-s", "0.05", "--first-step-s", "0.2")
    same = with_baseline(command_row("same", *step), 0.05, tolerance=0.05)
    slow = command_row("slow", *step, "--slow-image", NEW, "--slowdown", "0.10")
    return same, slow


def test_ab_gate_verdicts_order_report_and_update(suite):
    same, slow = ab_rows()
    suite.write_rows([same, slow])
    result = suite.run(*AB, "--html", "report.html", "--update-baselines", "-rA")
    out = "\n".join(result.outlines)
    assert result.ret == 1, out
    outcomes = result.parseoutcomes()
    assert (outcomes["passed"], outcomes["failed"]) == (1, 1)
    rows = suite.results()["rows"]
    ok, bad = rows[same.id], rows[slow.id]

    assert ok["verdict"] == "PASS" and ok["mode"] == "paired"
    assert bad["verdict"] == "REGRESSION"
    assert f"{slow.id}: REGRESSION: candidate " in out and "A/B pairs in one allocation" in out
    assert 0.07 < bad["comparison"]["delta"] < 0.13
    # counterbalanced launches; the 3 first pairs of the unchanged image are INCONCLUSIVE at
    # 3% (their prior alone puts the resolution above it): the job added a pair
    assert [r["label"] for r in ok["runs"]][:6] == [
        *("baseline", "candidate"),
        *("candidate", "baseline"),
        *("baseline", "candidate"),
    ]
    assert ok["ab"]["order"].startswith("AB BA AB BA")
    assert ok["ab"]["pairs_run"] >= 4 and ok["ab"]["pairs_added"] == ok["ab"]["pairs_run"] - 3
    assert any(n.startswith("pair 4 added: 3 pair(s) INCONCLUSIVE") for n in ok["notes"])
    assert bad["ab"]["pairs_run"] == 3  # decided at the first look
    for rec in (ok, bad):
        sides = rec["ab"]["sides"]
        assert (sides["baseline"]["image"], sides["candidate"]["image"]) == (OLD, NEW)
        assert sides["baseline"]["digest"] is None  # labels, no squashfs file to hash
        assert [r["image"] for r in rec["runs"]] == [
            OLD if r["label"] == "baseline" else NEW for r in rec["runs"]
        ]
        n = rec["ab"]["pairs_run"]
        assert len(rec["comparison"]["pair_deltas"]) == n == len(rec["ab"]["pairs"])
    assert ok["ab"]["drift"]["stored_step_time_s"] == 0.05 and bad["ab"]["drift"] is None
    # the measured numbers are the candidate's, pooled over its runs
    cand = ok["ab"]["sides"]["candidate"]
    assert ok["measured"]["step_time_s"] == cand["step_time_s"]
    assert 0.049 < cand["step_time_s"] < 0.056

    # the terminal sign-off and the report say which rows were judged by A/B
    assert "A/B gate: 2 of 2 rows judged by A/B pairs in one allocation per row" in out
    html = (suite.path / "report.html").read_text()
    assert "Launch order (A baseline, B candidate): AB BA AB" in html
    n = ok["ab"]["pairs_run"]
    assert f"{n} of {n} pairs used (3 planned + {n - 3} added, at most 8)" in html
    assert "3 of 3 pairs used (3 planned, at most 8)" in html

    # --update-baselines: the candidate's runs become the stored baseline, with provenance
    # and each run; the REGRESSION row is refused without --accept-regressions
    assert f"baseline NOT stored: {slow.id}: REGRESSION" in result.stdout.str()
    new = catalog.load_catalog(suite.baselines_dir).by_id
    for rid, rec in ((same.id, ok),):
        b = new[rid].baseline
        assert len(b.runs) == b.n_runs and all(r.container == NEW for r in b.runs)
        side = rec["ab"]["sides"]["candidate"]
        assert b.step_time_s == round(side["step_time_s"], 6)
        assert b.n_runs == rec["ab"]["pairs_used"]
        # 4-digit log values: the medians of runs may be identical, a spread of 0
        assert b.step_time_spread_s == round(side["spread_s"], 6) >= 0
        assert b.provenance.source == "perfgate A/B run" and b.provenance.container == NEW
        assert b.provenance.notes.startswith(f"candidate of an A/B gate vs {OLD}: ")
    assert new[same.id].baseline.tolerance == 0.05  # the row's own tolerance is kept


def test_ab_dry_run_shows_the_plan(suite):
    suite.shipped_rows()
    a, b = suite.path / "nemo-25.07.sqsh", suite.path / "nemo-25.09.sqsh"
    a.write_bytes(b"hsqs")
    b.write_bytes(b"hsqs")
    rid = "pretrain-nemotron4_15b-h100-bf16-64gpu-tp2"
    sel = ("-m", "h100 and bf16", "-k", "nemotron4_15b", "--gpus", "64", "--time-limit", "20")
    images = (f"--container-image={a}", f"--candidate-image={b}")
    result = suite.run("--dry-run", *sel, *images, "--pairs", "2", "--max-pairs", "6")
    assert result.ret == 0
    out = "\n".join(result.outlines)
    # 8 nodes x 8 GPUs; 20 min per run, 12 runs: 240 min, 64 GPUs x 4 h
    assert f"{rid}: 8 node(s) x 8 GPUs, 240 min, 256.0 GPU-h" in out
    assert (
        f"  A/B: A = {a}, B = {b}: 2 pairs in the order AB BA, one more while INCONCLUSIVE "
        "up to 6 pairs; time limit 240 min = 12 runs x 20 min; at most 85.3 GPU-h for 2 pairs, "
        "256.0 for 6"
    ) in out
    rec = suite.results()["rows"][rid]
    assert rec["mode"] == "paired" and rec["plan"]["max_pairs"] == 6
    assert [(x["label"], x["image"]) for x in rec["plan"]["launches"]] == [
        ("baseline", str(a)),
        ("candidate", str(b)),
        ("candidate", str(b)),
        ("baseline", str(a)),
    ]
    assert "#SBATCH --time=240" in rec["plan"]["sbatch_script"]
    assert f"--container-image={a}" in rec["plan"]["srun_command"]
    assert not (suite.path / "perfgate-results" / "jobs").exists()


def test_ab_options_are_checked(suite):
    same, _ = ab_rows()
    suite.write_rows([same])
    cases = {
        ("--candidate-image", NEW): "give the baseline image as --container-image",
        ("--pairs", "4"): "--pairs 4: only A/B runs have pairs; give --candidate-image",
        ("--container-image", OLD, "--candidate-image", NEW, "--pairs", "5", "--max-pairs", "4"): (
            "--max-pairs 4: must be at least --pairs (5)"
        ),
        ("--container-image", OLD, "--candidate-image", NEW, "--replay", "."): (
            "--replay judges logs already on disk: pick one"
        ),
    }
    for args, message in cases.items():
        result = suite.run(*args)
        assert result.ret == 4, args
        assert any(message in line for line in result.errlines), (args, result.errlines)
