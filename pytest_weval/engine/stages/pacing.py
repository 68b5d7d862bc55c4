"""Limits and pacing: the concurrency slots a request waits for and the pace group it keeps to
(docs/engine.md, 'Concurrency' and 'Rate limits'). A refusal pauses its whole pace group, and
under xdist the pause reaches the run's other processes through the claims store."""

from __future__ import annotations

from pytest_weval.engine.claims import Coordinator
from pytest_weval.engine.request import EngineSettings
from pytest_weval.engine.stages.notices import Notices
from pytest_weval.engine.transport.limits import Limits
from pytest_weval.engine.transport.providers import HttpCall
from pytest_weval.engine.transport.ratelimit import Pacer, pace_group


class Pacing:
    def __init__(self, settings: EngineSettings, notices: Notices):
        self.settings = settings
        self.notices = notices
        self.limits = Limits(
            concurrency=settings.concurrency,
            overrides=settings.provider_concurrency,
            workers=settings.worker_count,
            adaptive=settings.adaptive,
        )
        self.coordinator: Coordinator | None = None  # shares pauses with the run's other processes
        self._pacers: dict[str, Pacer] = {}
        # (provider, url, headers) -> its pace group: an adapter sends every request with the
        # same url and headers, and the group's digest cost more than the rest of the pacing.
        self._groups: dict[tuple[str, str, tuple[tuple[str, str], ...]], str] = {}

    def pacer(self, group: str) -> Pacer:
        pacer = self._pacers.get(group)
        if pacer is None:
            pacer = self._pacers[group] = Pacer(group, share=self.settings.worker_count, on_pause=self._share_pause)
        return pacer

    def pacer_of(self, provider: str, call: HttpCall) -> Pacer:
        """The pacer of ``call``'s pace group (provider, host and headers; never the key)."""
        seen = (provider, call.url, tuple(call.headers.items()))
        group = self._groups.get(seen)
        if group is None:
            if len(self._groups) >= 1024:  # headers that change from request to request: bounded
                self._groups.clear()
            group = self._groups[seen] = pace_group(provider, call)
        return self.pacer(group)

    def _share_pause(self, group: str, until: float) -> None:
        """Tell the other workers of this run (xdist) to hold ``group`` back until ``until``."""
        if self.coordinator is not None:
            self.coordinator.signal(f"pause:{group}", until)

    def paused_elsewhere(self, group: str, until: float) -> None:
        """Another process of the run was told to wait: this one waits too."""
        self.pacer(group).pause_until_wall(until)

    def notice_throttling(self, pacer: Pacer) -> None:
        provider = pacer.name.split(":", 1)[0]
        if self.notices.said(provider):
            return
        pace = f"about {pacer.learned_pace:.1f} requests/s" if pacer.learned_pace else "its pace is being learned"
        self.notices.once(
            provider,
            f"weval: {provider} is rate limiting this run ({pace}); requests now wait as it asks "
            f"(up to {self.settings.rate_limit_wait_s:g} s each, --weval-rate-limit-wait)",
        )
