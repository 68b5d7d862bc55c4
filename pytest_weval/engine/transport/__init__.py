"""The wire: one provider request as HTTP, and what surrounds a single exchange (docs/engine.md).

``providers/`` turns a ``ModelRequest`` into a provider's HTTP call and its reply back;
``http.py`` is the client; ``limits.py`` the concurrency caps; ``ratelimit.py`` the pacing that
follows a provider's rate-limit headers and refusals; ``retry.py`` which failures are retried
and the circuit breaker; ``keys.py`` the providers' key variables and base URLs;
``external.py`` the ``$call`` services. The engine (``engine/engine.py``) drives them.
"""
