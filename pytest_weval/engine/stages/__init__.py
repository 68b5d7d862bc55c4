"""The stages one request passes through (docs/engine.md, 'The path of one request').

``Engine`` (``engine/engine.py``) composes them: ``flights`` (one task per distinct request) ->
``caching`` (cache read, the run memo, the cache write, whether the store can keep replies) ->
``claiming`` (the cross-process claim, when coordinating) -> ``sending`` (send and retry: the
transport, under ``pacing``'s slots and pacers and ``budgeting``'s reservation). The batcher
(``engine/batching.py``) replaces sending for the requests it takes. ``usage``, ``notices`` and
``stopping`` are what the stages share: the run's counts, the lines for the person watching,
and whether new requests may start.
"""
