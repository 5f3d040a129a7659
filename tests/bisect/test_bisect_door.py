"""What `perfgate bisect` reads from outside (#29): the images file (enroot's `#` survives;
empty, non-UTF-8, huge, `$(..)` or spaced names are one line before anything is submitted),
bisect.json on --resume (index range, keys, folders, outcomes), and SIGTERM (the probe is
recorded as cancelled)."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from mutation import HOSTILE, mutated, paths
from test_bisect_flow import IMAGES, FakeProbe, config, run, state
from test_bisect_inputs import bisect, refused

from perfgate.bisect import inputs
from perfgate.errors import ConfigError

ENROOT = "nvcr.io#nvidia/nemo:25.07"


def test_enroot_images_survive_and_comments_start_a_line_or_follow_whitespace(tmp_path):
    listed = tmp_path / "list.txt"
    listed.write_text(f"# nightlies\n{ENROOT}\n  # indented comment\nreg#a/b:1 # good\n\tc.sqsh\n")
    assert inputs.read_list([], str(listed)) == [ENROOT, "reg#a/b:1", "c.sqsh"]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"./n1.sqsh\n./n2 x.sqsh\n", "line 2: image './n2 x.sqsh': ' ' is not allowed"),
        (b"./n1.sqsh\n$(touch /tmp/pwned)\n", "line 2: image '$(touch /tmp/pwned)': '$' is not"),
        (b"./n1.sqsh\n\xff\xfe.sqsh\n", "line 2 is not UTF-8 text"),
        (b"./n1.sqsh\n`id`.sqsh\n", "line 2: image '`id`.sqsh': '`' is not allowed"),
        (b"./n1.sqsh\n\x1b]0;x\x07.sqsh\n", "line 2: image '\\x1b]0;x\\x07.sqsh': '\\x1b' is"),
    ],
)
def test_a_bad_images_file_is_one_line_naming_it_and_the_line(capsys, where, content, message):
    (where / "list.txt").write_bytes(content)
    err = refused(capsys, where, "--images-file", "list.txt")
    assert err.startswith("--images-file list.txt: ") and message in err, err
    assert "\x1b" not in err


def test_an_empty_name_on_the_command_line_is_one_line(capsys, where):
    assert refused(capsys, where, "", "./n2.sqsh") == "image 1: an empty image name"


def test_a_huge_sparse_images_file_is_refused_at_its_size_cap(capsys, where):
    big = where / "huge.txt"
    with open(big, "wb") as f:
        f.truncate(1 << 30)  # 1 GiB, sparse: costs nothing to make
    err = refused(capsys, where, "--images-file", "huge.txt")
    assert err == "huge.txt: 1 GiB, above the 1 MiB a images file may have", err


def test_an_escape_in_a_command_line_image_never_reaches_the_terminal(capsys, where):
    code, out, err = bisect(capsys, "\x1b]0;X\x07")
    assert code == 2 and "\x1b" not in out + err and "\x07" not in out + err
    assert "'\\x1b' is not allowed" in err


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=200))
def test_fuzz_images_files_are_names_or_one_line(tmp_path_factory, data):
    path = tmp_path_factory.mktemp("list") / "list.txt"
    path.write_bytes(data)
    try:
        found = inputs.read_list([], str(path))
    except ConfigError as e:
        assert "\n" not in str(e) and "\x1b" not in str(e) and str(e).startswith("--images-file")
        return
    for image in found:
        assert inputs.check_name(image, "x") == image and "#" not in image.split()[0][:1]


# --- bisect.json on --resume ---------------------------------------------------------------------


def _saved(tmp_path: Path) -> tuple[Any, dict[str, Any]]:
    """A bisection stopped by Ctrl-C in its second midpoint: its config and bisect.json."""
    cfg, probe = config(tmp_path), FakeProbe()
    probe.interrupt_at = 5
    assert run(cfg, probe)[0] == 130
    return cfg, state(cfg)


def _resume(cfg: Any, data: dict[str, Any]) -> tuple[int | None, str]:
    (cfg.results_dir / "bisect.json").write_text(json.dumps(data))
    try:
        return run(type(cfg)(**{**cfg.__dict__, "resume": True}), FakeProbe())[0], ""
    except ConfigError as e:
        return None, str(e)


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda s: s["probes"][0].update(index=9), "probe 1: index 9 is outside the images"),
        (lambda s: s["probes"][0].update(index=0), "probe 1: index 0 is outside the images"),
        (lambda s: s["probes"][0].pop("dir"), "field 'probes[0].dir': expected a value"),
        (lambda s: s["probes"][0].update(dir="/etc"), "its folder '/etc' is not inside"),
        (lambda s: s["probes"][0].update(dir="out/../../x"), "is not inside --results-dir"),
        (lambda s: s["probes"][0].update(outcome="good"), "outcome 'good' is not what its rows"),
        (
            lambda s: s["probes"][0].update(image="nightly-9"),
            "image 'nightly-9' is not image 8 of the list",
        ),
        (lambda s: s["probes"][0].update(status="paused"), "field 'probes[0].status'"),
        (lambda s: s.update(probes={}), "field 'probes': expected a list"),
    ],
)
def test_resume_refuses_a_bisect_json_that_does_not_hold_together(tmp_path, edit, message):
    cfg, saved = _saved(tmp_path)
    edit(saved)
    code, err = _resume(cfg, saved)
    assert code is None and message in err and "\n" not in err, err


def test_a_resume_of_an_intact_state_finds_the_answer(tmp_path):
    cfg, saved = _saved(tmp_path)
    assert _resume(cfg, saved) == (0, "")


_BASE: list[tuple[Any, dict[str, Any]]] = []


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_fuzz_bisect_json_one_field_at_a_time(tmp_path_factory, data):
    if not _BASE:
        _BASE.append(_saved(tmp_path_factory.mktemp("bisect")))
    cfg, saved = _BASE[0]
    path = data.draw(st.sampled_from(list(paths(saved))))
    value = data.draw(st.sampled_from(HOSTILE))
    code, err = _resume(cfg, mutated(saved, path, value))
    assert code in (None, 0, 3), (path, value)
    assert "\n" not in err and "\x1b" not in err


# --- SIGTERM ----------------------------------------------------------------------------------


class TermProbe(FakeProbe):
    """SIGTERM arrives while the probe of image index `at` runs."""

    def __init__(self, at: int) -> None:
        super().__init__()
        self.at = at

    def __call__(self, cfg, good, image, folder, say, digests):
        if IMAGES.index(image) == self.at:
            os.kill(os.getpid(), signal.SIGTERM)
        return super().__call__(cfg, good, image, folder, say, digests)


def test_sigterm_records_the_probe_as_cancelled_and_exits_143(tmp_path):
    cfg = config(tmp_path)
    before = signal.getsignal(signal.SIGTERM)
    code, said = run(cfg, TermProbe(at=3))
    assert code == 143 and signal.getsignal(signal.SIGTERM) is before
    assert said[-1].startswith("perfgate bisect: interrupted (SIGTERM): the probe is recorded")
    assert [(p["index"], p["status"]) for p in state(cfg)["probes"]] == [
        (7, "done"),  # the ends' own probe
        (3, "cancelled"),  # the midpoint SIGTERM stopped: --resume runs it again
    ]
