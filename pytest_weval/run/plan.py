"""The plan: before paying, the distinct requests a run would send, how many the cache already
holds, their estimated input tokens and an estimated cost range (docs/engine.md, 'The plan').

Each item goes through the pipeline's own steps (generation, key-point extraction, judging) on
a ``PlanClient`` that answers from the cache and sends nothing, so requests are built and
de-duplicated exactly as the run would build them, and counted into per-model totals as they
are met (nothing is kept per request but what de-duplication needs). A judge call that needs an answer the cache
does not hold yet cannot be built; it is counted under a stand-in key made of what its request
would be made of (the answer's own requests, the judge, the criterion), so items that will get
the same answer and ask the same judge the same question are counted once, as the run sends them.

With no cache to read (none there, or --weval-cache=off) no answer is known, so what an item asks
is fixed by its prompt: ``DirectCount`` works out each prompt's requests once (the first
generation, the turns after it, the judge calls under their stand-ins) and counts an item from
that without building its requests; the items it cannot foresee so (built-in models, ids no
provider takes, a prompt whose answer is written in it, canned answers) still go through the
pipeline.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import itertools
import sys
from collections.abc import Awaitable, Callable, Iterable, Iterator
from typing import Any, TypeVar

from pytest_weval import judges as judging
from pytest_weval.blueprint.model import EvalPoint, ModelSpec
from pytest_weval.engine import Engine, ModelCallError, ModelReply, ModelRequest
from pytest_weval.engine.prices import Price, PriceBook, estimate_input_tokens
from pytest_weval.run import sampling
from pytest_weval.run.embedding import embedding_model, embedding_request
from pytest_weval.run.generation import answers_asked, first_generation
from pytest_weval.run.pipeline import (
    BUILTIN_MODELS,
    ItemWork,
    Pipeline,
    PipelineSettings,
    Work,
    judged_subject,
    missing_fixture,
    sends_nothing,
)
from pytest_weval.run.preflight import Preflight, needs_judges

# Output tokens assumed for a request whose reply is not known: low and high ends of the range.
OUTPUT_LOW = 50
OUTPUT_HIGH_DEFAULT = 1000
_BATCH = 256  # items planned at once on the engine's loop


class NotInCache(ModelCallError):
    """The plan foresees this request but the cache does not hold its reply."""

    kind = "not_cached"


_UNSEEN = object()
_W = TypeVar("_W")


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
        # shared prompt prefixes met -> the tokens of the first call's, until a second call reads
        # it (a prefix no second call shares is never marked for a cache, so never written)
        self._prefixes: dict[int, float] = {}
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
            max_output = self.max_output(request)
            self._count(
                request.model.id, request.purpose, estimate_input_tokens(request), max_output, reply is not None
            )
            if reply is None and request.shared_by > 1 and request.shared_prefix_chars:
                head = tuple(request.messages[:-1])
                last = request.messages[-1].content or ""
                tokens = (sum(len(m.content or "") for m in head) + request.shared_prefix_chars) / 4
                self.shared_prefix(
                    hash((request.model.id, head, last[: request.shared_prefix_chars])), request.model.id, tokens
                )
            if self.first_samples is not None and request.sample % self.max_samples >= self.first_samples:
                self.later_samples += 1
        else:
            reply = known
        if reply is None:
            raise NotInCache(f"{request.model.id}: not in the cache", model_id=request.model.id)
        return reply

    def max_output(self, request: ModelRequest) -> int:
        """The request's output cap as its adapter reads it, else the default allowance; raises
        the engine's ``ModelCallError`` when no provider takes its model."""
        return self.engine.adapter(request.model, request.endpoint).max_tokens(request) or OUTPUT_HIGH_DEFAULT

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
        self,
        stand_in: tuple[Any, ...],
        model_id: str,
        purpose: str,
        input_tokens: float,
        max_output: int,
        answer_tokens: float = 0.0,
    ) -> bool:
        """A request that will be built from an answer the cache does not hold yet; ``stand_in``
        is what it will be made of (kept as its hash: 2^-64 odds that two differ and meet).
        ``answer_tokens``: the answer's share of its input, where the request holds the answer
        (``ModelPlan.add``). Whether it was new."""
        marker = hash(stand_in)
        if marker in self._foreseen:
            return False
        self._foreseen.add(marker)
        self.row(model_id).add(purpose, input_tokens, max_output, False, answer_tokens)
        return True

    def note_prefix(self, group: int, pending: float) -> None:
        """A shared prefix counted elsewhere (``_Share``): met from now on; ``pending``, the
        tokens of its one call so far, written to the cache when a second call comes (0: it was)."""
        self._prefixes[group] = pending

    def shared_prefix(self, group: int, model_id: str, tokens: float) -> None:
        """A request to send whose first ``tokens`` it shares with others of the run (``group``):
        once a second comes, the first writes them to the provider's prompt cache and the others
        read them from it."""
        pending = self._prefixes.get(group)
        if pending is None:
            self._prefixes[group] = tokens
            return
        row = self.row(model_id)
        if pending:
            row.prefix_writes += pending
            self._prefixes[group] = 0.0
        row.prefix_reads += tokens

    def _count(self, model_id: str, purpose: str, input_tokens: float, max_output: int, cached: bool) -> None:
        self.row(model_id).add(purpose, input_tokens, max_output, cached)

    def row(self, model_id: str) -> ModelPlan:
        row = self.by_model.get(model_id)
        if row is None:
            row = self.by_model[model_id] = ModelPlan(
                price=self.prices.price(model_id), cache_rates=self.prices.cache_rates(model_id)
            )
        return row


@dataclasses.dataclass
class ModelPlan:
    price: Price | None = None  # None: the model has no known price (its cost is unknown)
    requests: int = 0
    cached: int = 0
    by_purpose: dict[str, int] = dataclasses.field(default_factory=dict)
    input_tokens: float = 0.0  # of the requests still to send
    cost_low: float | None = 0.0
    cost_high: float | None = 0.0
    # Input tokens of the requests to send that a provider's prompt cache would serve (a prefix
    # shared with an earlier request of the run), and those the first of each writes to it.
    prefix_reads: float = 0.0
    prefix_writes: float = 0.0
    # USD per million input tokens: (uncached, cached read, cache write), where known
    cache_rates: tuple[float, float, float] | None = None

    @property
    def cache_saving(self) -> float:
        """What prompt caching takes off the estimate (a cache write's premium counted against it)."""
        if self.cache_rates is None or self.cost_low is None:
            return 0.0
        per_in, per_read, per_write = self.cache_rates
        return (self.prefix_reads * (per_in - per_read) - self.prefix_writes * (per_write - per_in)) / 1_000_000

    def add(self, purpose: str, input_tokens: float, max_output: int, cached: bool, answer_tokens: float = 0.0) -> None:
        """A request; ``answer_tokens``, of one foreseen on an answer not known yet, are the
        answer's share of its input beside ``input_tokens`` (``request_costs``)."""
        if cached:
            self.requests += 1
            self.by_purpose[purpose] = self.by_purpose.get(purpose, 0) + 1
            self.cached += 1
            return
        self.add_counts(purpose, 1, input_tokens + answer_tokens)
        self.add_costs(self.request_costs(input_tokens, max_output, answer_tokens))

    def request_costs(
        self, input_tokens: float, max_output: int, answer_tokens: float = 0.0
    ) -> tuple[float, float] | None:
        """The low and high cost of a request not cached (None: the model has no known price).
        An answer it holds (``answer_tokens``: at most the answer's output cap) is as long as
        the answer's own request is taken to write at each end: ``OUTPUT_LOW`` at the low end,
        all of it at the high end."""
        if self.price is None:
            return None
        low_input = input_tokens + min(OUTPUT_LOW, answer_tokens)
        return (
            self.price.cost(low_input, min(OUTPUT_LOW, max_output)),
            self.price.cost(input_tokens + answer_tokens, max_output),
        )

    def add_costs(self, costs: tuple[float, float] | None) -> None:
        """A request's ``request_costs``. The costs are float sums: a plan adds each request's
        where it meets the request, so that they come out the same however it is counted."""
        if costs is None or self.cost_low is None:
            self.cost_low = self.cost_high = None
            return
        self.cost_low += costs[0]
        self.cost_high = (self.cost_high or 0) + costs[1]

    def add_counts(
        self, purpose: str, requests: int, input_tokens: float, prefix_reads: float = 0.0, prefix_writes: float = 0.0
    ) -> None:
        """Requests not cached, but for their costs (``add_costs``): counts, and token
        estimates, which are whole quarters, which floats add exactly in any order and any
        grouping, so the direct count adds them once at its end."""
        self.requests += requests
        self.by_purpose[purpose] = self.by_purpose.get(purpose, 0) + requests
        self.input_tokens += input_tokens
        self.prefix_reads += prefix_reads
        self.prefix_writes += prefix_writes

    def add_share_costs(self, share: _Share) -> None:
        """The costs of ``share``'s requests, none of them cached, as ``add_costs`` one at a
        time adds them: one by one, in the order the pipeline would meet them."""
        if self.price is None or self.cost_low is None:
            self.cost_low = self.cost_high = None
            return
        low = self.cost_low
        for cost in share.lows:
            low += cost
        high = self.cost_high or 0
        for cost in share.highs:
            high += cost
        self.cost_low, self.cost_high = low, high

    def add_share_counts(self, share: _Share, times: int) -> None:
        """The rest of ``share``'s requests, met ``times`` times (``add_counts``)."""
        self.add_counts(
            share.purpose,
            share.count * times,
            share.input_tokens * times,
            share.prefix_reads * times,
            share.prefix_writes * times,
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "total": self.requests,
            "cached": self.cached,
            "to_send": self.requests - self.cached,
            "by_purpose": dict(sorted(self.by_purpose.items())),
            "estimated_input_tokens": round(self.input_tokens),
            "cost_usd": None if self.cost_low is None else self._costs(),
        }

    def _costs(self) -> dict[str, Any]:
        low, high = self.cost_low or 0.0, self.cost_high or 0.0
        costs: dict[str, Any] = {"low": round(low, 6), "high": round(high, 6)}
        saving = self.cache_saving
        if saving > 0:
            costs["prompt_cached"] = {"low": round(max(0.0, low - saving), 6), "high": round(high - saving, 6)}
        return costs


@dataclasses.dataclass(frozen=True)
class _Share:
    """What one model's row gets from one block of requests: how many, their input tokens, and
    each one's low and high cost, in order."""

    purpose: str
    count: int
    input_tokens: float
    lows: tuple[float, ...]
    highs: tuple[float, ...]
    prefix_reads: float = 0.0  # as ``ModelPlan.prefix_reads``
    prefix_writes: float = 0.0


@dataclasses.dataclass(slots=True)  # not frozen: a prompt's dozens are made at 3x the cost
class _StandIn:
    """A request counted under a stand-in key: what the key adds to the answer's identity."""

    key: int
    model_id: str
    purpose: str
    input_tokens: float
    max_output: int
    # the judge calls of one answer by one judge share all but the criterion (0: none shared)
    prefix_group: int = 0
    prefix_tokens: float = 0.0


@dataclasses.dataclass(eq=False)  # counted by identity; ``uses`` and ``rows`` change as items count it
class _Shape:
    """What every item of one prompt (under one system prompt) asks when no answer is known:
    its first generation (the rest wait for it), the turns after it, the key-point extraction
    and the judge calls. Only the tested model, the temperature and the sample vary by item."""

    system: str | None  # the system prompt
    first_key: int  # the first generation's messages, hashed
    first_tokens: float
    messages_key: int  # the prompt's messages, hashed (part of the answer's identity)
    answer_key: int  # the messages and the system prompt, hashed: the shape's part of the answer's identity
    turn_tokens: float
    turns: int  # generations after the first
    extract: bool  # key points are extracted from the ideal answer
    judged: tuple[_StandIn, ...]  # distinct judge calls, in the order the pipeline meets them
    shares: tuple[tuple[str, _Share], ...]  # ``judged`` by model row
    # ``judged``'s shared prefixes (``_StandIn.prefix_group``), each with what is left pending of
    # it (``PlanClient.note_prefix``)
    prefix_groups: tuple[tuple[int, float], ...] = ()
    # ``shares``' rows with them, once the first item counts them (``DirectCount._share_rows``)
    rows: list[tuple[ModelPlan, _Share]] = dataclasses.field(default_factory=list, repr=False)
    uses: int = 0  # items that counted ``shares`` whose counts are not in their rows yet


@dataclasses.dataclass(frozen=True)
class _Met:
    """The stand-ins counted for an answer several prompts ask judges about (by the ids of
    their _Shapes): the judge calls' keys and how many turns."""

    shapes: frozenset[int]
    keys: frozenset[int]
    turns: int


class _Model:
    """A tested model as the plan counts it, with what its items met so far (looked up here, not
    under a key made per item: the corpus's plan counts 164k items)."""

    def __init__(
        self,
        model_id: str,
        key_custom: str | None,
        identity_custom: str,
        max_output: int,
        answers: dict[Any, dict[int, _Shape | _Met]],
    ):
        self.id = model_id
        self.key_custom = key_custom
        self.identity_custom = identity_custom
        self.max_output = max_output
        # (temperature, sample) -> the keys of the first generations met: the first generation's
        # request is made of the model, its key's custom part, the temperature and the sample
        self.firsts: dict[tuple[Any, Any], set[int]] = {}
        # temperature -> answer key -> the _Shape whose stand-ins were counted for that answer,
        # or the _Met stand-ins once a second prompt with the same answer identity adds its
        # own; shared by the models of one id (the answer's identity has the id's custom part)
        self.answers = answers
        self.row: ModelPlan | None = None  # made at the first request counted, as ``PlanClient.row``
        self.first_costs: dict[float, tuple[float, float] | None] = {}  # by a first generation's tokens
        # first generations counted whose counts and tokens are not in the row yet (``settle``)
        self.firsts_met = 0
        self.first_tokens_met = 0.0


_PIPELINE = object()  # an item (or its prompt, or its model) the pipeline must plan
_NOTHING = object()  # a prompt whose items send nothing


class DirectCount:
    """The plan of items whose requests are fixed by their prompts: with no cache to read, no
    answer is known, so an item asks for its first generation, foresees the turns after it and
    the judge calls on its answer under stand-in keys (as ``_plan_item`` does) and, when its
    prompt has only an ideal answer, asks for the key points. Each prompt's requests are worked
    out once; an item is then two hashes and a few additions. The keys and their de-duplication
    are the pipeline's: the first generation by what its request is made of, the stand-ins by
    the answer's identity, so the same items meet as in ``_plan_item``."""

    def __init__(self, client: PlanClient, pipeline: Pipeline):
        self.client = client
        self.pipeline = pipeline
        self._shapes: dict[tuple[int, int], Any] = {}  # (id of the prompt, system index) -> _Shape
        self._last_shape: tuple[Any, int, Any] = (None, 0, None)  # a prompt's items come one after another
        self._models: dict[Any, Any] = {}
        self._panels: dict[int, Any] = {}  # id of the blueprint -> its panel, or None
        # First generations and answers met are kept on the _Model (``_Model.firsts``,
        # ``_Model.answers``), grouped by what varies by item and keyed within a group by their
        # shape's own hashes: no new object per item. model id -> its ``_Model.answers``
        self._answers: dict[str, dict[Any, dict[int, _Shape | _Met]]] = {}
        self._joins: dict[tuple[int, int], tuple[_Met, int, tuple[_StandIn, ...]]] = {}
        self._extracted: set[int] = set()  # ids of shapes whose extraction requests were met

    def direct(self, work: ItemWork) -> tuple[Any, _Model] | None:
        """The item's prompt and model as counted here; None when the pipeline plans it."""
        spec = work.model
        model = self._models.get(spec.id if spec.custom is None else (spec.id, repr(spec.custom)))
        if model is None:  # (looked up here first: this runs for every item)
            model = self._model(spec)
        if model is _PIPELINE:
            return None
        prompt, system_index, shape = self._last_shape
        if prompt is not work.prompt or system_index != work.system_index:
            shape = self._shapes.get((id(work.prompt), work.system_index))
            if shape is None:
                shape = self._shape(work)
            self._last_shape = (work.prompt, work.system_index, shape)
        return None if shape is _PIPELINE else (shape, model)

    async def count(self, work: ItemWork, how: tuple[Any, _Model]) -> None:
        await self.count_all([work], [how])

    async def count_all(self, works: list[ItemWork], hows: list[tuple[Any, _Model]]) -> None:
        """Counts each of ``works`` in order, as ``direct`` described it (one loop, its look-ups
        held: this runs for every item)."""
        client = self.client
        first_samples, max_samples = client.first_samples, client.max_samples
        for work, (shape, model) in zip(works, hows):
            if shape is _NOTHING or work.blocked is not None:
                continue  # the run sends nothing for these items
            temperature = work.sent_temperature
            sample = work.sample
            firsts = model.firsts.get((temperature, sample))
            if firsts is None:
                firsts = model.firsts[(temperature, sample)] = set()
            row = model.row
            if shape.first_key not in firsts:
                firsts.add(shape.first_key)
                if row is None:
                    row = model.row = client.row(model.id)
                # its costs now, in order; its count and tokens at the end (``settle``)
                if shape.first_tokens in model.first_costs:
                    costs = model.first_costs[shape.first_tokens]
                else:
                    costs = model.first_costs[shape.first_tokens] = row.request_costs(
                        shape.first_tokens, model.max_output
                    )
                row.add_costs(costs)
                model.firsts_met += 1
                model.first_tokens_met += shape.first_tokens
                if first_samples is not None and sample % max_samples >= first_samples:
                    client.later_samples += 1
            answers = model.answers.get(temperature)
            if answers is None:
                answers = model.answers[temperature] = {}
            met = answers.get(shape.answer_key)
            new_turns = shape.turns
            added: tuple[_StandIn, ...] | None = None  # None: all of the shape's
            identity = 0  # the answer's identity, where its prefixes are noted (a join)
            if met is None:
                answers[shape.answer_key] = shape
            elif met is shape:
                new_turns, added = 0, ()
            else:  # another prompt with the same answer identity: only what it adds
                identity = hash((model.id, model.identity_custom, shape.messages_key, shape.system, temperature))
                if isinstance(met, _Shape):  # the first join of this answer: its prefixes are read now
                    for group, pending in met.prefix_groups:
                        client.note_prefix(hash((identity, group)), pending)
                answers[shape.answer_key], new_turns, added = self._join(met, shape)
            if new_turns:
                if row is None:
                    row = model.row = client.row(model.id)
                for _ in range(new_turns):
                    row.add("generate", shape.turn_tokens, OUTPUT_HIGH_DEFAULT, False)
            if shape.extract and id(shape) not in self._extracted:
                self._extracted.add(id(shape))
                await self._extract(work)
            if added is None:
                # The shape's prefixes are noted only if another prompt joins this answer (above):
                # no one else reads them, and noting each item's held ~35 MB on the corpus's plan.
                shape.uses += 1  # its shares' counts are added at the end (``settle``)
                for share_row, share in shape.rows or self._share_rows(shape):
                    share_row.add_share_costs(share)
            elif added:
                for stand_in in added:
                    client.row(stand_in.model_id).add(
                        stand_in.purpose, stand_in.input_tokens, stand_in.max_output, False
                    )
                    client.shared_prefix(
                        hash((identity, stand_in.prefix_group)), stand_in.model_id, stand_in.prefix_tokens
                    )

    def settle(self) -> None:
        """Adds what the items counted left for the end (``ModelPlan.add_counts``)."""
        for model in self._models.values():
            if isinstance(model, _Model) and model.firsts_met:
                assert model.row is not None  # made by the first generation counted
                model.row.add_counts("generate", model.firsts_met, model.first_tokens_met)
                model.firsts_met, model.first_tokens_met = 0, 0.0
        for shape in self._shapes.values():
            if isinstance(shape, _Shape) and shape.uses:
                for share_row, share in shape.rows:
                    share_row.add_share_counts(share, shape.uses)
                shape.uses = 0

    def _share_rows(self, shape: _Shape) -> list[tuple[ModelPlan, _Share]]:
        """The rows of ``shape``'s shares, made (where new) in the order their first adds meet them."""
        shape.rows[:] = [(self.client.row(model_id), share) for model_id, share in shape.shares]
        return shape.rows

    def _join(self, met: _Shape | _Met, shape: _Shape) -> tuple[_Met, int, tuple[_StandIn, ...]]:
        """The stand-ins of ``met`` and ``shape`` together, how many turns and which judge
        calls ``shape`` adds to them. The same prompts meet under every model and temperature
        they share: worked out once for all of their answer identities."""
        key = (id(met), id(shape))
        joined = self._joins.get(key)
        if joined is None:
            if isinstance(met, _Shape):
                met = _Met(frozenset({id(met)}), frozenset(s.key for s in met.judged), met.turns)
            if id(shape) in met.shapes:
                joined = (met, 0, ())
            else:
                keys = set(met.keys)
                added = []
                for stand_in in shape.judged:
                    if stand_in.key not in keys:
                        keys.add(stand_in.key)
                        added.append(stand_in)
                joined = (
                    _Met(met.shapes | {id(shape)}, frozenset(keys), max(met.turns, shape.turns)),
                    max(0, shape.turns - met.turns),  # a turn's key is its number
                    tuple(added),
                )
            self._joins[key] = joined
        return joined

    async def _extract(self, work: ItemWork) -> None:
        """The key-point extraction requests, through the pipeline's own steps (none is
        answered: the plan client counts each distinct one once)."""
        prompt = work.prompt
        panel = self._panel(work)
        assert panel is not None and prompt.ideal
        await judging.extract_key_points(
            prompt_text=judging.prompt_context_text(prompt.messages),
            ideal=prompt.ideal,
            panel=panel,
            ask=self.pipeline.asker(0, {}, purpose="extract"),
        )

    def _model(self, model: ModelSpec) -> Any:
        key = model.id if model.custom is None else (model.id, repr(model.custom))
        known = self._models.get(key)
        if known is None:
            known = self._models[key] = self._describe_model(model)
        return known

    def _describe_model(self, model: ModelSpec) -> Any:
        if model.id in BUILTIN_MODELS and model.custom is None:
            return _PIPELINE  # answers without a request
        try:
            adapter = self.client.engine.adapter(model)
        except ModelCallError:
            return _PIPELINE  # no provider takes it: the pipeline says what follows
        # What the generation's max tokens come to (it asks for none of its own).
        max_output = adapter.max_tokens(ModelRequest(model=model, messages=())) or OUTPUT_HIGH_DEFAULT
        return _Model(
            model.id,
            repr(model.custom) if model.custom is not None else None,
            repr(self.pipeline.model_spec(model.id).custom),
            max_output,
            self._answers.setdefault(model.id, {}),
        )

    def _panel(self, work: ItemWork) -> judging.JudgePanel | None:
        blueprint = work.blueprint
        if id(blueprint) not in self._panels:
            settings = self.pipeline.settings
            try:
                panel = judging.select_judges(
                    list(settings.judges) if settings.judges else None, blueprint.evaluation_config
                )
            except judging.JudgeConfigError:
                panel = None
            self._panels[id(blueprint)] = panel
        return self._panels[id(blueprint)]

    def _shape(self, work: ItemWork) -> Any:
        key = (id(work.prompt), work.system_index)
        shape = self._shapes.get(key)
        if shape is None:
            shape = self._shapes[key] = self._describe_shape(work)
        return shape

    def _describe_shape(self, work: ItemWork) -> Any:
        prompt = work.prompt
        if sends_nothing(prompt):
            return _NOTHING
        first = first_generation(prompt.messages, work.system_prompt)
        if first is None:
            return _PIPELINE  # the answer is written in the prompt: judged as the run judges it
        messages = tuple((m.role, m.content) for m in prompt.messages)
        turn_tokens = sum(len(m.content or "") for m in prompt.messages) / 4
        judged: list[_StandIn] = []
        extract = False
        panel = self._panel(work) if needs_judges(prompt) else None
        if panel is not None:
            points = list(prompt.points)
            if not points and prompt.ideal:
                extract = True
                points = [EvalPoint(text=prompt.ideal, display_text=prompt.ideal)]
            description = work.blueprint.description
            # what a judge's calls on one answer share, whatever the point
            prefixes = [hash((judge.model, judge.approach, panel.scale, description)) for judge in panel.judges]
            prefix_tokens = 400 + turn_tokens  # the judge prompt, the answer unknown
            keys: set[int] = set()
            for point in points:
                if point.is_function or point.authoring_error:
                    continue
                point_tokens = prefix_tokens + len(point.text or "") / 4
                for judge, prefix_group in zip(panel.judges, prefixes):
                    key = hash((judge.model, judge.approach, panel.scale, point.text, description))
                    if key in keys:
                        continue
                    keys.add(key)
                    judged.append(
                        _StandIn(
                            key,
                            judge.model,
                            "judge",
                            point_tokens,
                            judging.JUDGE_MAX_TOKENS,
                            prefix_group,
                            prefix_tokens,
                        )
                    )
        return _Shape(
            system=work.system_prompt,
            first_key=hash(first),
            first_tokens=10 + sum(len(content or "") for _, content in first) / 4,
            messages_key=hash(messages),
            answer_key=hash((hash(messages), work.system_prompt)),
            turn_tokens=turn_tokens,
            turns=answers_asked(prompt.messages) - 1,
            extract=extract,
            judged=tuple(judged),
            shares=self._shares(judged),
            prefix_groups=_prefix_groups(judged),
        )

    def _shares(self, judged: list[_StandIn]) -> tuple[tuple[str, _Share], ...]:
        by_model: dict[str, list[_StandIn]] = {}
        for stand_in in judged:
            by_model.setdefault(stand_in.model_id, []).append(stand_in)
        shares = []
        for model_id, calls in by_model.items():
            price = self.client.prices.price(model_id)
            lows: tuple[float, ...] = ()
            highs: tuple[float, ...] = ()
            if price is not None:
                lows = tuple(price.cost(c.input_tokens, min(OUTPUT_LOW, c.max_output)) for c in calls)
                highs = tuple(price.cost(c.input_tokens, c.max_output) for c in calls)
            tokens = sum(c.input_tokens for c in calls)
            groups: dict[int, list[_StandIn]] = {}
            for call in calls:
                groups.setdefault(call.prefix_group, []).append(call)
            # the first call of a prefix shared writes it to the provider's cache, the others read it
            shared = [group for group in groups.values() if len(group) > 1]
            writes = sum(group[0].prefix_tokens for group in shared)
            reads = sum(c.prefix_tokens for group in shared for c in group[1:])
            shares.append((model_id, _Share("judge", len(calls), tokens, lows, highs, reads, writes)))
        return tuple(shares)


def _prefix_groups(judged: list[_StandIn]) -> tuple[tuple[int, float], ...]:
    calls: dict[int, list[_StandIn]] = {}
    for stand_in in judged:
        calls.setdefault(stand_in.prefix_group, []).append(stand_in)
    return tuple((group, 0.0 if len(met) > 1 else met[0].prefix_tokens) for group, met in calls.items())


@dataclasses.dataclass
class CacheUnknown:
    """Requests counted to send that the cache may already hold: the plan cannot build them
    without running what only a run runs (a promptfoo ``transform``, JavaScript, on a cached
    answer: the requests are made of its result), so it cannot look them up. ``why`` says so."""

    why: str
    rows: set[str] = dataclasses.field(default_factory=set)  # the node ids of the items they are of
    by_model: dict[str, int] = dataclasses.field(default_factory=dict)  # the requests, by model

    def add(self, nodeid: str, model_id: str) -> None:
        self.rows.add(nodeid)
        self.by_model[model_id] = self.by_model.get(model_id, 0) + 1

    @property
    def requests(self) -> int:
        return sum(self.by_model.values())

    def to_dict(self) -> dict[str, Any]:
        return {
            "why": self.why,
            "requests": self.requests,
            "rows": len(self.rows),
            "by_model": dict(sorted(self.by_model.items())),
        }

    def line(self) -> str:
        return (
            f"cache unknown: {self.requests:,} of the requests to send may be cached already "
            f"(items: {len(self.rows):,}): {self.why}"
        )


@dataclasses.dataclass
class Plan:
    by_model: dict[str, ModelPlan]
    missing_keys: list[dict[str, Any]]
    # model ids the run's pre-flight refuses (the run stops there): nothing of theirs is counted
    unusable_models: list[str] = dataclasses.field(default_factory=list)
    auto: AutoPlan | None = None  # --weval-repeat=auto: the rows count every item at its most samples
    batch: bool = False  # --weval-batch: the cost through the batch APIs beside the live cost
    # model id -> its batch price as a share of its live one (``PriceBook.batch_ratio``)
    batch_ratios: dict[str, float] = dataclasses.field(default_factory=dict)
    # requests counted to send that the plan could not look up (none in a plan of blueprints)
    cache_unknown: list[CacheUnknown] = dataclasses.field(default_factory=list)

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
                    row["cost_usd"]["batch"] = _batch_range(self.batch_ratios.get(model, 1.0), row["cost_usd"])
            batch_cost = {
                "batch": {
                    end: round(sum(r["cost_usd"]["batch"][end] for r in by_model.values() if r["cost_usd"]), 6)
                    for end in ("low", "high")
                }
            }
        cached_cost: dict[str, Any] = {}
        if any(m.cache_saving > 0 for m in priced):
            cached_cost = {
                "prompt_cached": {
                    end: round(
                        sum(
                            (r["cost_usd"].get("prompt_cached") or r["cost_usd"])[end]
                            for r in by_model.values()
                            if r["cost_usd"]
                        ),
                        6,
                    )
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
            **({"cache_unknown": [u.to_dict() for u in self.cache_unknown]} if self.cache_unknown else {}),
            **({"repeat_auto": self.auto.to_dict(self.total)} if self.auto is not None else {}),
            "cost_usd": {
                "low": round(sum(m.cost_low or 0 for m in priced), 6),
                "high": round(sum(m.cost_high or 0 for m in priced), 6),
                "unpriced_models": unpriced,
                **batch_cost,
                **cached_cost,
            },
        }

    def lines(self) -> list[str]:
        totals = self.to_dict()
        rows = [["model", "requests", "cached", "to send", "input tokens", "estimated cost"]]
        cost = totals["cost_usd"]
        prompt_cached = "prompt_cached" in cost
        if prompt_cached:
            rows[0].append("prompt-cached")
        if self.batch:
            rows[0].append("through batches")
        for model, m in sorted(self.by_model.items()):
            shown = "no price" if m.cost_low is None else f"${m.cost_low:,.4f}-${m.cost_high or 0:,.4f}"
            row = [
                model,
                f"{m.requests:,}",
                f"{m.cached:,}",
                f"{m.requests - m.cached:,}",
                f"{m.input_tokens:,.0f}",
                shown,
            ]
            if prompt_cached:
                own = totals["requests"]["by_model"][model]["cost_usd"]
                row.append("no price" if own is None else _money(own.get("prompt_cached") or own))
            if self.batch:
                batch = totals["requests"]["by_model"][model]["cost_usd"]
                row.append("no price" if batch is None else _money(batch["batch"]))
            rows.append(row)
        unpriced = " + unpriced" if cost["unpriced_models"] else ""
        total = [
            "total",
            f"{self.total:,}",
            f"{self.cached:,}",
            f"{self.total - self.cached:,}",
            "",
            _money(cost) + unpriced,
        ]
        if prompt_cached:
            total.append(_money(cost["prompt_cached"]) + unpriced)
        if self.batch:
            total.append(_money(cost["batch"]) + unpriced)
        rows.append(total)
        widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
        out = [
            "  ".join(cell.ljust(w) if i == 0 else cell.rjust(w) for i, (cell, w) in enumerate(zip(row, widths)))
            for row in rows
        ]
        if cost["high"] or cost["unpriced_models"]:
            # Which calls the provider will find cached is not known before they are sent.
            out.append(
                "estimated cost: list prices, no prompt caching assumed (an upper bound; each reply "
                "is then billed at its own usage, cached tokens at their rates)"
            )
        if prompt_cached:
            out.append(
                "prompt-cached: the judge calls of one answer share all but the criterion; after the "
                "first, that prefix at the provider's cached rate (the first at its cache-write rate), "
                "where the provider caches it"
            )
        for missing in self.missing_keys:
            needed = [
                f"{role} {', '.join(ids)}"
                for role, ids in (("models", missing["models"]), ("judges", missing["judges"]))
                if ids
            ]
            out.append(f"missing key: {missing['variable']} (needed by {'; '.join(needed)})")
        for why in self.unusable_models:
            out.append(f"cannot run: {why} (the run stops at its pre-flight; nothing of it is counted above)")
        out.extend(unknown.line() for unknown in self.cache_unknown)
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


def _batch_range(ratio: float, cost: dict[str, Any]) -> dict[str, float]:
    """The cost range through the provider's batch API (the library's batch price of the model,
    as a share of its live price; a provider without one goes live, at the live price)."""
    return {end: round(cost[end] * ratio, 6) for end in ("low", "high")}


def make_plan(
    engine: Engine,
    settings: PipelineSettings,
    works: Iterable[Work],
    *,
    prices: PriceBook,
    checked: Preflight | None = None,
    batch: bool = False,
    embeddings: bool = False,
) -> Plan:
    """The plan of ``works``: runs on ``engine``'s loop, reading its cache, sending nothing;
    ``batch``: the run goes through the batch APIs (their cost beside the live one);
    ``embeddings``: the run embeds its answers and ideals (``--weval-eval-methods``).
    Blueprint items first, then promptfoo rows (run/plan_promptfoo.py), then agent eval cases
    (run/plan_agent.py)."""
    client = PlanClient(engine, prices)
    other_formats: list[Work] = []
    items: Iterable[ItemWork] = _blueprint_items(works, other_formats)
    items = list(items) if embeddings else items
    pipeline = Pipeline(client, settings)
    if settings.repeat_auto:
        client.first_samples, client.max_samples = sampling.first_samples(settings.repeat), settings.repeat
    samples = items
    if settings.repeat > 1:  # --weval-repeat: each item is asked N times, each sample its own request
        samples = (dataclasses.replace(work, sample=k) for work in items for k in range(settings.repeat))
    direct = DirectCount(client, pipeline) if engine.cache.store is None and settings.fixtures is None else None

    async def plan_all() -> None:
        for batch in _batches(samples, _BATCH):
            counted = [how for how in map(direct.direct, batch) if how is not None] if direct is not None else []
            if direct is not None and len(counted) == len(batch):
                await direct.count_all(batch, counted)  # no item of the batch waits on another: no tasks
            else:
                await asyncio.gather(*(_plan_item(pipeline, client, direct, work) for work in batch))

    engine.run_coroutine(plan_all()).result()
    if direct is not None:
        direct.settle()
    if embeddings:
        engine.run_coroutine(_plan_embeddings(pipeline, client, direct, items)).result()
    rows = _promptfoo_rows(other_formats)
    cache_unknown: list[CacheUnknown] = []
    if rows:
        # Their code is loaded by a plan that has such items only (docs/engine.md, 'A process's start').
        from pytest_weval.run.plan_promptfoo import RowPlanner

        planner = RowPlanner(client, pipeline.formats.promptfoo)
        engine.run_coroutine(plan_samples(rows, settings.repeat, planner.row)).result()
        if planner.transformed.requests:
            cache_unknown.append(planner.transformed)
    cases = _agent_cases(other_formats)
    if cases:
        from pytest_weval.run.plan_agent import CasePlanner

        agents = CasePlanner(client, pipeline.formats.agents, settings.custom_models)
        engine.run_coroutine(plan_samples(cases, settings.repeat, agents.case)).result()
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
        batch_ratios={model: prices.batch_ratio(model) for model in client.by_model} if batch else {},
        cache_unknown=cache_unknown,
    )


async def _plan_embeddings(
    pipeline: Pipeline, client: PlanClient, direct: DirectCount | None, works: Iterable[ItemWork]
) -> None:
    """The embedding step's requests (run/embedding.py): each prompt's ideal, and each item's
    answer, its request built from the answer when the cache holds it, else counted under a
    stand-in made of the answer's own requests (its length unknown: taken as the default
    output allowance)."""
    for work in works:
        if work.sample or work.blocked is not None:
            continue
        model = ModelSpec(id=embedding_model(work.blueprint))
        texts = [work.prompt.ideal] if work.prompt.ideal else []
        # An item that errors unsent (--weval-fixtures-strict) has no answer to embed.
        if missing_fixture(work, pipeline.settings.fixtures) is None:
            conversation = await pipeline.generate(work, {}) if direct is None else None
            if conversation is not None and conversation.error is None:
                texts.append(conversation.final_text or "")
            else:
                stand_in = ("embed", model.id, _answer_identity(pipeline, work))
                client.foresee(stand_in, model.id, "embed", OUTPUT_HIGH_DEFAULT, 0)
        for text in texts:
            if text.strip():
                with contextlib.suppress(ModelCallError):  # counted; not in the cache
                    await client.complete(embedding_request(model, text))


def _blueprint_items(works: Iterable[Work], others: list[Work]) -> Iterator[ItemWork]:
    """The blueprint items of ``works`` as they come; the other formats' items kept in ``others``."""
    for work in works:
        if isinstance(work, ItemWork):
            yield work
        else:
            others.append(work)


def _promptfoo_rows(works: list[Work]) -> list[Any]:
    """The promptfoo rows among ``works``. A row's class is loaded with the promptfoo runner's
    code, so a plan of agent eval cases alone (and its process) loads none of it."""
    runner = sys.modules.get("pytest_weval.run.promptfoo")
    return [work for work in works if isinstance(work, runner.PromptfooWork)] if runner is not None else []


def _agent_cases(works: list[Work]) -> list[Any]:
    """The agent eval cases among ``works``, picked out as ``_promptfoo_rows`` picks the rows (a
    plan of blueprints or promptfoo rows alone loads no agent code)."""
    runner = sys.modules.get("pytest_weval.run.agent")
    return [work for work in works if isinstance(work, runner.AgentWork)] if runner is not None else []


async def plan_samples(works: Iterable[_W], repeat: int, plan_one: Callable[[_W], Awaitable[None]]) -> None:
    """Another format's works (promptfoo rows, agent eval cases), each at its ``repeat``
    samples (each sample its own requests), a batch at a time on the engine's loop."""
    samples = (dataclasses.replace(work, sample=k) for work in works for k in range(repeat))  # type: ignore[type-var]
    for batch in _batches(samples, _BATCH):
        await asyncio.gather(*(plan_one(work) for work in batch))


def asked_identity(request: ModelRequest) -> tuple[Any, ...]:
    """What an answer's request is made of: works equal here get one answer (the samples of a
    work too: their answers are not known yet, so each answer's graders count once)."""
    model = request.model
    return ("asked", model.id, repr(model.custom), request.messages, request.temperature, request.max_tokens)


def _batches(works: Iterable[_W], size: int) -> Iterator[list[_W]]:
    it = iter(works)
    while batch := list(itertools.islice(it, size)):
        yield batch


async def _plan_item(pipeline: Pipeline, client: PlanClient, direct: DirectCount | None, work: ItemWork) -> None:
    how = direct.direct(work) if direct is not None else None
    if direct is not None and how is not None:
        await direct.count(work, how)
        return
    prompt = work.prompt
    if work.blocked is not None or sends_nothing(prompt) or missing_fixture(work, pipeline.settings.fixtures):
        return  # the run sends nothing for these items
    conversation = await pipeline.generate(work, {})
    if conversation.error is not None:
        # The first generation the cache lacks stopped the walk; the turns after it are asked
        # of the model too, each once the answer before it is known.
        identity = _answer_identity(pipeline, work)
        for turn in range(len(conversation.generated_texts) + 1, answers_asked(prompt.messages)):
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
            ask=pipeline.asker(0, {}, purpose="judge", shared_by=len(text_points)),
        )
        return
    # The answer (or the key points) is not in the cache: the judge calls it will need, under
    # stand-in keys.
    answer = _answer_identity(pipeline, work) if conversation.error is not None else conversation.final_text
    prompt_tokens = sum(len(m.content or "") for m in prompt.messages) / 4
    description = work.blueprint.description
    for point in text_points:
        for judge in panel.judges:
            new = client.foresee(
                (answer, judge.model, judge.approach, panel.scale, point.text, description),
                judge.model,
                "judge",
                input_tokens=400 + prompt_tokens + len(point.text or "") / 4,  # the judge prompt, the answer unknown
                max_output=judging.JUDGE_MAX_TOKENS,
            )
            if new:  # the first call of each prefix writes it to the provider's cache, the others read it
                group = hash((answer, judge.model, judge.approach, panel.scale, description))
                client.shared_prefix(group, judge.model, 400 + prompt_tokens)


def _answer_identity(pipeline: Pipeline, work: ItemWork) -> tuple[Any, ...]:
    """What the answer's requests are made of: items equal here get the same answer."""
    return (
        work.model.id,
        repr(pipeline.model_spec(work.model.id).custom),
        tuple((m.role, m.content) for m in work.prompt.messages),
        work.system_prompt,
        work.sent_temperature,
    )
