"""The plan: before paying, the distinct requests a run would send, how many the cache already
holds, their estimated input tokens and an estimated cost range (docs/engine.md, 'The plan').

Each item goes through the pipeline's own steps (generation, key-point extraction, judging) on
a ``PlanClient`` that answers from the cache and sends nothing, so requests are built and
de-duplicated exactly as the run would build them, and counted into per-model totals as they
are met (nothing is kept per request but what de-duplication needs). A judge call that needs an answer the cache
does not hold yet cannot be built; it is counted under a stand-in key made of what its request
would be made of (the answer's own requests, the judge, the criterion), so items that will get
the same answer and ask the same judge the same question are counted once, as the run sends them.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Sequence
from typing import Any

from pytest_weval import judges as judging
from pytest_weval.blueprint.model import EvalPoint
from pytest_weval.engine import Engine, ModelCallError, ModelReply, ModelRequest
from pytest_weval.engine.prices import Price, PriceBook, batch_share, estimate_input_tokens
from pytest_weval.run import sampling
from pytest_weval.run.pipeline import ItemWork, Pipeline, PipelineSettings, judged_subject, mistaken_points
from pytest_weval.run.preflight import Preflight, needs_judges

# Output tokens assumed for a request whose reply is not known: low and high ends of the range.
OUTPUT_LOW = 50
OUTPUT_HIGH_DEFAULT = 1000
_BATCH = 256  # items planned at once on the engine's loop


class NotInCache(ModelCallError):
    """The plan foresees this request but the cache does not hold its reply."""

    kind = "not_cached"


_UNSEEN = object()


class PlanClient:
    """A ``ModelClient`` that sends nothing: it counts each distinct request once, into per-model
    totals, and answers it from the cache when it can. It keeps a reply per real request key (the
    answers judges are then asked about) and only a number per stand-in (``foresee``), so a
    plan of millions of requests holds no object per request."""

    def __init__(self, engine: Engine, prices: PriceBook):
        self.engine = engine
        self.prices = prices
        self.by_model: dict[str, ModelPlan] = {}
        self._replies: dict[Any, Any] = {}  # key -> the cached reply, None, or a Future while read
        self._foreseen: set[int] = set()
        # --weval-repeat=auto: requests of samples an item takes only while its samples disagree
        self.later_samples = 0
        self.first_samples: int | None = None  # samples every item takes, under auto
        self.max_samples = 1

    async def complete(self, request: ModelRequest) -> ModelReply:
        key = self._key(request)
        known = self._replies.get(key, _UNSEEN)
        if isinstance(known, asyncio.Future):  # another item is reading it from the cache
            reply = await known
        elif known is _UNSEEN:
            reading: asyncio.Future[ModelReply | None] = asyncio.get_running_loop().create_future()
            self._replies[key] = reading
            reply = await self.engine.cached_reply(request)
            self._replies[key] = reply
            reading.set_result(reply)
            max_output = self.engine.adapter(request.model).max_tokens(request) or OUTPUT_HIGH_DEFAULT
            self._count(
                request.model.id, request.purpose, estimate_input_tokens(request), max_output, reply is not None
            )
            if self.first_samples is not None and request.sample % self.max_samples >= self.first_samples:
                self.later_samples += 1
        else:
            reply = known
        if reply is None:
            raise NotInCache(f"{request.model.id}: not in the cache", model_id=request.model.id)
        return reply

    def _key(self, request: ModelRequest) -> Any:
        """The request's cache key; with no cache to look in, what the key is made of instead
        (the adapter's body need not be built: the request cannot be in any cache)."""
        if self.engine.cache.store is not None:
            return self.engine.key_for(request)
        return (
            request.model.id,
            repr(request.model.custom) if request.model.custom is not None else None,
            request.messages,
            request.temperature,
            request.max_tokens,
            request.sample,
        )

    def foresee(
        self, stand_in: tuple[Any, ...], model_id: str, purpose: str, input_tokens: float, max_output: int
    ) -> None:
        """A request that will be built from an answer the cache does not hold yet; ``stand_in``
        is what it will be made of (kept as its hash: 2^-64 odds that two differ and meet)."""
        marker = hash(stand_in)
        if marker not in self._foreseen:
            self._foreseen.add(marker)
            self._count(model_id, purpose, input_tokens, max_output, cached=False)

    def _count(self, model_id: str, purpose: str, input_tokens: float, max_output: int, cached: bool) -> None:
        row = self.by_model.get(model_id)
        if row is None:
            row = self.by_model[model_id] = ModelPlan(price=self.prices.price(model_id))
        row.add(purpose, input_tokens, max_output, cached)


@dataclasses.dataclass
class ModelPlan:
    price: Price | None = None  # None: the model has no known price (its cost is unknown)
    requests: int = 0
    cached: int = 0
    by_purpose: dict[str, int] = dataclasses.field(default_factory=dict)
    input_tokens: float = 0.0  # of the requests still to send
    cost_low: float | None = 0.0
    cost_high: float | None = 0.0

    def add(self, purpose: str, input_tokens: float, max_output: int, cached: bool) -> None:
        self.requests += 1
        self.by_purpose[purpose] = self.by_purpose.get(purpose, 0) + 1
        if cached:
            self.cached += 1
            return
        self.input_tokens += input_tokens
        if self.price is None or self.cost_low is None:
            self.cost_low = self.cost_high = None
            return
        self.cost_low += self.price.cost(input_tokens, min(OUTPUT_LOW, max_output))
        self.cost_high = (self.cost_high or 0) + self.price.cost(input_tokens, max_output)

    def to_dict(self) -> dict[str, Any]:
        return {
            "total": self.requests,
            "cached": self.cached,
            "to_send": self.requests - self.cached,
            "by_purpose": dict(sorted(self.by_purpose.items())),
            "estimated_input_tokens": round(self.input_tokens),
            "cost_usd": None
            if self.cost_low is None
            else {"low": round(self.cost_low, 6), "high": round(self.cost_high or 0, 6)},
        }


@dataclasses.dataclass
class Plan:
    by_model: dict[str, ModelPlan]
    missing_keys: list[dict[str, Any]]
    # model ids the run's pre-flight refuses (the run stops there): nothing of theirs is counted
    unusable_models: list[str] = dataclasses.field(default_factory=list)
    auto: AutoPlan | None = None  # --weval-repeat=auto: the rows count every item at its most samples
    batch: bool = False  # --weval-batch: the cost through the batch APIs beside the live cost

    @property
    def total(self) -> int:
        return sum(m.requests for m in self.by_model.values())

    @property
    def cached(self) -> int:
        return sum(m.cached for m in self.by_model.values())

    def to_dict(self) -> dict[str, Any]:
        priced = [m for m in self.by_model.values() if m.cost_low is not None]
        unpriced = sorted(model for model, m in self.by_model.items() if m.cost_low is None and m.requests > m.cached)
        by_model = {model: m.to_dict() for model, m in sorted(self.by_model.items())}
        batch_cost: dict[str, Any] = {}
        if self.batch:
            for model, row in by_model.items():
                if row["cost_usd"] is not None:
                    row["cost_usd"]["batch"] = _batch_range(model, row["cost_usd"])
            batch_cost = {
                "batch": {
                    end: round(sum(r["cost_usd"]["batch"][end] for r in by_model.values() if r["cost_usd"]), 6)
                    for end in ("low", "high")
                }
            }
        return {
            "requests": {
                "total": self.total,
                "cached": self.cached,
                "by_model": by_model,
            },
            "missing_keys": self.missing_keys,
            "unusable_models": self.unusable_models,
            **({"repeat_auto": self.auto.to_dict(self.total)} if self.auto is not None else {}),
            "cost_usd": {
                "low": round(sum(m.cost_low or 0 for m in priced), 6),
                "high": round(sum(m.cost_high or 0 for m in priced), 6),
                "unpriced_models": unpriced,
                **batch_cost,
            },
        }

    def lines(self) -> list[str]:
        totals = self.to_dict()
        rows = [["model", "requests", "cached", "to send", "input tokens", "estimated cost"]]
        if self.batch:
            rows[0].append("through batches")
        for model, m in sorted(self.by_model.items()):
            cost = "no price" if m.cost_low is None else f"${m.cost_low:,.4f}-${m.cost_high or 0:,.4f}"
            row = [
                model,
                f"{m.requests:,}",
                f"{m.cached:,}",
                f"{m.requests - m.cached:,}",
                f"{m.input_tokens:,.0f}",
                cost,
            ]
            if self.batch:
                batch = totals["requests"]["by_model"][model]["cost_usd"]
                row.append("no price" if batch is None else _money(batch["batch"]))
            rows.append(row)
        cost = totals["cost_usd"]
        unpriced = " + unpriced" if cost["unpriced_models"] else ""
        total = [
            "total",
            f"{self.total:,}",
            f"{self.cached:,}",
            f"{self.total - self.cached:,}",
            "",
            _money(cost) + unpriced,
        ]
        if self.batch:
            total.append(_money(cost["batch"]) + unpriced)
        rows.append(total)
        widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
        out = [
            "  ".join(cell.ljust(w) if i == 0 else cell.rjust(w) for i, (cell, w) in enumerate(zip(row, widths)))
            for row in rows
        ]
        for missing in self.missing_keys:
            needed = [
                f"{role} {', '.join(ids)}"
                for role, ids in (("models", missing["models"]), ("judges", missing["judges"]))
                if ids
            ]
            out.append(f"missing key: {missing['variable']} (needed by {'; '.join(needed)})")
        for why in self.unusable_models:
            out.append(f"cannot run: {why} (the run stops at its pre-flight; nothing of it is counted above)")
        if self.auto is not None:
            out.append(self.auto.line(self.total))
        return out


@dataclasses.dataclass(frozen=True)
class AutoPlan:
    """--weval-repeat=auto (docs/sampling.md): the plan's rows count each item at its most
    samples (what the run may send, and what the cost range's high end is), and ``later``
    of those requests belong to samples an item takes only while its samples disagree. The
    expected count takes the rule's expected samples for an item nothing is known of (a pass
    probability anywhere in 0..1, ``sampling.expected_samples``) in place of the most."""

    first: int
    most: int
    later: int

    @property
    def per_item(self) -> float:
        return sampling.expected_samples(self.most)

    def expected(self, total: int) -> int:
        if self.most <= self.first:
            return total
        return round(total - self.later + self.later * (self.per_item - self.first) / (self.most - self.first))

    def to_dict(self, total: int) -> dict[str, Any]:
        return {
            "first_samples": self.first,
            "max_samples": self.most,
            "expected_samples_per_item": round(self.per_item, 2),
            "requests_expected": self.expected(total),
            "requests_max": total,
        }

    def line(self, total: int) -> str:
        return (
            f"--weval-repeat=auto: at most {total:,} requests (the rows above: every item at "
            f"{self.most} samples); expected about {self.expected(total):,} ({self.first} samples per item, "
            f"more while they disagree: {self.per_item:.1f} on average for an item not yet seen; docs/sampling.md)"
        )


def _money(cost: dict[str, Any]) -> str:
    return f"${cost['low']:,.4f}-${cost['high']:,.4f}"


def _batch_range(model_id: str, cost: dict[str, Any]) -> dict[str, float]:
    """The cost range through the provider's batch API (its share of the live price; a provider
    without one goes live, at the live price)."""
    share = batch_share(model_id)
    return {end: round(cost[end] * share, 6) for end in ("low", "high")}


def make_plan(
    engine: Engine,
    settings: PipelineSettings,
    works: Sequence[ItemWork],
    *,
    prices: PriceBook,
    checked: Preflight | None = None,
    batch: bool = False,
) -> Plan:
    """The plan of ``works``: runs on ``engine``'s loop, reading its cache, sending nothing;
    ``batch``: the run goes through the batch APIs (their cost beside the live one)."""
    client = PlanClient(engine, prices)
    pipeline = Pipeline(client, settings)
    if settings.repeat_auto:
        client.first_samples, client.max_samples = sampling.first_samples(settings.repeat), settings.repeat
    if settings.repeat > 1:  # --weval-repeat: each item is asked N times, each sample its own request
        works = [dataclasses.replace(work, sample=k) for work in works for k in range(settings.repeat)]

    async def plan_all() -> None:
        for start in range(0, len(works), _BATCH):
            await asyncio.gather(*(_plan_item(pipeline, client, work) for work in works[start : start + _BATCH]))

    engine.run_coroutine(plan_all()).result()
    missing = [
        {"variable": m.variable, "models": sorted(m.models), "judges": sorted(m.judges), "items": m.items}
        for m in sorted((checked.missing if checked else {}).values(), key=lambda m: m.variable)
    ]
    auto = None
    if client.first_samples is not None:
        auto = AutoPlan(client.first_samples, client.max_samples, client.later_samples)
    return Plan(
        client.by_model,
        missing,
        sorted((checked.bad_models if checked else {}).values()),
        auto,
        batch=batch,
    )


async def _plan_item(pipeline: Pipeline, client: PlanClient, work: ItemWork) -> None:
    prompt = work.prompt
    if work.blocked is not None or prompt.validation_error or mistaken_points(prompt):
        return  # the run sends nothing for these items
    if not prompt.points and not prompt.ideal:
        return  # nothing to score: nothing is sent
    conversation = await pipeline.generate(work, {})
    if conversation.error is not None:
        # The first generation the cache lacks stopped the walk; the turns after it are asked
        # of the model too, each once the answer before it is known.
        identity = _answer_identity(pipeline, work)
        for turn in range(len(conversation.generated_texts) + 1, _generations(prompt)):
            tokens = sum(len(m.content or "") for m in prompt.messages) / 4
            client.foresee((identity, "turn", turn), work.model.id, "generate", tokens, OUTPUT_HIGH_DEFAULT)
    if not needs_judges(prompt):
        return
    try:
        panel = judging.select_judges(
            list(pipeline.settings.judges) if pipeline.settings.judges else None, work.blueprint.evaluation_config
        )
    except judging.JudgeConfigError:
        return
    # The backup judge is asked only when a primary fails; here every primary "fails" (its
    # reply is not in the cache), so leave it out as the run would.
    panel = dataclasses.replace(panel, uses_defaults=False)
    points = list(prompt.points)
    extracted = True
    if not points and prompt.ideal:
        found = await judging.extract_key_points(
            prompt_text=judging.prompt_context_text(prompt.messages),
            ideal=prompt.ideal,
            panel=panel,
            ask=pipeline.asker(0, {}, purpose="extract"),
        )
        # Key points not extracted yet: how many there will be is known only then; counted as
        # one criterion (the ideal answer itself) for each judge.
        extracted = found is not None
        points = found or [EvalPoint(text=prompt.ideal, display_text=prompt.ideal)]
    text_points = [p for p in points if not (p.is_function or p.authoring_error)]
    if not text_points:
        return
    if conversation.error is None and extracted:
        text, history = judged_subject(conversation)
        await judging.judge_points(
            text_points,
            subject_text=text,
            history=history,
            generated_indices=conversation.generated_indices,
            description=work.blueprint.description,
            panel=panel,
            ask=pipeline.asker(0, {}, purpose="judge"),
        )
        return
    # The answer (or the key points) is not in the cache: the judge calls it will need, under
    # stand-in keys.
    answer = _answer_identity(pipeline, work) if conversation.error is not None else conversation.final_text
    prompt_tokens = sum(len(m.content or "") for m in prompt.messages) / 4
    description = work.blueprint.description
    for point in text_points:
        for judge in panel.judges:
            client.foresee(
                (answer, judge.model, judge.approach, panel.scale, point.text, description),
                judge.model,
                "judge",
                input_tokens=400 + prompt_tokens + len(point.text or "") / 4,  # the judge prompt, the answer unknown
                max_output=judging.JUDGE_MAX_TOKENS,
            )


def _generations(prompt: Any) -> int:
    """How many answers a prompt asks of the model: one per ``assistant: null`` turn, and one
    more when its last message is a user's (docs/format.md, 'Multi-turn generation')."""
    nulls = sum(1 for m in prompt.messages if m.role == "assistant" and m.content is None)
    trailing = bool(prompt.messages) and prompt.messages[-1].role == "user"
    return max(1, nulls + int(trailing))


def _answer_identity(pipeline: Pipeline, work: ItemWork) -> tuple[Any, ...]:
    """What the answer's requests are made of: items equal here get the same answer."""
    return (
        work.model.id,
        repr(pipeline.model_spec(work.model.id).custom),
        tuple((m.role, m.content) for m in work.prompt.messages),
        work.system_prompt,
        work.sent_temperature,
    )
