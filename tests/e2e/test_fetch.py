"""The fetcher against a real hostile server on 127.0.0.1 (tests/hostile.py)."""

from __future__ import annotations

import asyncio
import gzip
import socket
import time
import tracemalloc
import zlib
from collections.abc import Iterator

import pytest

import hostile
from hostile import HostileServer
import skitter.fetch
from skitter.config import CrawlConfig
from skitter.fetch import Fetcher
from skitter.models import FetchResult

MIB = 1 << 20
LOCAL = frozenset({"public", "loopback"})
CFG = CrawlConfig(max_body=MIB, connect_timeout=2.0, read_timeout=1.5, total_timeout=2.0,
                  user_agent="skitter-test/1.0")
DUP_HEADERS = (b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nSet-Cookie: a=1\r\n"
               b"X-Latin: caf\xe9\r\nset-cookie: b=2\r\nContent-Length: 2\r\n\r\nok")


@pytest.fixture(scope="module")
def srv() -> Iterator[HostileServer]:
    with HostileServer(responses={"/robots.txt": (500, {"X-Why": "test"}, "broken"),
                                  "a.test/robots.txt": (200, {}, "User-agent: *\nDisallow:\n")},
                       delays={"/page/delayed": 0.3},
                       raw_responses={"/dup-headers": DUP_HEADERS,
                                      "/304-big": b"HTTP/1.1 304 Not Modified\r\n"
                                                  b"Content-Length: 99999999\r\n\r\n"}) as server:
        yield server


def fetch(url: str, *, cfg: CrawlConfig = CFG, allowed: frozenset[str] = LOCAL,
          overrides: dict[str, str] | None = None,
          headers: dict[str, str] | None = None) -> FetchResult:
    async def go() -> FetchResult:
        async with Fetcher(cfg, allowed=allowed, resolver_overrides=overrides) as f:
            return await f.get(url, headers=headers)
    return asyncio.run(go())


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# -- success ---------------------------------------------------------------------------------

def test_ok(srv: HostileServer) -> None:
    r = fetch(srv.url("/ok"))
    assert r.error is None and not r.retryable
    assert r.status == 200 and r.reason == "OK" and r.http_version == "1.1"
    assert r.body == hostile.OK_HTML and r.raw_body is r.body
    assert r.content_type == "text/html"
    assert r.header("content-length") == str(len(hostile.OK_HTML))
    assert r.ip == "127.0.0.1"
    assert r.started > 0 and 0 < r.elapsed < 2
    sent = dict(r.request_headers)
    assert sent["Host"] == f"127.0.0.1:{srv.port}"
    assert sent["User-Agent"] == "skitter-test/1.0"
    assert sent["Accept-Encoding"] == "gzip, deflate"
    seen = srv.requests_for("/ok")[-1].headers
    assert seen["User-Agent"] == "skitter-test/1.0"
    assert seen["Accept"].startswith("text/html")
    assert seen["Accept-Encoding"] == "gzip, deflate"


def test_response_headers_raw_and_in_order(srv: HostileServer) -> None:
    r = fetch(srv.raw_url("/dup-headers"))
    assert r.error is None and r.status == 200
    assert r.headers == [("Content-Type", "text/html"), ("Set-Cookie", "a=1"),
                         ("X-Latin", "caf\u00e9"), ("set-cookie", "b=2"),
                         ("Content-Length", "2")]
    assert r.header("SET-COOKIE") == "a=1"
    r = fetch(srv.url("/429"))
    assert r.status == 429 and r.error is None and r.header("Retry-After") == "2"


def test_conditional_headers_are_sent(srv: HostileServer) -> None:
    r = fetch(srv.url("/page/cond"), headers={"If-None-Match": '"v1"',
                                              "If-Modified-Since": "Sat, 01 Jan 2000 00:00:00 GMT"})
    assert r.status == 200
    seen = srv.requests_for("/page/cond")[-1].headers
    assert seen["If-None-Match"] == '"v1"'
    assert seen["If-Modified-Since"] == "Sat, 01 Jan 2000 00:00:00 GMT"
    assert ("If-None-Match", '"v1"') in r.request_headers


def test_redirect_is_returned_not_followed(srv: HostileServer) -> None:
    before = srv.hits["/r/a"]
    r = fetch(srv.url("/redirect-loop"))
    assert r.status == 302 and r.error is None
    assert r.header("Location") == "/r/a"
    assert srv.hits["/r/a"] == before
    r = fetch(srv.url("/redirect/2"))
    assert r.status == 302 and r.header("location") == "/redirect/1"
    assert fetch(srv.url("/redirect/0")).status == 200


def test_gzip_and_deflate_decoded_raw_kept(srv: HostileServer) -> None:
    for path in ("/gzip-ok", "/deflate-ok", "/deflate-raw"):
        r = fetch(srv.url(path))
        assert r.error is None, (path, r.error)
        assert r.body == hostile.GZIP_HTML, path
        assert len(r.raw_body) < len(r.body)
    assert gzip.decompress(fetch(srv.url("/gzip-ok")).raw_body) == hostile.GZIP_HTML
    assert zlib.decompress(fetch(srv.url("/deflate-ok")).raw_body) == hostile.GZIP_HTML


def test_unknown_encoding_kept_raw(srv: HostileServer) -> None:
    r = fetch(srv.url("/unknown-encoding"))
    assert r.error is None and r.body == r.raw_body == b"\x00\x01opaque-bytes"


def test_legacy_charsets_returned_raw(srv: HostileServer) -> None:
    r = fetch(srv.url("/cp1252"))
    assert r.body == hostile.CP1252_HTML
    assert r.header("content-type") == "text/html; charset=windows-1252"
    r = fetch(srv.url("/sjis"))
    assert r.body == hostile.SJIS_HTML and r.content_type == "text/html"


def test_http10_version(srv: HostileServer) -> None:
    r = fetch(srv.raw_url("/http10"))
    assert r.error is None and r.status == 200 and r.http_version == "1.0"
    assert b"old server" in r.body


def test_status_codes_are_results(srv: HostileServer) -> None:
    for code in (404, 500, 503):
        r = fetch(srv.url(f"/status/{code}"))
        assert r.status == code and r.error is None
    r = fetch(srv.url("/status/304"))
    assert r.status == 304 and r.body == b""
    # A 304 may declare the cached copy's length: no body, and not "too large".
    r = fetch(srv.raw_url("/304-big"))
    assert r.status == 304 and r.error is None and r.body == b""


# -- the configurable server -----------------------------------------------------------------

def test_canned_responses_and_delays(srv: HostileServer) -> None:
    r = fetch(srv.url("/robots.txt"))
    assert r.status == 500 and r.body == b"broken" and r.header("X-Why") == "test"
    r = fetch(f"http://a.test:{srv.port}/robots.txt", overrides={"a.test": "127.0.0.1"})
    assert r.status == 200 and r.body.startswith(b"User-agent")
    t = time.monotonic()
    assert fetch(srv.url("/page/delayed")).status == 200
    assert time.monotonic() - t >= 0.3
    srv.set_response("/page/canned", 410, {"Content-Type": "text/plain"}, "gone")
    assert fetch(srv.url("/page/canned")).status == 410


def test_extra_routes_and_raw_responses() -> None:
    from aiohttp import web

    async def teapot(request: web.Request) -> web.Response:
        return web.Response(status=418, text="teapot")

    raw = {"/weird": b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nConnection: close\r\n\r\nabc"}
    with HostileServer(extra_routes={"/tea": teapot}, raw_responses=raw) as s:
        assert fetch(s.url("/tea")).status == 418
        assert fetch(s.raw_url("/weird")).body == b"abc"
        assert s.hits["/tea"] == 1 and s.hits["/weird"] == 1
        assert [e.path for e in s.log] == ["/tea", "/weird"]


def test_calendar_is_infinite(srv: HostileServer) -> None:
    r = fetch(srv.url("/calendar/2024/12/"))
    assert b'href="/calendar/2025/1/"' in r.body and b'href="/calendar/2024/11/"' in r.body


# -- time bounds -----------------------------------------------------------------------------

def test_slow_drip_ends_at_total_timeout(srv: HostileServer) -> None:
    t = time.monotonic()
    r = fetch(srv.url("/slow-drip"))
    took = time.monotonic() - t
    assert r.error is not None and r.error.startswith("timeout:"), r.error
    assert r.retryable and r.status == 200
    assert 1.8 <= took < 3.5, took
    assert 1.8 <= r.elapsed < 3.5


def test_slow_lookup_counts_against_the_total(srv: HostileServer) -> None:
    # The whole hop is bounded, the name lookup included: a lookup that takes 1.2 s of the 2 s
    # leaves curl 0.8 s for the dripping body. (A stand-in for a slow DNS server: tests stay on
    # loopback.)
    class SlowDNS:
        async def resolve(self, host: str, port: int = 0, family: int = 0) -> list:
            await asyncio.sleep(1.2)
            return [{"hostname": host, "host": "127.0.0.1", "port": port,
                     "family": socket.AF_INET, "proto": 0, "flags": 0}]

        async def close(self) -> None:
            pass

    async def go() -> FetchResult:
        async with Fetcher(CFG, allowed=LOCAL) as f:
            f.resolver._inner = SlowDNS()
            return await f.get(f"http://slow-dns.test:{srv.port}/slow-drip")

    t = time.monotonic()
    r = asyncio.run(go())
    took = time.monotonic() - t
    assert r.error is not None and r.error.startswith("timeout:"), r.error
    assert r.status == 200 and 1.8 <= took < 2.6, took


def test_slow_headers_read_timeout(srv: HostileServer) -> None:
    cfg = CFG.with_(read_timeout=0.5, total_timeout=5.0)
    t = time.monotonic()
    r = fetch(srv.url("/slow-headers"), cfg=cfg)
    assert r.error is not None and r.error.startswith("timeout:"), r.error
    assert r.status is None and r.retryable
    assert time.monotonic() - t < 2.0


# -- size bounds -----------------------------------------------------------------------------

def test_response_headers_over_curls_limit_say_so() -> None:
    """A 400 KB header line: curl refuses it (CURLE_TOO_LARGE, code 100, with no message), which
    was recorded as "protocol: curl error 100"."""
    big = b"HTTP/1.1 200 OK\r\nX-Big: " + b"a" * 400_000 + b"\r\nContent-Length: 2\r\n\r\nok"
    with HostileServer(raw_responses={"/big-header": big}) as s:
        r = fetch(s.raw_url("/big-header"))
    assert r.error is not None and "headers too large" in r.error, r.error


def test_huge_body_capped(srv: HostileServer) -> None:
    r = fetch(srv.url("/huge"))
    assert r.error is not None and r.error.startswith("too-large:"), r.error
    assert not r.retryable and r.status == 200
    assert len(r.body) <= MIB and len(r.raw_body) <= MIB


def test_huge_declared_refused_without_reading(srv: HostileServer) -> None:
    r = fetch(srv.url("/huge-declared"))
    assert r.error is not None and r.error.startswith("too-large:"), r.error
    assert "Content-Length" in r.error
    assert r.body == b"" and r.raw_body == b""
    assert r.elapsed < 1.0


def test_gzip_bomb_capped_in_memory(srv: HostileServer) -> None:
    hostile.gzip_bomb(srv.bomb_size)  # build it before measuring

    async def go() -> tuple[FetchResult, int]:
        async with Fetcher(CFG, allowed=LOCAL) as f:
            await f.get(srv.url("/ok"))  # warm up: imports, pool
            tracemalloc.start()
            try:
                r = await f.get(srv.url("/gzip-bomb"))
                return r, tracemalloc.get_traced_memory()[1]
            finally:
                tracemalloc.stop()

    # (Measured inside the loop: the repr of a task result holding a 1 MiB body, which
    # asyncio.run may build on the way out, is not the fetcher's memory.)
    r, peak = asyncio.run(go())
    assert r.error is not None and r.error.startswith("too-large:"), r.error
    assert "decompressed" in r.error
    assert len(r.body) <= MIB
    assert len(r.raw_body) < 256 * 1024  # stopped early: ~1 KB of input makes 1 MiB
    assert peak < 3 * MIB, peak


# -- protocol and network failures: results, never exceptions -------------------------------

@pytest.mark.parametrize("path", ["/garbage-status", "/bad-chunked", "/close-mid-body"])
def test_malformed_responses(srv: HostileServer, path: str) -> None:
    r = fetch(srv.raw_url(path))
    assert r.error is not None
    assert r.error.split(":")[0] in ("protocol", "connect"), r.error
    assert "\n" not in r.error


def test_close_mid_body_keeps_status(srv: HostileServer) -> None:
    r = fetch(srv.raw_url("/close-mid-body"))
    assert r.status == 200 and r.error is not None and r.error.startswith("protocol:")
    assert r.retryable   # a transient failure like a reset: retried (a hold-out tester lost pages behind one)


def test_reset_is_connect_error(srv: HostileServer) -> None:
    for url in (srv.url("/reset"), srv.raw_url("/reset")):
        r = fetch(url)
        assert r.error is not None and r.error.startswith("connect:"), r.error
        assert r.retryable and r.status is None


def test_refused_port() -> None:
    r = fetch(f"http://127.0.0.1:{free_port()}/")
    assert r.error is not None and r.error.startswith("connect:"), r.error
    assert r.retryable and r.status is None
    assert dict(r.request_headers)["User-Agent"] == "skitter-test/1.0"


def test_unresolvable_host() -> None:
    # A generous total: on a machine whose DNS server is slow the lookup itself may take long.
    r = fetch("http://nonexistent.invalid/", allowed=frozenset({"public"}),
              cfg=CFG.with_(total_timeout=20.0))
    assert r.error is not None and r.error.startswith("dns:"), r.error
    assert not r.retryable


def test_bad_urls_are_results() -> None:
    for url in ("ftp://example.com/", "http://", "not a url"):
        r = fetch(url)
        assert r.error is not None and r.error.startswith("protocol:"), (url, r.error)


def test_unexpected_exception_is_classified(srv: HostileServer,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    # A bug in the code curl calls back for the body: the transfer ends, the crawl goes on.
    def boom(self: object) -> None:
        raise KeyError("odd")

    monkeypatch.setattr(skitter.fetch._Transfer, "_body_starts", boom)
    r = fetch(srv.url("/ok"))
    assert r.error is not None and r.error.startswith("protocol: KeyError"), r.error
    assert r.status == 200


# -- the address guard -----------------------------------------------------------------------

def test_loopback_literal_blocked_without_request(srv: HostileServer) -> None:
    r = fetch(srv.url("/page/blocked"), allowed=frozenset({"public"}))
    assert r.error is not None and r.error.startswith("blocked-address:"), r.error
    assert "loopback" in r.error and not r.retryable
    r = fetch(f"http://localhost:{srv.port}/page/blocked", allowed=frozenset({"public"}))
    assert r.error is not None and r.error.startswith("blocked-address:"), r.error
    r = fetch(f"http://127.1:{srv.port}/page/blocked", allowed=frozenset({"public"}))
    assert r.error is not None and r.error.startswith("blocked-address:"), r.error
    r = fetch(f"http://[::ffff:127.0.0.1]:{srv.port}/page/blocked", allowed=frozenset({"public"}))
    assert r.error is not None and r.error.startswith("blocked-address:"), r.error
    assert srv.hits["/page/blocked"] == 0


def test_override_blocked_when_class_not_allowed(srv: HostileServer) -> None:
    r = fetch(f"http://demo.test:{srv.port}/page/blocked2", allowed=frozenset({"public"}),
              overrides={"demo.test": "127.0.0.1"})
    assert r.error is not None and r.error.startswith("blocked-address:"), r.error
    assert srv.hits["/page/blocked2"] == 0


def test_resolver_override(srv: HostileServer) -> None:
    r = fetch(f"http://demo.test:{srv.port}/page/demo", overrides={"demo.test": "127.0.0.1"})
    assert r.status == 200 and r.error is None
    assert r.ip == "127.0.0.1"
    assert srv.requests_for("/page/demo")[-1].headers["Host"] == f"demo.test:{srv.port}"
    assert dict(r.request_headers)["Host"] == f"demo.test:{srv.port}"
    # config.resolve works too
    cfg = CFG.with_(resolve=(("demo2.test", "127.0.0.1"),))
    assert fetch(f"http://demo2.test:{srv.port}/ok", cfg=cfg).status == 200


# -- TLS (a real HTTPS server on loopback, certificates from trustme) ----------------------

@pytest.fixture(scope="module")
def tls(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[int, str]]:
    """An HTTPS server on 127.0.0.1 with a certificate for 127.0.0.1 and tls.test; its CA file."""
    import http.server
    import ssl
    import threading

    import trustme

    ca = trustme.CA()
    cert = ca.issue_cert("127.0.0.1", "tls.test")
    ca_file = tmp_path_factory.mktemp("tls") / "ca.pem"
    ca.cert_pem.write_to_path(str(ca_file))
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    cert.configure_cert(ctx)

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:
            body = b"<title>over TLS</title>"
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.socket = ctx.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1], str(ca_file)
    finally:
        server.shutdown()
        server.server_close()


def test_https_certificate_not_trusted_is_tls_error(tls: tuple[int, str]) -> None:
    port, _ = tls
    r = fetch(f"https://127.0.0.1:{port}/")
    assert r.error is not None and r.error.startswith("tls:"), r.error
    assert r.status is None and "\n" not in r.error


def test_https_with_the_ca_trusted(tls: tuple[int, str], monkeypatch: pytest.MonkeyPatch) -> None:
    # The trusted CAs are the interpreter's (OpenSSL's default paths), so SSL_CERT_FILE works.
    port, ca_file = tls
    monkeypatch.setenv("SSL_CERT_FILE", ca_file)
    r = fetch(f"https://127.0.0.1:{port}/page")
    assert r.error is None and r.status == 200 and r.body == b"<title>over TLS</title>"
    assert r.ip == "127.0.0.1" and r.http_version == "1.1"
    # A name pinned by the resolver: the certificate is checked against the name, not the IP.
    r = fetch(f"https://tls.test:{port}/", overrides={"tls.test": "127.0.0.1"})
    assert r.error is None and r.status == 200
    r = fetch(f"https://other.test:{port}/", overrides={"other.test": "127.0.0.1"})
    assert r.error is not None and r.error.startswith("tls:"), r.error


# -- the pool --------------------------------------------------------------------------------

def test_connection_reuse(srv: HostileServer) -> None:
    async def go() -> list[FetchResult]:
        async with Fetcher(CFG, allowed=LOCAL) as f:
            return [await f.get(srv.url(p)) for p in ("/page/reuse", "/gzip-ok", "/page/reuse")]

    results = asyncio.run(go())
    assert all(r.status == 200 for r in results)
    peers = {e.peer for e in srv.log if e.path in ("/page/reuse", "/gzip-ok")
             and e.time >= results[0].started - 1}
    assert len(peers) == 1, peers


def test_concurrent_fetches_share_one_fetcher(srv: HostileServer) -> None:
    cfg = CFG.with_(concurrency=8, per_host=4)

    async def go() -> list[FetchResult]:
        async with Fetcher(cfg, allowed=LOCAL) as f:
            return await asyncio.gather(*(f.get(srv.url(f"/page/c{i}")) for i in range(40)))

    results = asyncio.run(go())
    assert all(r.status == 200 and r.error is None for r in results)
    assert all(b"<title>Page c" in r.body for r in results)


def test_cancelled_fetch_leaves_the_fetcher_working(srv: HostileServer) -> None:
    # A crawl that stops cancels the fetches in flight: the transfer is taken out of curl and
    # its connection closed; the next fetch on the same fetcher goes through.
    async def go() -> tuple[bool, FetchResult]:
        async with Fetcher(CFG.with_(total_timeout=30.0, read_timeout=30.0), allowed=LOCAL) as f:
            task = asyncio.ensure_future(f.get(srv.url("/slow-drip")))
            await asyncio.sleep(0.3)
            task.cancel()
            try:
                await task
                cancelled = False
            except asyncio.CancelledError:
                cancelled = True
            return cancelled, await f.get(srv.url("/page/after-cancel"))

    t = time.monotonic()
    cancelled, r = asyncio.run(go())
    assert cancelled and r.status == 200 and r.error is None
    assert time.monotonic() - t < 5


# -- the decoder, in isolation --------------------------------------------------------------

from skitter.errors import BodyTooLarge, ProtocolError  # noqa: E402
from skitter.fetch import _Decoder, unasked_coding  # noqa: E402

TEXT = b"<p>some text that compresses well</p>" * 300


def decode(encoding: str, data: bytes, cap: int = MIB, step: int = 0) -> bytes:
    dec = _Decoder.for_headers([encoding], cap)
    assert dec is not None
    if step:
        for i in range(0, len(data), step):
            dec.feed(data[i:i + step])
    else:
        dec.feed(data)
    return dec.finish()


@pytest.mark.parametrize("step", [0, 1, 7, 4096])
def test_decoder_gzip_and_deflate_any_chunking(step: int) -> None:
    raw = zlib.compressobj(6, zlib.DEFLATED, -15)
    assert decode("gzip", gzip.compress(TEXT), step=step) == TEXT
    assert decode("x-gzip", gzip.compress(TEXT), step=step) == TEXT
    assert decode("deflate", zlib.compress(TEXT), step=step) == TEXT
    assert decode("deflate", raw.compress(TEXT) + raw.flush(), step=step) == TEXT


def test_decoder_multi_member_gzip_and_trailing_garbage() -> None:
    assert decode("gzip", gzip.compress(b"one ") + gzip.compress(b"two")) == b"one two"
    assert decode("gzip", gzip.compress(TEXT) + b"\x00\x00junk") == TEXT


def test_decoder_exact_cap_and_one_over() -> None:
    data = gzip.compress(TEXT)
    assert decode("gzip", data, cap=len(TEXT)) == TEXT
    with pytest.raises(BodyTooLarge):
        decode("gzip", data, cap=len(TEXT) - 1)
    with pytest.raises(BodyTooLarge):
        decode("gzip", data, cap=len(TEXT) - 1, step=1)


def test_decoder_bad_and_truncated_streams() -> None:
    with pytest.raises(ProtocolError):
        decode("gzip", b"\x1f\x8bthis is not gzip at all")
    # A truncated stream keeps what was decoded (browsers show it).
    part = decode("gzip", gzip.compress(TEXT)[:-40])
    assert TEXT.startswith(part) and len(part) > 0
    assert decode("gzip", b"") == b""


def test_decoder_chain_and_unknown() -> None:
    inner = zlib.compress(TEXT)
    assert decode("deflate, gzip", gzip.compress(inner)) == TEXT
    # a compression the request did not accept: the body is kept as sent (then an error)
    for values in (["br"], ["gzip, br"], ["gzip", "zstd"]):
        assert _Decoder.for_headers(values, MIB) is None
        assert unasked_coding(values) in ("br", "zstd")
    assert unasked_coding(["gzip"]) is None and unasked_coding(["utf-8"]) is None
    # a token that is no coding at all ("utf-8", as misconfigured servers send): the body as sent
    assert _Decoder.for_headers(["utf-8"], MIB) is None
    assert _Decoder.for_headers(["identity"], MIB) is None
    assert _Decoder.for_headers([], MIB) is None


# -- the response time the adaptive delay uses (issue 18) -------------------------------------------

def test_response_time_is_the_servers_and_not_the_event_loops(srv: HostileServer) -> None:
    """A busy loop makes the call slow (``elapsed``), not the server (``response_time``, from the
    request's last byte sent to the response's last byte received, by the kernel's clock): the
    loop is blocked before the request goes out, and again while the response waits in the
    socket (the server answers /page/delayed after 0.3 s; the loop reads it 0.6 s later)."""
    async def go() -> tuple[FetchResult, FetchResult]:
        async with Fetcher(CFG, allowed=LOCAL) as f:
            await f.get(srv.url("/ok"))             # a warm connection, as in a crawl
            loop = asyncio.get_running_loop()
            task = asyncio.ensure_future(f.get(srv.url("/ok")))
            loop.call_soon(time.sleep, 0.2)         # busy before the request goes out
            before = await task
            task = asyncio.ensure_future(f.get(srv.url("/page/delayed")))
            loop.call_later(0.1, time.sleep, 0.8)   # busy while the response arrives
            during = await task
            return before, during
    before, during = asyncio.run(go())
    assert before.status == 200 and before.elapsed >= 0.2
    assert before.response_time is not None and before.response_time < 0.1
    assert during.status == 200 and during.elapsed >= 0.85
    assert during.response_time is not None and 0.28 <= during.response_time < 0.5, during.response_time


def test_no_response_time_without_a_request() -> None:
    r = fetch(f"http://127.0.0.1:{free_port()}/")
    assert r.error and r.response_time is None
