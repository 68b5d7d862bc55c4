"""What the claims store holds and how it is asked (``claims.py`` says the policy): the
records of a run's outcomes and spend, and ``ClaimsStore``, the interface SQLite
(``claims_sqlite.py``) and PostgreSQL (``postgres.py``) implement."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, Protocol

# The run's spend under --weval-budget, one row per process (owner) of the run (SpendLedger).
SPEND_SCHEMA = """
CREATE TABLE IF NOT EXISTS run_spend (
    run_id TEXT NOT NULL,
    owner TEXT NOT NULL,
    host TEXT NOT NULL,
    pid INTEGER NOT NULL,
    spent REAL NOT NULL DEFAULT 0,
    reserved REAL NOT NULL DEFAULT 0,
    in_flight INTEGER NOT NULL DEFAULT 0,
    updated REAL NOT NULL,
    PRIMARY KEY (run_id, owner)
)
"""


@dataclasses.dataclass
class Landed:
    """A request's outcome, recorded by whichever process sent it."""

    in_store: bool
    text: str | None
    input_tokens: int
    output_tokens: int
    error_kind: str | None
    error_status: int | None
    error_message: str | None


def landed_from_row(row: dict[str, Any]) -> Landed:
    return Landed(
        in_store=bool(row["in_store"]),
        text=row["text"],
        input_tokens=int(row["input_tokens"] or 0),
        output_tokens=int(row["output_tokens"] or 0),
        error_kind=row["error_kind"],
        error_status=row["error_status"],
        error_message=row["error_message"],
    )


@dataclasses.dataclass(frozen=True)
class Owner:
    """Who holds a claim: a process (``host``, ``pid``) and one engine in it (``owner``)."""

    owner: str
    host: str
    pid: int


Dead = Callable[[str, int], bool]  # (host, pid) of a holder -> known to be dead


@dataclasses.dataclass(frozen=True)
class Spend:
    """The run's spend as one reservation found it. ``reserved`` and ``in_flight`` are what the
    live processes held before it; ``admitted`` says whether it was added."""

    admitted: bool
    spent: float
    reserved: float
    in_flight: int


def admits(spent: float, reserved: float, in_flight: int, amount: float, limit: float) -> bool:
    """The budget's one admission rule (docs/engine.md, 'Prices, spend and the budget'): below
    the limit, a request goes when what is spent, reserved and its own estimate fit, or when
    nothing else is in flight (so a run always makes progress up to the limit)."""
    return spent < limit and (in_flight == 0 or spent + reserved + amount <= limit)


class ClaimsStore(Protocol):
    """Where a run's claims, outcomes, signals and spend live. Each method is one short
    transaction (or one statement); times are the store's own clock where it has one, so
    machines with skewed clocks agree on leases."""

    async def prepare(self, retention_s: float) -> None:
        """Create what is missing; delete rows older than ``retention_s`` and long-expired claims."""

    async def claim_many(
        self, run_id: str, keys: list[str], me: Owner, lease_s: float, dead: Dead
    ) -> tuple[dict[str, Landed | bool], int]:
        """Per key: the outcome already recorded for the run, True (now held by ``me``) or False
        (another live holder); and how many claims of dead holders were taken over."""

    async def finish(self, run_id: str, key: str, owner: str, landed: Landed) -> None:
        """Record the outcome and drop ``owner``'s claim, atomically."""

    async def forget(self, run_id: str, key: str) -> None: ...

    async def abandon(self, key: str, owner: str) -> None: ...

    async def look(self, run_id: str, keys: list[str], dead: Dead) -> dict[str, Landed | None]:
        """Outcomes of awaited keys, and None for those with neither an outcome nor a live claim."""

    async def renew(self, owner: str, lease_s: float) -> None: ...

    async def release(self, owner: str) -> None:
        """Drop every claim of ``owner`` and its reservations (its spend stays counted)."""

    async def signal(self, run_id: str, name: str, until: float) -> None: ...

    async def signals_since(self, run_id: str, since: float) -> list[tuple[str, float, float]]:
        """(name, until, created) of the signals recorded since ``since`` (the store's clock)."""

    async def reserve(self, run_id: str, me: Owner, amount: float, limit: float, dead: Dead) -> Spend: ...

    async def settle(self, run_id: str, owner: str, reserved: float, cost: float) -> None: ...

    async def tally(self, run_id: str, dead: Dead, *, release_dead: bool) -> tuple[float, float, int]: ...
