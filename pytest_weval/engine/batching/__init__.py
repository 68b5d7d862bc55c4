"""Requests through the providers' batch APIs, at half the price (docs/batch.md).

Under ``--weval-batch=wait|submit`` a request to a provider with a batch API is not sent: it is
written to the store as a line (``store/batches.py``) and waited for. One process at a time (the
holder of a claim on ``SUBMITTER`` in the claims store) submits and collects for every process
and machine sharing the store:

- **Rounds.** Queued lines go out once no line has joined the queue for ``batch_round_s`` (the
  pipelines that could ask have asked: every candidate answer first, then the judges of the
  answers that came back, then later turns), as one batch per provider account, cut at the
  provider's line and byte limits and at what the budget has room for.
- **Collecting.** Each open batch's status is asked every ``--weval-batch-poll`` seconds (and
  once at the start of each process). An ended batch's replies are parsed by the live adapter
  and stored in the cache under the live request's key; lines that expired or met a passing
  fault are queued again, lines that failed for good keep the provider's message.
- **Waiting.** Every process looks up the lines it waits for: a line gone from the store has its
  reply in the cache; a failed one is its request's error. Under ``submit`` a line inside a
  batch that has not ended is ``BatchPending`` (its item is skipped), once the batch's status
  was asked during this run.

A reply is counted and priced (at the batch price) where it is collected.
"""

from pytest_weval.engine.batching.admin import BatchRow, cancel_batches, list_batches
from pytest_weval.engine.batching.batcher import SUBMITTER, Batcher

__all__ = ["SUBMITTER", "BatchRow", "Batcher", "cancel_batches", "list_batches"]
