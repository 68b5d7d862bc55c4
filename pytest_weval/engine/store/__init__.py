"""Where replies and the run's shared state live: the response cache and the claims, signals
and spend ledger that let several processes (xdist workers, machines) share one run
(docs/engine.md, 'Cache' and 'Claims across machines').

One backend per ``cache_store`` setting: SQLite (``sqlite.py``, ``claims_sqlite.py``), files
(``files.py``, with its claims in a SQLite file beside) and PostgreSQL (``postgres.py``, all in
one database). ``backends.py`` chooses among them; ``cache.py`` is the cache's policy over a
store; ``claims_store.py`` the interface the claims policy (``engine/claims.py``) uses.
"""
