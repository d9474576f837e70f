"""The frontier seam: what the crawl loop needs from any frontier backend.

The local backend (:mod:`skitter.frontier.local`, SQLite, the embedded default) implements it; a
Redis backend for distributed crawling plugs into the same loop through the same three calls.
"""

from __future__ import annotations

from typing import Callable, Iterable, Protocol

from ..models import Candidate


class Frontier(Protocol):
    def add(self, candidates: Iterable[Candidate]) -> int:
        """Admit candidates that pass the URL-seen test; returns how many were new."""

    async def next_ready(self) -> Candidate | None:
        """The best candidate whose host may be contacted now (waits for one);
        None when the crawl has nothing left and nothing in flight."""

    def seen_recently(self, url: str) -> bool:
        """A cheap, in-memory hint for the loop: True only if ``url`` has certainly passed the
        URL-seen test already (``add`` would ignore it), so the loop can skip its link filter,
        robots check and scoring; False says nothing (``add`` decides)."""

    def add_done(self, candidate: Candidate) -> bool:
        """Admit a URL already decided without a request (URL-seen test only); True if new."""

    gate: Callable[[Candidate], bool] | None
    """Checked on each candidate before its host's slot is taken; False = consumed without a request."""

    def done(self, candidate: Candidate, *, elapsed: float | None, retry_after: float | None = None) -> None:
        """The request for ``candidate`` has finished (whatever its outcome): release its host slot
        and set the host's next allowed time."""

    def requeue(self, candidate: Candidate, *, not_before: float) -> None:
        """Put a candidate back (a retry, or a wait for robots.txt) without a new URL-seen test."""

    def reprioritize(self, url: str, priority: float) -> None:
        """Raise a queued URL's priority (importance strategies: new in-links, OPIC cash)."""

    def stop(self) -> None:
        """Stop handing out candidates: next_ready returns None from now on."""

    @property
    def queued(self) -> int:
        """URLs waiting (in memory and on disk)."""

    @property
    def in_flight(self) -> int:
        ...

    @property
    def active_hosts(self) -> int:
        ...
