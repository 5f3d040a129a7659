"""SQL views over the PostgreSQL history, made with its schema, so a Grafana panel needs no code.

    perfgate_runs       every run with its session (time = the session's start, as
                        timestamptz), the baseline and tolerance it was judged against, and
                        in_trend: whether the row's trend counts it (as perfgate's own reader)
    perfgate_trend      the runs of perfgate_runs with in_trend, and their delta vs baseline
    perfgate_baselines  per row, the latest baseline a session judged it against, with the
                        tolerance band's edges in seconds
    perfgate_sessions   every session with its end and exclusion

docs/history.md shows panels built on them. The views only read; perfgate never reads them.
"""

from __future__ import annotations

from typing import Any

VIEWS = {
    "perfgate_runs": """
SELECT r.id AS run_id, r.row_id, CAST(s.started_at AS timestamptz) AS "time",
       CAST(r.recorded_at AS timestamptz) AS recorded_at, s.id AS session_id,
       s.uid AS session_uid, s.cluster, s.host, s.mode AS session_mode, s.images,
       s.perfgate_version, s.git_describe, r.mode, r.label, r.launch, r.job_id, r.attempt,
       r.step_time_s, r.rel_se, r.steady = 1 AS steady, r.n_steady, r.tokens_per_s_per_gpu,
       r.mfu, r.nodes, r.image, r.image_digest, r.versions, r.verdict, r.cause, r.delta,
       r.baseline_s, r.tolerance,
       (SELECT x.reason FROM exclusions x WHERE x.session_id = s.id ORDER BY x.id DESC
        LIMIT 1) AS excluded,
       (r.steady = 1 AND r.step_time_s > 0 AND r.cause IS NULL
        AND r.mode IN ('stored', 'repeat') AND r.verdict IS DISTINCT FROM 'UNCONFIRMED'
        AND NOT EXISTS (SELECT 1 FROM exclusions x WHERE x.session_id = s.id)) AS in_trend
FROM runs r JOIN sessions s ON s.id = r.session_id""",
    "perfgate_trend": """
SELECT "time", row_id, session_id, cluster, job_id, image, versions, step_time_s,
       baseline_s, step_time_s / baseline_s - 1 AS delta_vs_baseline, tolerance, verdict,
       nodes
FROM perfgate_runs WHERE in_trend""",
    "perfgate_baselines": """
SELECT DISTINCT ON (row_id) row_id, baseline_s, tolerance,
       baseline_s * (1 - COALESCE(tolerance, 0)) AS band_low_s,
       baseline_s * (1 + COALESCE(tolerance, 0)) AS band_high_s,
       "time" AS judged_at, session_id
FROM perfgate_runs WHERE baseline_s IS NOT NULL
ORDER BY row_id, "time" DESC, run_id DESC""",
    "perfgate_sessions": """
SELECT s.id AS session_id, s.uid, CAST(s.started_at AS timestamptz) AS "time",
       (SELECT CAST(MAX(e.finished_at) AS timestamptz) FROM session_ends e
        WHERE e.session_id = s.id) AS finished_at,
       s.host, s.cluster, s.mode, s.images, s.perfgate_version, s.git_describe, s.command,
       (SELECT x.reason FROM exclusions x WHERE x.session_id = s.id ORDER BY x.id DESC
        LIMIT 1) AS excluded
FROM sessions s""",
}


def create(con: Any) -> None:
    """Create (or replace) the views, inside the caller's transaction."""
    for name, body in VIEWS.items():
        con.execute(f"CREATE OR REPLACE VIEW {name} AS {body}")
