"""A row's history: every session's runs in an append-only sqlite store, its trend and noise.

store: the sqlite file (sessions, runs, exclusions; atomic, locked, append-only);
trend: a row's points -> its noise (within-segment residuals), change points, a step the
baseline missed (SHIFT / REGRESSION in mode "history").
"""
