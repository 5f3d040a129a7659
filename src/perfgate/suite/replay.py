"""--replay DIR: find each row's logs in a folder and turn them into a RunResult.

Matching rule (README "Replay"): a log file belongs to a row when a component of its path
relative to DIR (a folder name or the file name without extension)

1. is the row id (perfgate's own results folders: DIR/<row_id>/.../steps.json or logs, or a
   file <row_id>.log), or
2. is an experiment name of NeMo's scripts/performance, nemo_run, llmb or Megatron-Bridge:
   `<task>_<model>_<dtype>_<config>` such as `pretrain_nemotron4_15b_bf16_64` or
   `lora_llama3_70b_bf16_2nodes_tp1_pp4_cp1_vp20_ep1_etpNone_mbs1_gbs64_933609`, whose
   tokens (dtype, GPU count or Nnodes, tp/pp/cp/vp/ep/etp, mbs/gbs, seq) all agree with the
   row; tokens absent from the name are not checked;

and no path component names another GPU type (a folder `h100/` or a token `_b200_`
restricts the match to that GPU).

Which of the matched folders are the row's launches is perfgate.suite.replay_layout's rule: the
folder holding the files is one launch, unless it holds launch folders (`launch-<n>/`,
`run-<n>/`, perfgate's `attempt-<k>/run-<NN>-baseline/`): then each is one launch, read in
order of n, and K launches are K runs of the row (judged and stored as `--repeat K` live).
`confirm-<n>/` folders beside them are confirmation runs (Match.confirmations), never launches.
In a launch, perfgate's steps.json wins, then `log-*` files (nemo_run/llmb main logs, chained
in name order as restarts), then NeMo's `nemo_log_globalrank-0_localrank-0.txt`, then a single
other log with step lines. A row with no matching run, with runs in several folders, or whose
run also matches another selected row is skipped with the reason.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from perfgate import diagnose, logs
from perfgate.catalog import GPUS, PRECISION_TOKENS, Row
from perfgate.errors import PerfgateError
from perfgate.launch.collect import slowest_of
from perfgate.logs import stepfile
from perfgate.logs.components import versions_of_files
from perfgate.logs.phases import phases_of_run
from perfgate.runs import Diagnosis, RunRecord, RunResult
from perfgate.suite import replay_layout

LOG_SUFFIXES = (".out", ".log", ".txt", ".err")
TASK_WORDS = {"pretrain": ("pretrain",), "sft": ("sft", "finetune"), "lora": ("lora", "finetune")}
# Precision tokens of experiment names -> (precision, fp8_recipe): the tokens of row ids, and a
# bare "fp8" that names no recipe.
DTYPES = {token: key for key, token in PRECISION_TOKENS.items()} | {"fp8": ("fp8", None)}
_NUM_TOKEN = re.compile(
    r"^(?:(?P<key>tp|pp|cp|vp|ep|etp|mbs|gbs|seq|gpus)(?P<val>\d+|none)"
    r"|(?P<val2>\d+)(?P<key2>nodes|mbs|gbs|gpus?))$"
)
_JOB_ID = re.compile(r"_(\d{3,})_\d+$")  # nemo_run logs: log-<acct>.<exp>_<jobid>_<n>.out


@dataclass(frozen=True)
class Match:
    """The logs of one row found in the replay folder, or why there are none.

    launches: the files of each launch, in order (K launches: K runs of the row);
    confirmations: the files of each confirm-<n> run beside them, in order of n.
    """

    row_id: str
    launches: tuple[tuple[Path, ...], ...] = ()
    confirmations: tuple[tuple[Path, ...], ...] = ()
    skip_reason: str | None = None

    @property
    def files(self) -> tuple[Path, ...]:
        """Every launch's files, in order."""
        return tuple(f for files in self.launches for f in files)


def _normalize(name: str) -> str:
    # llmb writes llama3.1; catalog ids write llama31.
    return re.sub(r"(?<=\d)\.(?=\d)", "", name.lower())


def _exp_name_matches(name: str, row: Row) -> bool:
    """True when name is an experiment name of this row (see the module docstring)."""
    name = _normalize(name)
    rest = None
    for word in TASK_WORDS[row.task]:
        prefix = f"{word}_{row.model}"
        if name == prefix or name.startswith(prefix + "_"):
            rest = name[len(prefix) + 1 :]
            break
    if rest is None:
        return False
    tokens = [t for t in re.split(r"[_\-]", rest) if t]
    other_task = {"sft": "lora", "lora": "sft"}.get(row.task)
    if other_task and other_task in tokens:
        return False
    after_dtype = False
    for tok in tokens:
        if tok in DTYPES:
            precision, recipe = DTYPES[tok]
            if precision != row.precision or (recipe and recipe != row.fp8_recipe):
                return False
            after_dtype = True
            continue
        if tok.isdigit():
            # llmb pretrain names end in JOB_TOTAL_GPUS right after the dtype; later bare
            # numbers are timestamps or job ids.
            if after_dtype and int(tok) != row.num_gpus:
                return False
            after_dtype = False
            continue
        after_dtype = False
        if tok in GPUS and tok != row.gpu:
            return False
        m = _NUM_TOKEN.match(tok)
        if m and not _token_agrees(
            m.group("key") or m.group("key2"), m.group("val") or m.group("val2"), row
        ):
            return False
    return True


def _token_agrees(key: str, val: str, row: Row) -> bool:
    n = None if val == "none" else int(val)
    if key in ("gpus", "gpu"):
        return n == row.num_gpus
    if key == "nodes":
        return n == row.nodes
    if key == "vp":  # NeMo's scripts write vp1 or vpNone for no interleaving
        return (row.vp or 1) == (n or 1)
    if key == "ep":
        return row.ep == (n or 1)
    if key == "etp":
        return row.etp is None or n is None or row.etp == n
    value = {"tp": row.tp, "pp": row.pp, "cp": row.cp, "mbs": row.mbs, "gbs": row.gbs}.get(key)
    if key == "seq":
        value = row.seq_len
    return value == n


def _gpu_tokens(parts: Sequence[str]) -> set[str]:
    found = set()
    for part in parts:
        for tok in re.split(r"[_\-./]", part.lower()):
            if tok in GPUS:
                found.add(tok)
    return found


def path_matches(rel: Path, row: Row) -> bool:
    """True when a log's path relative to the replay folder identifies this row."""
    parts = [*rel.parent.parts, rel.stem if rel.name != "steps.json" else ""]
    parts = [p for p in parts if p]
    gpus = _gpu_tokens([p for p in parts if p != row.id])
    if gpus and row.gpu not in gpus:
        return False
    return any(p == row.id or _exp_name_matches(p, row) for p in parts)


class ReplayIndex:
    """The log files under a replay folder, grouped by run folder, matched to selected rows."""

    def __init__(self, root: Path, rows: Sequence[Row]) -> None:
        self.root = root
        self.rows = list(rows)
        self._runs: dict[Path, list[Path]] = {}
        self._matches: dict[str, Match] = {}
        for path in sorted(root.rglob("*")):
            if path.is_file() and (path.name == "steps.json" or path.suffix in LOG_SUFFIXES):
                self._runs.setdefault(path.parent, []).append(path)

    def _run_matches(self, folder: Path, row: Row) -> bool:
        return any(path_matches(f.relative_to(self.root), row) for f in self._runs[folder])

    def _any_matches(self, folders: Sequence[Path], row: Row) -> bool:
        return any(self._run_matches(d, row) for d in folders)

    def match(self, row: Row) -> Match:
        """The launches of this row, or a skip reason (none, runs in several folders, or
        shared with another row)."""
        if row.id not in self._matches:
            self._matches[row.id] = self._match(row)
        return self._matches[row.id]

    def _match(self, row: Row) -> Match:
        folders = {
            d.relative_to(self.root).parts: files
            for d, files in self._runs.items()
            if self._run_matches(d, row)
        }
        if not folders:
            return Match(row.id, skip_reason=f"no log under {self.root} matches row {row.id}")
        groups = replay_layout.group(folders)
        if not groups:
            return Match(
                row.id,
                skip_reason=f"only confirmation runs (confirm-<n>/) under {self.root} match row "
                f"{row.id}: no launch to judge",
            )
        if len(groups) > 1:
            return Match(
                row.id,
                skip_reason=f"ambiguous: {len(groups)} runs under {self.root} match row "
                f"{row.id} ({replay_layout.describe(groups)}); point --replay at one of them, "
                "or put them in launch-1/, launch-2/, .. of one folder to read them as that "
                "many runs",
            )
        ((root, g),) = groups.items()
        why = g.problem or replay_layout.labels_problem(g)
        if why:
            return Match(row.id, skip_reason=f"{'/'.join(root) or '.'}: {why}")
        keys = g.folders()
        used = [self.root.joinpath(*p) for p in folders if any(p[: len(k)] == k for k in keys)]
        others = [r.id for r in self.rows if r.id != row.id and self._any_matches(used, r)]
        if others:
            return Match(
                row.id,
                skip_reason=f"ambiguous: {'/'.join(root) or '.'} matches rows "
                f"{row.id} and {', '.join(others)}; put the GPU type in the path or narrow -m",
            )
        launches, confirmations = [], []
        for files in g.launch_files():
            chosen, why = _pick(files, self.root)
            if why:
                return Match(row.id, skip_reason=why)
            launches.append(chosen)
        for _, files in sorted(g.confirmations.items()):
            chosen, why = _pick(files, self.root)
            if not why:
                confirmations.append(chosen)
        return Match(row.id, tuple(launches), tuple(confirmations))


def _pick(files: Sequence[Path], root: Path) -> tuple[tuple[Path, ...], str | None]:
    """The files of one launch to read (see the module doc), or why none can be chosen."""
    for f in files:
        if f.name == "steps.json":
            return (f,), None
    chosen = [f for f in files if f.name.startswith("log-")]
    if not chosen:
        chosen = [f for f in files if f.name == "nemo_log_globalrank-0_localrank-0.txt"]
    if not chosen:
        chosen = [f for f in files if _has_steps(f)]
        if len(chosen) > 1:
            names = ", ".join(f.name for f in chosen)
            where = Path(os.path.commonpath([f.parent for f in chosen])).relative_to(root)
            return (), f"ambiguous: several logs with step lines in {where} ({names})"
        if not chosen:
            chosen = list(files)  # none has steps: load() reports it as a run without steps
    return tuple(chosen), None


def _has_steps(path: Path) -> bool:
    try:
        logs.parse_files([path])
    except PerfgateError:
        return False
    return True


def _diagnose(files: Sequence[Path], series: logs.StepSeries | None, parse_error: str | None):
    """Hard evidence (CUDA OOM, NCCL, NaN, container) in the logs, else why nothing was judged."""
    texts = [(str(f), diagnose.read_log(f)) for f in reversed(files)]  # the last segment first
    d = diagnose.diagnose(None, None, texts, series)
    if d is None or d.cause != "TOO_FEW_STEPS" or series is not None:
        return d
    exc = diagnose.find_exception(texts)
    if exc is not None:
        return Diagnosis("WORKLOAD_EXCEPTION", f"the workload raised: {exc[0]}", exc[0], d.log_tail)
    return Diagnosis("TOO_FEW_STEPS", parse_error or d.message, None, d.log_tail)


def load(row: Row, files: Sequence[Path]) -> RunResult:
    """A RunResult from replayed files; a run without steps or a failed one carries a Diagnosis."""
    paths = tuple(str(f) for f in files)
    if len(files) == 1 and files[0].name == "steps.json":
        try:
            rec = stepfile.read(files[0])
        except PerfgateError as e:
            diag = Diagnosis("UNKNOWN", str(e))
            return RunResult(row.id, None, "REPLAY", log_paths=paths, diagnosis=diag)
        rank0 = files[0].parent / "rank-0.log"  # perfgate's own run folder keeps it beside
        run = RunRecord(
            image=rec.image,
            label="baseline",
            series=rec.to_series(str(files[0])),
            versions=dict(rec.versions),
            log_path=paths[0],
            mock_data=rec.mock_data,
            slowest=slowest_of(rank0, list(rec.nodes), rec.world_size),
        )
        diag = None
        if rec.status == "failed":
            diag = Diagnosis("WORKLOAD_EXCEPTION", rec.error or "the workload reported failure")
        return RunResult(
            row.id,
            None,
            "REPLAY",
            runs=(run,),
            nodes=tuple(rec.nodes),
            log_paths=paths,
            diagnosis=diag,
        )
    job_ids = {m.group(1) for f in files if (m := _JOB_ID.search(f.stem))}
    job_id = job_ids.pop() if len(job_ids) == 1 else None
    try:
        series = logs.parse_files(list(files))
    except PerfgateError as e:
        diag = _diagnose(files, None, str(e))
        return RunResult(row.id, job_id, "REPLAY", log_paths=paths, diagnosis=diag)
    # A log may hold steps and still end in a CUDA OOM or an NCCL timeout: that run failed.
    diag = _diagnose(files, series, None)
    run = RunRecord(
        image=None,
        label="baseline",
        series=series,
        log_path=paths[-1],
        job_id=job_id,
        slowest=slowest_of(files[-1], [], None),
        # a log that printed Megatron's timers: its phases (and the versions its lines state)
        versions=versions_of_files(files),
        phases=phases_of_run(files),
    )
    return RunResult(row.id, job_id, "REPLAY", runs=(run,), log_paths=paths, diagnosis=diag)


def load_launches(row: Row, launches: Sequence[Sequence[Path]]) -> RunResult:
    """One RunResult of a row's K launches: K runs, as a live `--repeat K` job returns them.

    The first launch that failed (or has no steps) makes the result fail, named by its place.
    """
    results = [load(row, files) for files in launches]
    if len(results) == 1:
        return results[0]
    diag = None
    for i, r in enumerate(results, start=1):
        if r.diagnosis is not None:
            d = r.diagnosis
            where = f"launch {i} of {len(results)} ({Path(r.log_paths[0]).parent})"
            diag = Diagnosis(d.cause, f"{where}: {d.message}", d.evidence, d.log_tail)
            break
    job_ids = {r.job_id for r in results if r.job_id}
    nodes = dict.fromkeys(n for r in results for n in r.nodes)
    return RunResult(
        row.id,
        job_ids.pop() if len(job_ids) == 1 else None,
        "REPLAY",
        runs=tuple(run for r in results for run in r.runs),
        nodes=tuple(nodes),
        log_paths=tuple(p for r in results for p in r.log_paths),
        diagnosis=diag,
    )


def repeat_mismatch(row: Row, m: Match, repeat: int | None, root: Path | None) -> str | None:
    """--repeat K with --replay: why this row's launches are not K, else None.

    With --replay, --repeat K asks for K runs of each row from disk: a row with a matched run
    must have exactly K launches (a row without a match is skipped as usual).
    """
    if repeat is None or m.skip_reason or len(m.launches) == repeat:
        return None
    k = len(m.launches)
    return (
        f"--repeat {repeat} with --replay: row {row.id} has {k} launch{'es' if k != 1 else ''} "
        f"under {root}; put {repeat} launches in launch-1/ .. launch-{repeat}/ of its folder "
        "(docs/suite.md, replay), or leave out --repeat to judge the launches there are"
    )
