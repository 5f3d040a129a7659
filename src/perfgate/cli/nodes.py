"""`perfgate nodes`: the nodes whose runs were slow more often than chance, as an
--exclude= list."""

from __future__ import annotations

import argparse

from perfgate.cli.common import emit, history_options, open_history, say_left_out
from perfgate.errors import ConfigError
from perfgate.history import nodes


def add(sub: argparse._SubParsersAction) -> None:
    """Register `perfgate nodes`."""
    p = sub.add_parser(
        "nodes",
        help="nodes whose runs were slow more often than chance, as an --exclude= list",
        description="Rank every run among its row's runs in the history and test, per node, "
        "whether the runs it took part in were slower than chance (one-sided rank test, "
        "Benjamini-Hochberg over nodes at --fdr); print the flagged nodes as an sbatch "
        "--exclude= list to paste (--slurm-param exclude=...).",
    )
    history_options(p)
    p.add_argument("--fdr", type=float, default=0.05, help="false discovery rate (default 0.05)")
    p.add_argument(
        "--min-runs", type=int, default=nodes.MIN_RUNS, help="runs a node needs to be tested"
    )
    p.add_argument("--cluster", help="only runs of this Slurm cluster")
    p.add_argument("--all", action="store_true", help="list every tested node, not the flagged")
    p.add_argument("--json", action="store_true", help="print the findings as JSON")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """`perfgate nodes`: the nodes tested, the slow ones, and their --exclude= list."""
    if not 0 < args.fdr < 1:
        raise ConfigError(f"--fdr {args.fdr}: expected a false discovery rate in (0, 1)")
    if args.min_runs < 2:
        raise ConfigError(f"--min-runs {args.min_runs}: a node needs at least 2 runs to test")
    store = open_history(args)
    totals = store.node_totals(args.cluster)
    say_left_out(store)  # runs and names the door left out (node names outside the grammar)
    found = nodes.findings(totals, q=args.fdr, min_runs=args.min_runs)
    exclude = nodes.exclude_list(found)
    if args.json:
        emit(
            {
                "nodes_seen": len(totals),
                "fdr": args.fdr,
                "nodes": [f.__dict__ for f in found],
                "exclude": exclude,
            },
            True,
        )
        return 0
    if not totals:  # say why there is nothing to test, not "0 nodes"
        stored = sum(len(store.runs(r)) for r in store.row_ids())
        where = f" on cluster {args.cluster}" if args.cluster else ""
        print(
            f"no node to test: {stored} run(s) in the history, none with its nodes recorded"
            f"{where} (runs record their nodes from Slurm; replays and local runs may not)"
            if stored
            else "no node to test: the history has no runs yet"
        )
        return 0
    shown = found if args.all else [f for f in found if f.flagged]
    print(
        f"{len(totals)} nodes in the history's runs; {len(found)} nodes with >= "
        f"{args.min_runs} runs tested; {sum(f.flagged for f in found)} slower than chance "
        f"(FDR {args.fdr:g})"
    )
    for f in shown:
        mark = "SLOW" if f.flagged else "ok"
        print(
            f"  {f.node}: {mark}, {f.runs} runs, {f.slow_runs} in their row's slowest fifth, "
            f"mean rank {f.mean_percentile:.2f} (0.5 expected), p {f.p_value:.2g}"
        )
    if exclude:
        print(exclude)
    return 0
