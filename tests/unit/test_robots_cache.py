"""Tests of skitter.robots.cache.RobotsCache against a real aiohttp server on 127.0.0.1."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Awaitable, Callable
from typing import Any

import aiohttp
import pytest
from aiohttp import web

from skitter.models import FetchResult
from skitter.robots import RobotsCache, RobotsRules, origin_of, robots_url

UA = "skitter/0.1.0 (+https://example.org/bot)"
ROBOTS = b"User-agent: *\nDisallow: /private\nCrawl-delay: 3\nSitemap: http://example.org/s.xml\n"

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


class Clock:
    """An injected monotonic clock that only moves when told to."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class Server:
    """A loopback web server; counts requests per path."""

    def __init__(self, handler: Handler) -> None:
        self.handler = handler
        self.hits: Counter[str] = Counter()
        self.port = 0
        self._runner: web.AppRunner | None = None

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        self.hits[request.path] += 1
        return await self.handler(request)

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def __aenter__(self) -> Server:
        app = web.Application()
        app.router.add_get("/{tail:.*}", self._handle)
        self._runner = web.AppRunner(app, shutdown_timeout=0.1)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.port = self._runner.addresses[0][1]
        return self

    async def __aexit__(self, *exc: Any) -> None:
        assert self._runner is not None
        await self._runner.cleanup()


def make_getter(
    session: aiohttp.ClientSession, timeout: float = 5.0
) -> Callable[[str], Awaitable[FetchResult]]:
    """A one-hop getter like the crawler's fetcher: no redirects, errors in ``.error``."""

    async def get(url: str) -> FetchResult:
        try:
            client_timeout = aiohttp.ClientTimeout(total=timeout)
            async with session.get(url, allow_redirects=False, timeout=client_timeout) as resp:
                return FetchResult(
                    url=url,
                    status=resp.status,
                    reason=resp.reason or "",
                    headers=list(resp.headers.items()),
                    body=await resp.read(),
                )
        except TimeoutError:
            return FetchResult(url=url, error="timeout: robots.txt", retryable=True)
        except aiohttp.ClientError as exc:
            return FetchResult(url=url, error=f"connect: {exc}", retryable=True)

    return get


def serve(body: bytes = ROBOTS, status: int = 200, delay: float = 0.0) -> Handler:
    async def handler(request: web.Request) -> web.Response:
        if delay:
            await asyncio.sleep(delay)
        return web.Response(status=status, body=body, content_type="text/plain")

    return handler


def redirecting(hops: int, body: bytes = ROBOTS) -> Handler:
    """/robots.txt -> /r1 -> ... -> /r<hops> (301s, relative and absolute Locations) -> body."""

    async def handler(request: web.Request) -> web.Response:
        n = 0 if request.path == "/robots.txt" else int(request.path.removeprefix("/r"))
        if n < hops:
            target = f"/r{n + 1}" if n % 2 == 0 else f"http://{request.host}/r{n + 1}"
            raise web.HTTPMovedPermanently(location=target)
        return web.Response(body=body, content_type="text/plain")

    return handler


async def rules_via(handler: Handler, **kwargs: Any) -> tuple[RobotsRules, Server]:
    async with Server(handler) as server, aiohttp.ClientSession() as session:
        cache = RobotsCache(make_getter(session), UA, **kwargs)
        return await cache.rules_for(server.base + "/some/page"), server


# -- origins -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "origin", "robots"),
    [
        ("http://Example.COM/a?b", ("http", "example.com", 80), "http://example.com/robots.txt"),
        ("https://example.com:443/", ("https", "example.com", 443), "https://example.com/robots.txt"),
        (
            "http://u:p@example.com:8080/x",
            ("http", "example.com", 8080),
            "http://example.com:8080/robots.txt",
        ),
        ("http://[::1]:81/", ("http", "::1", 81), "http://[::1]:81/robots.txt"),
    ],
)
def test_origin_and_robots_url(url: str, origin: tuple[str, str, int], robots: str) -> None:
    assert origin_of(url) == origin
    assert robots_url(origin) == robots


def test_relative_url_is_rejected() -> None:
    with pytest.raises(ValueError):
        origin_of("/just/a/path")


# -- fetching ------------------------------------------------------------------------------


def test_parsed_rules() -> None:
    rules, server = asyncio.run(rules_via(serve()))
    assert rules.reason is None
    assert not rules.allowed("/private/x")
    assert rules.allowed("/public")
    assert rules.crawl_delay == 3.0
    assert rules.sitemaps == ("http://example.org/s.xml",)
    assert server.hits == Counter({"/robots.txt": 1})


def test_one_fetch_shared_by_concurrent_callers() -> None:
    async def scenario() -> None:
        async with Server(serve(delay=0.05)) as server, aiohttp.ClientSession() as session:
            cache = RobotsCache(make_getter(session), UA)
            results = await asyncio.gather(*(cache.rules_for(f"{server.base}/p{i}") for i in range(20)))
            assert server.hits["/robots.txt"] == 1
            assert cache.loads == 1
            assert all(r is results[0] for r in results)
            assert cache.cached(server.base + "/other") is results[0]

    asyncio.run(scenario())


def test_cancelled_caller_does_not_cancel_the_shared_fetch() -> None:
    async def scenario() -> None:
        async with Server(serve(delay=0.1)) as server, aiohttp.ClientSession() as session:
            cache = RobotsCache(make_getter(session), UA)
            first = asyncio.create_task(cache.rules_for(server.base + "/"))
            second = asyncio.create_task(cache.rules_for(server.base + "/"))
            await asyncio.sleep(0.02)
            first.cancel()
            rules = await second
            assert rules.reason is None and not rules.allowed("/private")
            assert server.hits["/robots.txt"] == 1

    asyncio.run(scenario())


def test_expiry_with_injected_clock() -> None:
    async def scenario() -> None:
        clock = Clock()
        async with Server(serve()) as server, aiohttp.ClientSession() as session:
            cache = RobotsCache(make_getter(session), UA, expiry=100.0, clock=clock)
            assert cache.cached(server.base) is None
            first = await cache.rules_for(server.base + "/a")
            clock.now += 99.0
            assert cache.cached(server.base + "/b") is first
            assert await cache.rules_for(server.base + "/c") is first
            assert server.hits["/robots.txt"] == 1
            clock.now += 1.0
            assert cache.cached(server.base) is None
            second = await cache.rules_for(server.base + "/d")
            assert second is not first
            assert server.hits["/robots.txt"] == 2

    asyncio.run(scenario())


def test_forget() -> None:
    async def scenario() -> None:
        async with Server(serve()) as server, aiohttp.ClientSession() as session:
            cache = RobotsCache(make_getter(session), UA)
            await cache.rules_for(server.base)
            cache.forget(server.base + "/x")
            assert cache.cached(server.base) is None
            await cache.rules_for(server.base)
            assert server.hits["/robots.txt"] == 2

    asyncio.run(scenario())


def test_origins_are_separate() -> None:
    async def scenario() -> None:
        async with Server(serve()) as server, aiohttp.ClientSession() as session:
            cache = RobotsCache(make_getter(session), UA)
            await cache.rules_for(f"http://127.0.0.1:{server.port}/")
            await cache.rules_for(f"http://localhost:{server.port}/")
            await cache.rules_for(f"HTTP://127.0.0.1:{server.port}/again")
            assert server.hits["/robots.txt"] == 2
            assert len(cache) == 2

    asyncio.run(scenario())


@pytest.mark.parametrize("status", [400, 401, 403, 404, 410, 451])
def test_4xx_is_unavailable_allow_all(status: int) -> None:
    rules, _ = asyncio.run(rules_via(serve(b"User-agent: *\nDisallow: /\n", status=status)))
    assert rules.reason == "unavailable"
    assert rules.allowed("/anything")


@pytest.mark.parametrize("status", [500, 502, 503, 429])
def test_5xx_is_unreachable_disallow_all(status: int) -> None:
    rules, _ = asyncio.run(rules_via(serve(b"User-agent: *\nAllow: /\n", status=status)))
    assert rules.reason == "unreachable"
    assert not rules.allowed("/anything")
    assert rules.allowed("/robots.txt")


def test_unreachable_is_kept_only_error_expiry() -> None:
    async def scenario() -> None:
        clock = Clock()
        state = {"status": 503}

        async def handler(request: web.Request) -> web.Response:
            return web.Response(status=state["status"], body=ROBOTS)

        async with Server(handler) as server, aiohttp.ClientSession() as session:
            cache = RobotsCache(make_getter(session), UA, expiry=1000.0, error_expiry=60.0, clock=clock)
            assert (await cache.rules_for(server.base)).reason == "unreachable"
            clock.now += 59.0
            assert cache.cached(server.base) is not None
            clock.now += 1.0
            assert cache.cached(server.base) is None  # retried after error_expiry
            state["status"] = 200
            rules = await cache.rules_for(server.base)
            assert rules.reason is None and not rules.allowed("/private")
            clock.now += 500.0
            assert cache.cached(server.base) is rules  # parsed rules keep the long expiry

    asyncio.run(scenario())


def test_unreachable_is_tried_again_retries_times_then_final() -> None:
    """With ``retries``, an unreachable robots.txt is tried again after 4 s, then 16 s (or after a
    longer Retry-After), and ``retry_in`` says when, so the crawl holds the origin's URLs instead
    of recording them disallowed; after the last try the verdict is final (``retry_in`` None) for
    ``error_expiry``; a robots.txt that answers clears the count."""
    async def scenario() -> None:
        clock = Clock()
        state: dict[str, Any] = {"status": 503, "headers": {}}

        async def handler(request: web.Request) -> web.Response:
            return web.Response(status=state["status"], body=ROBOTS, headers=state["headers"])

        async with Server(handler) as server, aiohttp.ClientSession() as session:
            cache = RobotsCache(make_getter(session), UA, error_expiry=300.0, clock=clock, retries=2)
            url = server.base + "/page"
            assert (await cache.rules_for(url)).reason == "unreachable"
            assert cache.retry_in(url) == 4.0 and cache.tries(url) == 1
            clock.now += 4.0
            state["headers"] = {"Retry-After": "70"}   # the server asks for longer: it gets it
            assert cache.cached(url) is None and (await cache.rules_for(url)).reason == "unreachable"
            assert cache.retry_in(url) == 70.0 and cache.tries(url) == 2
            clock.now += 70.0
            assert (await cache.rules_for(url)).reason == "unreachable"
            assert cache.retry_in(url) is None and cache.tries(url) == 3   # final, kept error_expiry
            clock.now += 299.0
            assert cache.cached(url) is not None and cache.retry_in(url) is None
            clock.now += 1.0
            state["status"] = 200
            assert (await cache.rules_for(url)).reason is None and cache.tries(url) == 0
            assert cache.retry_in(url) is None

    asyncio.run(scenario())


def test_timeout_is_unreachable() -> None:
    async def scenario() -> None:
        release = asyncio.Event()

        async def stuck(request: web.Request) -> web.Response:
            await release.wait()
            return web.Response(body=ROBOTS)

        async with Server(stuck) as server, aiohttp.ClientSession() as session:
            cache = RobotsCache(make_getter(session, timeout=0.1), UA, error_expiry=30.0)
            rules = await cache.rules_for(server.base)
            release.set()
            assert rules.reason == "unreachable"
            assert not rules.allowed("/x")

    asyncio.run(scenario())


def test_connection_refused_is_unreachable() -> None:
    async def scenario() -> None:
        async with Server(serve()) as server:
            port = server.port
        async with aiohttp.ClientSession() as session:  # the server is gone: connection refused
            cache = RobotsCache(make_getter(session), UA)
            rules = await cache.rules_for(f"http://127.0.0.1:{port}/")
            assert rules.reason == "unreachable"

    asyncio.run(scenario())


def test_getter_that_raises_is_unreachable() -> None:
    async def get(url: str) -> FetchResult:
        raise RuntimeError("boom")

    async def scenario() -> None:
        cache = RobotsCache(get, UA)
        assert (await cache.rules_for("http://example.com/")).reason == "unreachable"
        assert cache.cached("http://example.com/x") is not None

    asyncio.run(scenario())


def test_body_cut_by_fetcher_cap_is_parsed_but_other_errors_are_not() -> None:
    async def scenario() -> None:
        async def too_large(url: str) -> FetchResult:
            return FetchResult(url=url, status=200, body=ROBOTS, error="too-large: over 1 MiB")

        async def reset(url: str) -> FetchResult:
            return FetchResult(url=url, status=200, body=ROBOTS, error="connect: reset")

        rules = await RobotsCache(too_large, UA).rules_for("http://example.com/")
        assert rules.reason is None and not rules.allowed("/private")
        assert (await RobotsCache(reset, UA).rules_for("http://example.com/")).reason == "unreachable"

    asyncio.run(scenario())


def test_max_bytes() -> None:
    body = b"User-agent: *\nDisallow: /a\n" + b"#" * 100 + b"\nDisallow: /b\n"
    rules, _ = asyncio.run(rules_via(serve(body), max_bytes=64))
    assert not rules.allowed("/a")
    assert rules.allowed("/b")


# -- redirects -----------------------------------------------------------------------------


@pytest.mark.parametrize("hops", [1, 5])
def test_redirect_chain_is_followed(hops: int) -> None:
    rules, server = asyncio.run(rules_via(redirecting(hops)))
    assert rules.reason is None
    assert not rules.allowed("/private/x")
    assert rules.allowed("/public")
    assert sum(server.hits.values()) == hops + 1


def test_six_redirects_are_unavailable() -> None:
    rules, server = asyncio.run(rules_via(redirecting(6)))
    assert rules.reason == "unavailable"
    assert rules.allowed("/private/x")
    assert sum(server.hits.values()) == 6  # the sixth redirect is not followed


def test_max_redirects_is_configurable() -> None:
    rules, _ = asyncio.run(rules_via(redirecting(2), max_redirects=1))
    assert rules.reason == "unavailable"


def test_redirect_without_location_is_unavailable() -> None:
    rules, _ = asyncio.run(rules_via(serve(b"", status=302)))
    assert rules.reason == "unavailable"
    assert rules.allowed("/x")


def test_redirect_to_a_server_error_is_unreachable() -> None:
    async def handler(request: web.Request) -> web.Response:
        if request.path == "/robots.txt":
            raise web.HTTPFound(location="/moved.txt")
        return web.Response(status=500)

    rules, _ = asyncio.run(rules_via(handler))
    assert rules.reason == "unreachable"
