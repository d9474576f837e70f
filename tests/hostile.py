"""A real, hostile HTTP server on 127.0.0.1 for tests.

    from hostile import HostileServer

    with HostileServer() as srv:                 # sync or async tests alike
        srv.base                                 # "http://127.0.0.1:PORT"  (aiohttp server)
        srv.raw_base                             # "http://127.0.0.1:PORT2" (raw-bytes server)
        srv.url("/ok")                           # srv.base + "/ok"
        srv.hits["/ok"]                          # requests per path (both servers)
        srv.log                                  # [Request(time, path, headers, method, query, host, peer)]

It runs both servers on one event loop in a background thread, so the test's own loop (if any)
is free; ``__exit__`` stops them and joins the thread. ``async with`` works too.

Per-test behaviour, consulted at request time (so it can also be changed while running):

* ``responses={"/robots.txt": (500, {"X-A": "b"}, b"body")}`` — a canned answer (status,
  headers, body as bytes or str); the key may also be ``"host/path"`` (host without port,
  e.g. ``"a.test/robots.txt"``) to answer differently per virtual host, which wins over the path.
* ``delays={"/robots.txt": 30}`` — sleep this many seconds before answering (any route,
  canned or built-in; same ``host/path`` keys). Ended early if the client goes away.
* ``extra_routes={"/x": handler}`` — an aiohttp handler ``async def handler(request)``
  (runs in the server thread's loop); ``"/x/{name}"`` patterns work.
* ``raw_responses={"/x": b"HTTP/1.1 200 OK\\r\\n..."}`` — raw bytes the raw server writes for a
  path before closing.
* :meth:`set_response`, :meth:`set_delay` and :meth:`reset_counters` do the same at run time.

Built-in routes (main server): ``/ok``, ``/slow-drip``, ``/slow-headers``, ``/huge``,
``/huge-declared``, ``/gzip-bomb``, ``/gzip-ok``, ``/deflate-ok``, ``/deflate-raw``,
``/unknown-encoding``, ``/redirect-loop``, ``/r/a``, ``/r/b``, ``/redirect/<n>``, ``/cp1252``,
``/sjis``, ``/reset``, ``/calendar/<y>/<m>/``, ``/429``, ``/503``, ``/status/<code>``,
``/page/<name>`` (a small page that links to ``/page/<name>-1`` and ``/page/<name>-2``).
Raw server (``raw_base``): ``/garbage-status``, ``/bad-chunked``, ``/close-mid-body``,
``/http10`` (a valid HTTP/1.0 answer), ``/reset``; anything else: a valid 404.
"""

from __future__ import annotations

import asyncio
import socket
import struct
import threading
import time
import zlib
from collections import Counter
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, NamedTuple

from aiohttp import web

__all__ = ["HostileServer", "Request", "OK_HTML", "GZIP_HTML", "CP1252_HTML", "SJIS_HTML",
           "gzip_bomb"]

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
Canned = tuple[int, Mapping[str, str], "bytes | str"]

OK_HTML = (b"<!doctype html><html><head><title>OK page</title></head>"
           b"<body><h1>OK</h1><p>A small page.</p><a href=\"/ok\">self</a></body></html>")
GZIP_HTML = (b"<!doctype html><html><head><title>Compressed</title></head><body>"
             + b"<p>compressible text, repeated.</p>" * 200 + b"</body></html>")
CP1252_HTML = ("<!doctype html><html><head><title>Caf\u00e9 \u201cquoted\u201d</title></head>"
               "<body><p>Price: 5 \u20ac \u2014 na\u00efve r\u00e9sum\u00e9</p></body></html>"
               ).encode("cp1252")
SJIS_HTML = ("<!doctype html><html><head><meta charset=\"Shift_JIS\"><title>\u65e5\u672c\u8a9e"
             "\u306e\u30da\u30fc\u30b8</title></head><body><p>\u3053\u3093\u306b\u3061\u306f"
             "\u4e16\u754c</p></body></html>").encode("shift_jis")

_MIB = 1 << 20
_bomb_cache: dict[int, bytes] = {}
_bomb_lock = threading.Lock()


def gzip_bomb(size: int = 1 << 30) -> bytes:
    """A valid gzip stream of ``size`` zero bytes (a multiple of 1 MiB), ~1/1000 as large.

    Built from one full-flushed deflate block of 1 MiB of zeros repeated (identical each time
    after a full flush), so it costs milliseconds plus the CRC; cached per size.
    """
    n = max(1, size // _MIB)
    with _bomb_lock:
        if n in _bomb_cache:
            return _bomb_cache[n]
        zeros = bytes(_MIB)
        c = zlib.compressobj(9, zlib.DEFLATED, -15)
        block = c.compress(zeros) + c.flush(zlib.Z_FULL_FLUSH)
        again = c.compress(zeros) + c.flush(zlib.Z_FULL_FLUSH)
        assert again == block
        tail = c.flush(zlib.Z_FINISH)
        crc = 0
        for _ in range(n):
            crc = zlib.crc32(zeros, crc)
        header = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x02\xff"
        trailer = struct.pack("<II", crc, (n * _MIB) & 0xFFFFFFFF)
        data = b"".join([header, block * n, tail, trailer])
        _bomb_cache[n] = data
        return data


class Request(NamedTuple):
    """One logged request. ``peer`` is the client's (ip, port): one port = one connection."""

    time: float
    path: str
    headers: dict[str, str]
    method: str = "GET"
    query: str = ""
    host: str = ""
    peer: tuple[str, int] | None = None


def _html(body: bytes | str, status: int = 200, **headers: str) -> web.Response:
    if isinstance(body, str):
        body = body.encode("utf-8")
    h = {"Content-Type": "text/html; charset=utf-8"}
    h.update(headers)
    return web.Response(body=body, status=status, headers=h)


class HostileServer:
    """See the module docstring. Bound to 127.0.0.1, ports chosen by the OS."""

    def __init__(
        self,
        *,
        responses: Mapping[str, Canned] | None = None,
        delays: Mapping[str, float] | None = None,
        extra_routes: Mapping[str, Handler] | None = None,
        raw_responses: Mapping[str, bytes] | None = None,
        drip_interval: float = 0.5,
        huge_size: int = 20_000_000,
        bomb_size: int = 1 << 30,
    ) -> None:
        self.responses: dict[str, Canned] = dict(responses or {})
        self.delays: dict[str, float] = dict(delays or {})
        self.extra_routes: dict[str, Handler] = dict(extra_routes or {})
        self.raw_responses: dict[str, bytes] = dict(raw_responses or {})
        self.drip_interval = drip_interval
        self.huge_size = huge_size
        self.bomb_size = bomb_size
        self.hits: Counter[str] = Counter()
        self.log: list[Request] = []
        self.port = 0
        self.raw_port = 0
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._stop: asyncio.Event | None = None
        self._error: BaseException | None = None
        self._raw_writers: set[asyncio.StreamWriter] = set()

    # -- public API --------------------------------------------------------------------------

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def raw_base(self) -> str:
        return f"http://127.0.0.1:{self.raw_port}"

    def url(self, path: str) -> str:
        return self.base + path

    def raw_url(self, path: str) -> str:
        return self.raw_base + path

    def set_response(self, key: str, status: int, headers: Mapping[str, str] | None = None,
                     body: bytes | str = b"") -> None:
        self.responses[key] = (status, dict(headers or {}), body)

    def set_delay(self, key: str, seconds: float) -> None:
        self.delays[key] = seconds

    def reset_counters(self) -> None:
        with self._lock:
            self.hits.clear()
            self.log.clear()

    def requests_for(self, path: str) -> list[Request]:
        with self._lock:
            return [r for r in self.log if r.path == path]

    def start(self) -> HostileServer:
        if self._thread is not None:
            return self
        self._thread = threading.Thread(target=self._run, name="hostile-server", daemon=True)
        self._thread.start()
        if not self._ready.wait(10):
            raise RuntimeError("hostile server did not start")
        if self._error is not None:
            raise RuntimeError("hostile server failed to start") from self._error
        return self

    def stop(self) -> None:
        if self._thread is None:
            return
        loop, stop = self._loop, self._stop
        if loop is not None and stop is not None and not loop.is_closed():
            try:
                loop.call_soon_threadsafe(stop.set)
            except RuntimeError:
                pass
        self._thread.join(10)
        self._thread = None

    def __enter__(self) -> HostileServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    async def __aenter__(self) -> HostileServer:
        await asyncio.to_thread(self.start)
        return self

    async def __aexit__(self, *exc: object) -> None:
        await asyncio.to_thread(self.stop)

    # -- server thread -----------------------------------------------------------------------

    def _run(self) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        try:
            loop.run_until_complete(self._serve())
        except BaseException as exc:  # reported to start() if it happens before ready
            self._error = exc
            self._ready.set()
        finally:
            try:
                loop.run_until_complete(loop.shutdown_asyncgens())
            finally:
                loop.close()

    async def _serve(self) -> None:
        self._stop = asyncio.Event()
        app = web.Application(middlewares=[self._middleware])
        r = app.router
        for path, handler in self.extra_routes.items():
            r.add_route("*", path, handler)
        r.add_get("/ok", self._ok)
        r.add_get("/slow-drip", self._slow_drip)
        r.add_get("/slow-headers", self._slow_headers)
        r.add_get("/huge", self._huge)
        r.add_get("/huge-declared", self._huge_declared)
        r.add_get("/gzip-bomb", self._gzip_bomb)
        r.add_get("/gzip-ok", self._gzip_ok)
        r.add_get("/deflate-ok", self._deflate_ok)
        r.add_get("/deflate-raw", self._deflate_raw)
        r.add_get("/unknown-encoding", self._unknown_encoding)
        r.add_get("/redirect-loop", self._redirect_to("/r/a"))
        r.add_get("/r/a", self._redirect_to("/r/b"))
        r.add_get("/r/b", self._redirect_to("/r/a"))
        r.add_get("/redirect/{n:\\d+}", self._redirect_n)
        r.add_get("/cp1252", self._cp1252)
        r.add_get("/sjis", self._sjis)
        r.add_get("/reset", self._reset)
        r.add_get("/calendar/{y:\\d+}/{m:\\d+}/", self._calendar)
        r.add_get("/429", self._status_retry(429, "2"))
        r.add_get("/503", self._status_retry(503, "1"))
        r.add_get("/status/{code:\\d+}", self._status)
        r.add_get("/page/{name}", self._page)
        runner = web.AppRunner(app, handler_cancellation=True, shutdown_timeout=0.5,
                               access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0, reuse_address=True)
        await site.start()
        self.port = runner.addresses[0][1]
        raw = await asyncio.start_server(self._raw_client, "127.0.0.1", 0)
        self.raw_port = raw.sockets[0].getsockname()[1]
        self._ready.set()
        try:
            await self._stop.wait()
        finally:
            raw.close()
            for w in list(self._raw_writers):
                w.transport.abort()
            await raw.wait_closed()
            await runner.cleanup()

    def _record(self, path: str, headers: Mapping[str, str], method: str, query: str,
                host: str, peer: Any) -> None:
        entry = Request(time.time(), path, dict(headers), method, query, host,
                        tuple(peer[:2]) if peer else None)
        with self._lock:
            self.hits[path] += 1
            self.log.append(entry)

    def _lookup(self, table: Mapping[str, Any], host: str, path: str) -> Any:
        if host:
            value = table.get(f"{host}{path}")
            if value is not None:
                return value
        return table.get(path)

    @web.middleware
    async def _middleware(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        host = (request.host or "").rsplit(":", 1)[0] if not (request.host or "").startswith("[") \
            else request.host
        self._record(request.path, request.headers, request.method, request.query_string, host,
                     request.transport.get_extra_info("peername") if request.transport else None)
        delay = self._lookup(self.delays, host, request.path)
        if delay:
            await asyncio.sleep(delay)
        canned = self._lookup(self.responses, host, request.path)
        if canned is not None:
            status, headers, body = canned
            if isinstance(body, str):
                body = body.encode("utf-8")
            return web.Response(status=status, headers=dict(headers), body=body)
        return await handler(request)

    # -- built-in routes ---------------------------------------------------------------------

    async def _ok(self, request: web.Request) -> web.StreamResponse:
        return _html(OK_HTML)

    async def _slow_drip(self, request: web.Request) -> web.StreamResponse:
        resp = web.StreamResponse(headers={"Content-Type": "text/html"})
        await resp.prepare(request)
        await resp.write(b"<html>")
        try:
            while True:
                await asyncio.sleep(self.drip_interval)
                await resp.write(b"x")
        except (ConnectionError, RuntimeError):  # the client went away
            pass
        return resp

    async def _slow_headers(self, request: web.Request) -> web.StreamResponse:
        await asyncio.sleep(30)
        return _html(OK_HTML)

    async def _stream(self, request: web.Request, resp: web.StreamResponse, total: int) -> None:
        await resp.prepare(request)
        chunk = b"<p>" + b"a" * 65529 + b"</p>\n"  # 65536 bytes
        sent = 0
        try:
            while sent < total:
                piece = chunk[: total - sent]
                await resp.write(piece)
                sent += len(piece)
        except (ConnectionError, RuntimeError):
            pass

    async def _huge(self, request: web.Request) -> web.StreamResponse:
        resp = web.StreamResponse(headers={"Content-Type": "text/html"})  # chunked, no length
        await self._stream(request, resp, self.huge_size)
        return resp

    async def _huge_declared(self, request: web.Request) -> web.StreamResponse:
        resp = web.StreamResponse(headers={"Content-Type": "text/html"})
        resp.content_length = self.huge_size
        await self._stream(request, resp, self.huge_size)
        return resp

    async def _gzip_bomb(self, request: web.Request) -> web.StreamResponse:
        bomb = await asyncio.get_running_loop().run_in_executor(None, gzip_bomb, self.bomb_size)
        # Chunked (no Content-Length), so only the decompressed size can trip the cap.
        resp = web.StreamResponse(headers={"Content-Type": "text/html",
                                           "Content-Encoding": "gzip"})
        await resp.prepare(request)
        view = memoryview(bomb)
        try:
            for i in range(0, len(bomb), 65536):
                await resp.write(bytes(view[i:i + 65536]))
        except (ConnectionError, RuntimeError):
            pass
        return resp

    async def _gzip_ok(self, request: web.Request) -> web.StreamResponse:
        c = zlib.compressobj(6, zlib.DEFLATED, 31)
        return _html(c.compress(GZIP_HTML) + c.flush(), **{"Content-Encoding": "gzip"})

    async def _deflate_ok(self, request: web.Request) -> web.StreamResponse:
        return _html(zlib.compress(GZIP_HTML), **{"Content-Encoding": "deflate"})

    async def _deflate_raw(self, request: web.Request) -> web.StreamResponse:
        c = zlib.compressobj(6, zlib.DEFLATED, -15)
        return _html(c.compress(GZIP_HTML) + c.flush(), **{"Content-Encoding": "deflate"})

    async def _unknown_encoding(self, request: web.Request) -> web.StreamResponse:
        return _html(b"\x00\x01opaque-bytes", **{"Content-Encoding": "x-unknown"})

    def _redirect_to(self, location: str) -> Handler:
        async def handler(request: web.Request) -> web.StreamResponse:
            return web.Response(status=302, headers={"Location": location})
        return handler

    async def _redirect_n(self, request: web.Request) -> web.StreamResponse:
        n = int(request.match_info["n"])
        if n <= 0:
            return _html(OK_HTML)
        return web.Response(status=302, headers={"Location": f"/redirect/{n - 1}"})

    async def _cp1252(self, request: web.Request) -> web.StreamResponse:
        return web.Response(body=CP1252_HTML,
                            headers={"Content-Type": "text/html; charset=windows-1252"})

    async def _sjis(self, request: web.Request) -> web.StreamResponse:
        return web.Response(body=SJIS_HTML, headers={"Content-Type": "text/html"})

    async def _reset(self, request: web.Request) -> web.StreamResponse:
        transport = request.transport
        if transport is not None:
            sock = transport.get_extra_info("socket")
            if sock is not None:  # SO_LINGER 0: close sends RST, not FIN
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            transport.abort()
        raise asyncio.CancelledError  # nothing is written; aiohttp drops the request

    async def _calendar(self, request: web.Request) -> web.StreamResponse:
        y, m = int(request.match_info["y"]), int(request.match_info["m"])
        ny, nm = (y, m + 1) if m < 12 else (y + 1, 1)
        py, pm = (y, m - 1) if m > 1 else (y - 1, 12)
        body = (f"<!doctype html><html><head><title>Calendar {y}-{m:02d}</title></head><body>"
                f"<h1>{y}-{m:02d}</h1><a href=\"/calendar/{py}/{pm}/\">previous</a> "
                f"<a href=\"/calendar/{ny}/{nm}/\">next</a> <a href=\"/ok\">ok</a></body></html>")
        return _html(body)

    def _status_retry(self, status: int, retry_after: str) -> Handler:
        async def handler(request: web.Request) -> web.StreamResponse:
            return _html(f"<html><body>{status}</body></html>", status=status,
                         **{"Retry-After": retry_after})
        return handler

    async def _status(self, request: web.Request) -> web.StreamResponse:
        code = int(request.match_info["code"])
        if code < 200 or code in (204, 304):
            return web.Response(status=code)
        return _html(f"<html><body>status {code}</body></html>", status=code)

    async def _page(self, request: web.Request) -> web.StreamResponse:
        name = request.match_info["name"]
        body = (f"<!doctype html><html><head><title>Page {name}</title></head><body>"
                f"<h1>{name}</h1><a href=\"/page/{name}-1\">one</a> "
                f"<a href=\"/page/{name}-2\">two</a></body></html>")
        return _html(body)

    # -- the raw server ----------------------------------------------------------------------

    _RAW: dict[str, bytes] = {
        "/garbage-status": b"HTTP/1.1 ABC Garbage Here\r\nContent-Length: 2\r\n\r\nhi",
        "/bad-chunked": (b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n"
                         b"Transfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n"),
        "/close-mid-body": (b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n"
                            b"Content-Length: 100000\r\n\r\n" + b"<p>partial</p>" * 70),
        "/http10": (b"HTTP/1.0 200 OK\r\nContent-Type: text/html\r\n\r\n"
                    b"<html><body>old server</body></html>"),
    }
    _RAW_404 = b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"

    async def _raw_client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._raw_writers.add(writer)
        try:
            try:
                head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)
            except (TimeoutError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError):
                return
            lines = head.decode("latin-1").split("\r\n")
            parts = lines[0].split(" ")
            method = parts[0]
            target = parts[1] if len(parts) > 1 else "/"
            path, _, query = target.partition("?")
            headers: dict[str, str] = {}
            for line in lines[1:]:
                if ":" in line:
                    k, v = line.split(":", 1)
                    headers[k.strip()] = v.strip()
            self._record(path, headers, method, query, headers.get("Host", "").rsplit(":", 1)[0],
                         writer.get_extra_info("peername"))
            if path == "/reset":
                sock = writer.get_extra_info("socket")
                if sock is not None:
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                writer.transport.abort()
                return
            payload = self.raw_responses.get(path) or self._RAW.get(path) or self._RAW_404
            writer.write(payload)
            await writer.drain()
        except ConnectionError:
            pass
        finally:
            self._raw_writers.discard(writer)
            if not writer.transport.is_closing():
                writer.close()
