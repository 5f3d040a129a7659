"""Run a LaunchSession in its own process, as pytest would, so tests can kill it (test code).

    python session_driver.py CONFIG.json

CONFIG: {"rows": [Row fields...], "options": {LaunchOptions fields}, "results_dir": str,
"resume": bool}. Prints `SUBMITTED row job_id` per submitted job, then `RESULT row state
cause` as results arrive; installs the session's SIGINT/SIGTERM handlers.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from perfgate.catalog import row_from_dict
from perfgate.launch import LaunchOptions, LaunchSession


def main() -> int:
    cfg = json.loads(Path(sys.argv[1]).read_text())
    rows = [row_from_dict(r, str(sys.argv[1]), rules=False) for r in cfg["rows"]]
    session = LaunchSession(
        LaunchOptions(**cfg["options"]), cfg["results_dir"], resume=cfg.get("resume", False)
    )
    session.install_signal_handlers()
    session.submit_all(rows)
    for rid, e in session.entries.items():
        if e.job_id:
            print(f"SUBMITTED {rid} {e.job_id}", flush=True)
    for rid in session.order:
        r = session.result(rid)
        cause = r.diagnosis.cause if r.diagnosis else "-"
        print(f"RESULT {rid} {r.state} {cause}", flush=True)
    session.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
