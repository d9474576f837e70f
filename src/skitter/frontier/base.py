"""The frontier seam: what the crawl loop needs from any frontier backend, and nothing more.

The local backend (:mod:`skitter.frontier.local`, SQLite, the embedded default) implements it; the
Redis backend of distributed crawling implements the same protocol, and the same contract tests
(tests/contract/) run against both. The loop never learns which one it talks to.

A backend owns URL state: which URLs were ever admitted (the URL-seen test), which are queued,
handed out, done, or due again later. The loop only says what happened to each candidate it was
handed (:class:`~skitter.models.Outcome`), including when the URL itself should come back (a
retry, a revisit): a URL has a due time of its own, apart from its host's politeness.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable
from collections.abc import Sequence

from ..models import Candidate, Outcome


class Frontier(Protocol):
    async def add(self, candidates: Sequence[Candidate], *, decided: bool = False) -> list[Candidate]:
        """Admit the candidates that pass the URL-seen test, in one round trip; returns those that
        were new, in order. ``decided``: they were decided without a request (e.g. robots.txt
        disallows them), so they pass the URL-seen test once and are never handed out."""

    async def next_ready(self) -> Candidate | None:
        """The best candidate whose host may be contacted now and whose own due time has come;
        waits for one. None after :meth:`stop`, or when nothing is queued (ready or due later)
        and nothing is in flight: the crawl is over."""

    async def done(self, candidate: Candidate, outcome: Outcome) -> None:
        """The loop is done with a candidate it was handed: release its host's slot, set the host's
        next allowed time from the outcome, and mark the URL done, or queue it again for
        ``outcome.due`` (with the candidate's ``attempts`` and ``redirects`` as given)."""

    def stop(self) -> None:
        """Hand out nothing more: :meth:`next_ready` returns None from now on."""

    def seen_recently(self, url: str) -> bool:
        """A cheap hint: True only if ``url`` has certainly passed the URL-seen test already (so the
        loop can skip its link filter and scoring); False says nothing."""

    @property
    def queued(self) -> int:
        """URLs waiting: ready now or due later."""

    @property
    def in_flight(self) -> int:
        """Candidates handed out and not done yet."""

    @property
    def active_hosts(self) -> int:
        """Hosts with a request in flight."""

    def held_hosts(self, limit: int = 3) -> tuple[int, list[tuple[str, float, str]]]:
        """Hosts with work that wait for their politeness time or their URLs' due times: how many,
        and the ``limit`` that wait the least as (host, seconds left, what it waits for: a
        Crawl-delay, the adaptive delay, a back-off, a due time). For the watchdog's report of a
        stalled crawl."""


@runtime_checkable
class Reprioritizing(Protocol):
    """An optional capability: raise queued URLs' priorities (the importance strategies: new
    in-links, OPIC cash). The loop uses it only if the backend has it."""

    async def reprioritize(self, changes: Sequence[tuple[str, float]]) -> None:
        """Raise each queued URL's priority to the given one (never lowers; a URL that is not
        queued is left alone)."""


@runtime_checkable
class Durable(Protocol):
    """An optional capability: a backend that writes URLs done somewhere else than the crawl's
    store (the Redis frontier) does so only once the store has committed their pages, so a crash
    between the two loses nothing. The loop calls it after each commit of the store."""

    async def committed(self) -> None:
        """Every page done so far is committed in the store."""

    @property
    def wants_commit(self) -> bool:
        """Whether a commit is awaited before the next regular one (the Redis frontier: hosts
        the ring gave to another worker are handed over only once their pages are committed)."""


@runtime_checkable
class Rescheduling(Protocol):
    """An optional capability: queue URLs again at a time of the caller's choosing, whatever their
    state (the incremental crawler: a page found by an earlier crawl, a URL admitted into a bounded
    collection). The recrawl uses it only if the backend has it."""

    async def reschedule(self, changes: Sequence[tuple[Candidate, float]]) -> None:
        """Make each candidate's URL due at the given time (epoch seconds): a done URL is queued
        again, a URL waiting for a due time gets this one; a URL ready now or in flight is left
        alone; a URL never admitted is admitted first. Each comes back as a revisit
        (``Outcome.revisit``): it takes turns with its host's other URLs."""
