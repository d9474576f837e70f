"""The transport seam: how the crawl loop gets one HTTP hop. The real one is libcurl's
(:class:`skitter.fetch.Fetcher`); :class:`skitter.testing.SiteTransport` serves an in-memory web, so
loop tests run without a server."""

from __future__ import annotations

from typing import Protocol

from .models import FetchResult


class Transport(Protocol):
    async def get(self, url: str, *, headers: dict[str, str] | None = None) -> FetchResult:
        """GET ``url``, one hop (redirects are not followed); never raises but on cancellation:
        every failure is a result with ``error`` set."""

    async def close(self) -> None:
        """Release connections; no ``get`` after this."""
