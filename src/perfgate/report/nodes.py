"""What the sign-off says about nodes: the ones the session's first runs were kept off (the
history's slow nodes, within the cap) and the ones that slowed several rows tonight."""

from __future__ import annotations

from typing import Any

SHOWN = 8  # nodes named in one line (results.json has all of them)


def _names(nodes: list[str]) -> str:
    return ", ".join(nodes[:SHOWN]) + (
        f" and {len(nodes) - SHOWN} more" if len(nodes) > SHOWN else ""
    )


def nodes_text(session: dict[str, Any]) -> str | None:
    """One line for the sign-off and the terminal (None: nothing to say)."""
    parts = []
    avoided = session.get("avoided_nodes") or {}
    if avoided.get("nodes"):
        parts.append(
            f"first runs kept off {_names(list(avoided['nodes']))} (--exclude): {avoided['why']}"
        )
    elif avoided.get("why"):
        parts.append(str(avoided["why"]))
    tonight = session.get("slow_nodes_tonight") or []
    if tonight:
        found = [
            f"{n['node']} ({len(n['slow_rows'])} rows slow: {_names(list(n['slow_rows']))}; "
            f"p {n['p_value']:.1g})"
            for n in tonight
        ]
        parts.append(
            "slow tonight, several rows on each beyond chance: "
            + "; ".join(found)
            + f"; keep them off with --slurm-param exclude={','.join(n['node'] for n in tonight)}"
        )
    return "; ".join(parts) or None
