"""The stages one request passes through (docs/engine.md, 'The path of one request').

``Engine`` (``engine/engine.py``) composes them: ``flights`` (one task per distinct request) ->
``caching`` (cache read, the run memo) -> ``store_health`` (nothing is sent while the store
cannot keep replies) -> ``claiming`` (the cross-process claim, when coordinating) -> ``sending``
(send and retry: the transport, under ``pacing``'s slots and pacers and ``budgeting``'s
reservation) -> ``caching`` (the cache write). The batcher (``engine/batching/``) replaces
claiming and sending for the requests it takes. ``usage``, ``notices`` and ``stopping`` are what
the stages share: the run's counts, the lines for the person watching, and whether new requests
may start.
"""
