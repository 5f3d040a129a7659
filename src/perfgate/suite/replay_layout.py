"""Which folders of a replay folder are a row's launches, and which are confirmation runs.

perfgate.suite.replay finds the folders whose logs match a row; this module groups them by
layout (docs/suite.md, "No GPU at all: replay logs you already have"):

- a run folder: the folder holding the logs is one launch (as NeMo, nemo_run and llmb leave
  them);
- launch folders: `launch-<n>/` or `run-<n>/` folders (perfgate's own `run-<NN>-<label>/`
  too) are launches of the folder that holds them, read in order of n: K of them are K runs
  of the row, as `--repeat K` makes them live. Files beside them (a job's `job.log`,
  submitit's logs) are not read. In perfgate's own job folders,
  `jobs/<row>/<stamp>/attempt-<k>/run-<NN>-baseline/`, only the last attempt counts (as live:
  an earlier one was requeued);
- `confirm-<n>/` folders beside a run folder or launch folders hold confirmation runs on other
  nodes (perfgate.verdicts.confirm), in order of n; they are never launches. Inside one, the
  same layouts apply.

Pure path logic: which files of a launch are read is perfgate.suite.replay's choice.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

Parts = tuple[str, ...]  # a folder relative to the replay folder, as path parts

LAUNCH = re.compile(r"(?:launch|run)-(\d+)(?:-([A-Za-z0-9_.]+))?")
CONFIRM = re.compile(r"confirm-(\d+)")
ATTEMPT = re.compile(r"attempt-(\d+)")


@dataclass
class Group:
    """One folder's runs of a row: its launches by n, and the confirmations beside them.

    A run folder is one launch (n None); launch folders are n -> (folder, files).
    """

    launches: dict[int | None, tuple[Parts, list[Path]]] = field(default_factory=dict)
    attempt: int = -1  # perfgate's attempt-<k> the launches come from (-1: none)
    labels: set[str] = field(default_factory=set)  # perfgate's run-<NN>-<label> labels
    confirmations: dict[int, list[Path]] = field(default_factory=dict)
    problem: str | None = None  # why these launches cannot be read as the row's runs

    def launch_files(self) -> list[list[Path]]:
        """The files of each launch, in order of n."""
        return [sorted(files) for _, (_, files) in sorted(self.launches.items(), key=_by_n)]

    def folders(self) -> list[Parts]:
        """The launch folders (a run folder: itself)."""
        return [key for key, _ in self.launches.values()]


def _by_n(item: tuple[int | None, object]) -> int:
    return -1 if item[0] is None else item[0]


def _last(parts: Parts, pattern: re.Pattern[str]) -> int | None:
    hits = [i for i, p in enumerate(parts) if pattern.fullmatch(p)]
    return hits[-1] if hits else None


def group(folders: Mapping[Parts, Sequence[Path]]) -> dict[Parts, Group]:
    """The folders that hold a row's runs (by their path parts), each with its launches."""
    groups: dict[Parts, Group] = {}
    confirms: dict[Parts, dict[int, dict[Parts, Sequence[Path]]]] = {}
    plain: list[Parts] = []
    for parts, files in folders.items():
        first = next((i for i, p in enumerate(parts) if CONFIRM.fullmatch(p)), None)
        if first is not None:  # the shallowest confirm-<n> owns everything below it
            n = int(CONFIRM.fullmatch(parts[first])[1])  # type: ignore[index]
            inner = confirms.setdefault(parts[:first], {}).setdefault(n, {})
            inner[parts[first + 1 :]] = files
            continue
        j = _last(parts, LAUNCH)
        if j is None:
            plain.append(parts)
            continue
        _add_launch(groups, parts, j, files)
    for parts in plain:
        # A launch folder's parent (or a folder below it, not in a launch: attempt-<k>/ with
        # job.log, submitit/) holds the job's own files, not another run.
        if any(parts[:i] in groups for i in range(len(parts) + 1)):
            continue
        groups[parts] = Group(launches={None: (parts, list(folders[parts]))})
    for root, by_n in confirms.items():
        if root in groups:
            for n, inner in by_n.items():
                groups[root].confirmations[n] = _confirmation_files(inner)
    return groups


def _add_launch(groups: dict[Parts, Group], parts: Parts, j: int, files: Sequence[Path]) -> None:
    m = LAUNCH.fullmatch(parts[j])
    assert m is not None
    n, label = int(m[1]), m[2]
    root, attempt = parts[:j], -1
    if root and (a := ATTEMPT.fullmatch(root[-1])):
        root, attempt = root[:-1], int(a[1])
    g = groups.setdefault(root, Group())
    if attempt < g.attempt:
        return
    if attempt > g.attempt:  # a requeued job: only its last attempt was measured
        g.launches.clear()
        g.labels.clear()
        g.attempt = attempt
    key = parts[: j + 1]
    if label:
        g.labels.add(label)
    if n in g.launches and g.launches[n][0] != key:
        g.problem = (
            f"two launch folders numbered {n} in {'/'.join(root) or '.'} "
            f"({'/'.join(g.launches[n][0])}, {'/'.join(key)}); number them launch-1, launch-2, .."
        )
    g.launches.setdefault(n, (key, []))[1].extend(files)


def _confirmation_files(inner: Mapping[Parts, Sequence[Path]]) -> list[Path]:
    """The files of one confirm-<n> folder: its single launch when its layout says so, else
    every file in it (perfgate.suite.replay picks which to read)."""
    groups = group(inner)
    if len(groups) == 1:
        (g,) = groups.values()
        if len(g.launches) == 1:
            return g.launch_files()[0]
    return sorted(f for files in inner.values() for f in files)


def describe(groups: Mapping[Parts, Group], limit: int = 3) -> str:
    """The first folders of several groups, for a skip reason: "a, b, c and 2 more"."""
    names = ["/".join(p) or "." for p in groups]
    more = f" and {len(names) - limit} more" if len(names) > limit else ""
    return ", ".join(names[:limit]) + more


def labels_problem(g: Group) -> str | None:
    """Why a group's launches are not one image's runs (an A/B job's folder), else None."""
    other = sorted(g.labels - {"baseline"})
    if other:
        return (
            f"an A/B job's folder (run-<NN>-{other[0]} launches): --replay judges one image's "
            "launches; run the A/B gate, or replay one side's run folders"
        )
    return None
