"""Every setting's default, declared once: the options and ini values (``plugin/options.py``
reads its table's defaults and formats its help texts from here) and the lower layers'
settings (``EngineSettings``, ``PipelineSettings``, ``RunGates``, ``Weval``, ``ItemResult``,
the cache commands) alike. A bottom module, so that every layer may read it: the lower layers
may not import the plugin, where the options are declared (docs/options.md lists them)."""

from __future__ import annotations

THRESHOLD = 0.5  # --weval-threshold: the pass mark when neither prompt nor blueprint sets one
CACHE_MODE = "rw"  # --weval-cache
CACHE_FOLDER = ".weval_cache"  # --weval-cache-dir: found in the rootdir or above it (plugin/settings.py)
CACHE_STORE = "sqlite"  # --weval-cache-store
TIMEOUT_S = 60.0  # --weval-timeout: per attempt, whole request
MAX_ATTEMPTS = 5  # --weval-max-attempts: per request, for faults; rate-limit refusals spend none
RATE_LIMIT_WAIT_S = 600.0  # --weval-rate-limit-wait
MAX_REPLY_MB = 8.0  # --weval-max-reply-mb
STORE_RETRY_S = 30.0  # --weval-store-retry
STOP_GRACE_S = 5.0  # --weval-stop-grace
BATCH = "off"  # --weval-batch
BATCH_POLL_S = 30.0  # --weval-batch-poll
SERVICE_TIER = "auto"  # --weval-service-tier: none sent, the provider's own default (the reference's bodies)
PROMPT_CACHE = "auto"  # --weval-prompt-cache: mark the judge calls' shared prefix cacheable where it pays
# A flex request's timeout per attempt: OpenAI's flex guide raises its SDK's to 15 minutes.
FLEX_TIMEOUT_S = 900.0
MISSING_KEYS = "stop"  # --weval-missing-keys
CHECK_MODELS = "on"  # --weval-check-models
BORDERLINE = "pass"  # --weval-borderline
ALPHA = 0.05  # --weval-alpha
MAX_DROP = 0.0  # --weval-max-drop
REPEAT = 1  # --weval-repeat
# --weval-max-repeat: odd, so two-valued samples never tie (docs/sampling.md)
MAX_REPEAT = 11
MAX_FILE_MB = 20.0  # ini weval_max_file_mb: the largest blueprint or eval file read
EVAL_METHODS = ("llm-coverage",)  # --weval-eval-methods: embeddings need a key the user may not have
