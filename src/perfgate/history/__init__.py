"""A row's history: every session's runs in an append-only store, its trend and noise.

store: the interface every reader and writer uses (Session, Run, the HistoryStore protocol);
sqlite / postgres: its two implementations (one file; one server a team shares), sql: the
queries they share, decode: the one door their rows come through, stores: which one a
--history value names; spool: rows kept in the session folder while the store is away;
transfer: export/import between stores; trend: a row's points -> its noise (within-segment
residuals), change points, a step the baseline missed (SHIFT / REGRESSION in mode
"history"); nodes: the nodes whose runs are slow more often than chance.
"""
