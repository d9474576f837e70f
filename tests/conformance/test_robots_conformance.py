"""robots.txt conformance: every case of tests/data/robots_cases.json is its own test.

Cases without ``http`` go through ``RobotsRules.parse(...).allowed(url)``. Cases with ``http``
(robots.txt served with a status and/or behind a chain of 301s) go through ``RobotsCache``
against a real aiohttp server on 127.0.0.1. Disputed cases (RFC 9309 and Google's tests
disagree) run too, as non-strict xfails carrying the dispute.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp import web

from skitter.models import FetchResult
from skitter.robots import RobotsCache, RobotsRules

CASES_FILE = Path(__file__).resolve().parent.parent / "data" / "robots_cases.json"
CASES: list[dict[str, Any]] = json.loads(CASES_FILE.read_text(encoding="utf-8"))["cases"]


def _params() -> list[Any]:
    params = []
    for case in CASES:
        marks = []
        if case.get("disputed"):
            marks.append(pytest.mark.xfail(strict=False, reason=f"disputed: {case['disputed']}"))
        params.append(pytest.param(case, id=case["id"], marks=marks))
    return params


def test_case_file_is_complete() -> None:
    ids = [case["id"] for case in CASES]
    assert len(ids) == len(set(ids)) == 202
    assert sum(1 for case in CASES if "http" in case) == 8


@pytest.mark.parametrize("case", _params())
def test_robots_case(case: dict[str, Any]) -> None:
    if "http" in case:
        allowed = asyncio.run(_allowed_over_http(case))
    else:
        allowed = RobotsRules.parse(case["robots_txt"], case["user_agent"]).allowed(case["url"])
    assert allowed is case["allowed"], case.get("note") or case["source"]


async def _allowed_over_http(case: dict[str, Any]) -> bool:
    """Serve the case's robots.txt (status, redirects) on 127.0.0.1 and ask the cache."""
    status: int = case["http"].get("status", 200)
    redirects: int = case["http"].get("redirects", 0)
    body = case["robots_txt"].encode("utf-8")

    async def handle(request: web.Request) -> web.Response:
        # /robots.txt is hop 0, /hop<k> is hop k; hops before the last one redirect.
        hop = 0 if request.path == "/robots.txt" else int(request.path.removeprefix("/hop"))
        if hop < redirects:
            raise web.HTTPMovedPermanently(location=f"/hop{hop + 1}")
        return web.Response(status=status, body=body, content_type="text/plain")

    app = web.Application()
    app.router.add_get("/{tail:.*}", handle)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    try:
        async with aiohttp.ClientSession() as session:

            async def get(url: str) -> FetchResult:
                try:
                    timeout = aiohttp.ClientTimeout(total=5)
                    async with session.get(url, allow_redirects=False, timeout=timeout) as resp:
                        return FetchResult(
                            url=url,
                            status=resp.status,
                            headers=list(resp.headers.items()),
                            body=await resp.read(),
                        )
                except (TimeoutError, aiohttp.ClientError) as exc:
                    return FetchResult(url=url, error=f"fetch: {exc!r}")

            cache = RobotsCache(get, case["user_agent"])
            rules = await cache.rules_for(f"http://127.0.0.1:{port}/")
            return rules.allowed(case["url"])
    finally:
        await runner.cleanup()
