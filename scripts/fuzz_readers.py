"""Every reader at the door (#29), fuzzed exhaustively: the figures of docs/reliability.md.

    PYTHONPATH=src .venv/bin/python scripts/fuzz_readers.py [--html] [--only results,history,...]

- results: tests/resultsdata.py's session (every kind of record), each field path (every key;
  of a list its first two items and its last) set to each of the 13 values of
  tests/mutation.py HOSTILE, through `perfgate report` (and with --html its page too);
- history: tests/history/test_history_door.py's history, each column of runs and sessions set
  to each of its 13 hostile SQL values, in one run or session, through `perfgate nodes`,
  `perfgate history`, `perfgate history ROW --json` and `perfgate calibrate`;
- names: hostile node names and host lists (a corpus and seeded random text) through
  nodenames, the confirmation's --exclude, sacct/squeue parsing and NVRx log lines;
- images: hostile images-file lines; secrets: every credential form x name x value;
- terminal: seeded random text through the terminal rule.

Counted per reader: cases, tracebacks (an exception that is not perfgate's one-line error),
exit statuses, raw escapes on the terminal (ESC, BEL, CR, C1, bidi), bad names in an
--exclude, secrets that survived. Run it against another checkout (PYTHONPATH=/other/src) to
measure before and after.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import io
import json
import random
import shutil
import sqlite3
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO / "tests")]

from perfgate import cli  # noqa: E402

RAW = [chr(c) for c in (*range(0x00, 0x09), *range(0x0B, 0x20), *range(0x7F, 0xA0))]
RAW += ["\u2028", "\u2029", "\u202e"]


class Tally:
    """Cases, tracebacks by site, exit statuses, raw escapes."""

    def __init__(self, name: str) -> None:
        self.name, self.cases, self.raw = name, 0, 0
        self.sites: collections.Counter[str] = collections.Counter()
        self.codes: collections.Counter[Any] = collections.Counter()
        self.started = time.monotonic()

    def run(self, argv: list[str]) -> None:
        """One `perfgate` command in this process."""
        self.cases += 1
        out, err = io.StringIO(), io.StringIO()
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                try:
                    code = cli.main(argv)
                except SystemExit as e:
                    code = e.code
            self.codes[code] += 1
            text = out.getvalue() + err.getvalue().removesuffix("\n")
            self.raw += any(ch in text.replace("\n", "") for ch in RAW)
        except Exception as e:  # what the fuzz is for: a traceback the user would see
            self.failed(e)

    def failed(self, e: BaseException) -> None:
        frame = traceback.extract_tb(e.__traceback__)[-1]
        self.sites[f"{type(e).__name__} at {Path(frame.filename).name}:{frame.lineno}"] += 1

    def line(self) -> str:
        tb = sum(self.sites.values())
        codes = ", ".join(f"exit {k}: {v}" for k, v in sorted(self.codes.items(), key=str))
        return (
            f"{self.name}: {self.cases:,} cases, {tb} tracebacks at {len(self.sites)} sites, "
            f"{self.raw} with raw escapes ({codes}; {time.monotonic() - self.started:.0f} s)"
        )


def _cut(v: Any) -> Any:
    if isinstance(v, dict):
        return {k: _cut(x) for k, x in v.items()}
    return [_cut(x) for x in v[:4]] if isinstance(v, list) else v


def fuzz_results(tmp: Path, html: bool) -> Tally:
    import mutation
    import resultsdata

    base = _cut(json.loads(resultsdata.write(tmp / "fixture.json").read_text()))
    t = Tally("results.json (perfgate report" + (" --html)" if html else ")"))
    path = tmp / "results.json"
    for p in mutation.paths(base):
        for value in mutation.HOSTILE:
            path.write_text(json.dumps(mutation.mutated(base, p, value)))
            t.run(["report", str(path)] + (["--html", str(tmp / "r.html")] if html else []))
    return t


def fuzz_history(tmp: Path) -> Tally:
    import historydata as h

    template = h.build(tmp / "template.sqlite").path
    t = Tally("history (nodes, history, history ROW, calibrate)")
    commands = (
        ["nodes", "--min-runs", "2", "--all"],
        ["history"],
        ["history", h.ROWS[0], "--json"],
        ["calibrate", "--out", str(tmp / "p.json")],
    )
    path = tmp / "history.sqlite"
    for table, column in h.CASES:
        for value in h.HOSTILE_SQL:
            shutil.copy(template, path)
            try:
                h.corrupt(path, table, column, value, row=2)
            except sqlite3.IntegrityError:  # NULL in a NOT NULL column: no writer leaves it
                continue
            for argv in commands:
                t.run([*argv, "--history", str(path)])
    return t


def fuzz_names(rng: random.Random) -> tuple[Tally, int]:
    import test_nodenames as tn

    from perfgate import nodenames, notices
    from perfgate.launch import slurmstate
    from perfgate.logs import stragglers

    t = Tally("node names (names, host lists, --exclude, sacct, NVRx)")
    alphabet = "abn01[]-,./\\ \n\t\x1b\x07$`'\"#%;|&()\u202e" + "9" * 5
    corpus = [n for n in tn.HOSTILE_NAMES] + [
        "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 24))) for _ in range(4000)
    ]
    bad_in_exclude = 0
    with notices.routed(lambda line: None):
        for i, name in enumerate(corpus):
            t.cases += 1
            try:
                given = [name, corpus[(i * 7) % len(corpus)], "n1"]
                value = tn._exclude(given)
                if value is not None:
                    bad_in_exclude += "/" in value or not all(
                        nodenames.is_name(n) for n in nodenames.expand(value)
                    )
                if isinstance(name, str):
                    with contextlib.suppress(nodenames.BadNodes):
                        nodenames.expand(name)
                    line = f"42|j|RUNNING|None|{name}|00:10:00|01:00:00|0:0"
                    info = slurmstate.parse_sacct(line).get("42")
                    if info is not None and info.nodes is not None:
                        bad_in_exclude += not all(
                            nodenames.is_name(n) for n in nodenames.expand(info.nodes)
                        )
                    lines = ["GPU relative performance:", f"Rank=3 Node={name} Score=0.5", "x"]
                    found = stragglers.slowest_rank(lines, "fuzz.log")
                    if found is not None and found.node is not None:
                        bad_in_exclude += not nodenames.is_name(found.node)
                t.codes[0] += 1
            except Exception as e:
                t.failed(e)
    return t, bad_in_exclude


def fuzz_images(tmp: Path, rng: random.Random) -> Tally:
    from perfgate.bisect import inputs
    from perfgate.errors import ConfigError

    t = Tally("images files (perfgate bisect --images-file)")
    pieces = ["nvcr.io#nvidia/nemo:25.07", "./a.sqsh", "# c", " #x", "$(id)", "a b", "\xff",
              "\x1b]0;x\x07", "", "`id`", "reg#a/b:1 # c", "\t", "\r", "\u202e",
              "a\\b"]  # fmt: skip
    path = tmp / "images.txt"
    for _ in range(3000):
        t.cases += 1
        lines = [rng.choice(pieces) + rng.choice(["", "x", "#y"]) for _ in range(rng.randint(0, 6))]
        data = "\n".join(lines).encode("utf-8", "surrogateescape")
        if rng.random() < 0.2:
            data += bytes([rng.randint(0x80, 0xFF)])
        path.write_bytes(data)
        try:
            for image in inputs.read_list([], str(path)):
                inputs.check_name(image, "x")
            t.codes[0] += 1
        except ConfigError as e:
            t.codes[2] += 1
            t.raw += any(ch in str(e) for ch in RAW)
        except Exception as e:
            t.failed(e)
    return t


def fuzz_secrets(rng: random.Random) -> tuple[Tally, int]:
    from perfgate.secrets import redact

    t = Tally("secrets masking (forms x names x values)")
    names = ["WANDB_API_KEY", "HF_TOKEN", "NGC_KEY", "password", "apiKey", "client_secret",
             "DB_PASSWD", "aws_secret_access_key", "GOOGLE_APPLICATION_CREDENTIALS"]  # fmt: skip
    forms = ["{n}={v}", "export {n}={v}", "--{n}={v}", "--{n} {v}", '"{n}": "{v}"',
             "'{n}': '{v}'", "{n}: {v}", '{n}: "{v}"', "{n}='{v}'"]  # fmt: skip
    survived = 0
    chars = "abcdefXYZ0123456789/+=_-."
    for name in names:
        for form in forms:
            for _ in range(40):
                t.cases += 1
                value = rng.choice("abcXYZ019") + "".join(rng.choice(chars) for _ in range(20))
                text = f"step 3 | {form.format(n=name, v=value)} | loss 1.2"
                try:
                    survived += value in redact(text, environ={})
                    t.codes[0] += 1
                except Exception as e:
                    t.failed(e)
    shapes = ["Authorization: Bearer {v}", "wandb login {v}", "https://u:{v}@h/x"]
    for shape in shapes:
        for _ in range(40):
            t.cases += 1
            value = "".join(rng.choice("abcdef0123456789") for _ in range(40))
            survived += value in redact(shape.format(v=value), environ={})
            t.codes[0] += 1
    return t, survived


def fuzz_terminal(rng: random.Random) -> Tally:
    from perfgate.charset import for_terminal, one_line

    t = Tally("terminal rule (for_terminal, one_line)")
    for _ in range(20_000):
        t.cases += 1
        text = "".join(chr(rng.choice([rng.randint(0, 0x3000), rng.randint(0, 0x20)]))
                       for _ in range(rng.randint(0, 40)))  # fmt: skip
        shown, line = for_terminal(text), one_line(text)
        t.raw += any(ch in shown.replace("\n", "") for ch in RAW) or "\n" in line
        t.codes[0] += 1
    return t


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--html", action="store_true", help="results: render the HTML page too")
    p.add_argument("--only", default="results,history,names,images,secrets,terminal")
    args = p.parse_args()
    only = set(args.only.split(","))
    rng = random.Random(29)
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        if "names" in only:
            t, bad = fuzz_names(rng)
            print(t.line() + f"; {bad} bad names in an --exclude or a record", flush=True)
        if "images" in only:
            print(fuzz_images(tmp, rng).line(), flush=True)
        if "secrets" in only:
            t, survived = fuzz_secrets(rng)
            print(t.line() + f"; {survived} secrets survived", flush=True)
        if "terminal" in only:
            print(fuzz_terminal(rng).line(), flush=True)
        if "history" in only:
            t = fuzz_history(tmp)
            print(t.line(), flush=True)
            for site, n in t.sites.most_common(10):
                print(f"  {n} {site}")
        if "results" in only:
            t = fuzz_results(tmp, args.html)
            print(t.line(), flush=True)
            for site, n in t.sites.most_common(10):
                print(f"  {n} {site}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
