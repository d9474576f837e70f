"""The fetcher: one HTTP hop, bounded in time and memory, that never raises for a bad URL.

:class:`Fetcher` owns one :class:`aiohttp.ClientSession` (keep-alive pool, the guarded resolver)
for the whole crawl. :meth:`Fetcher.get` sends one GET, never follows redirects, and always
returns a :class:`~skitter.models.FetchResult`: a failure is a result with ``error`` set (see
:mod:`skitter.errors`), never an exception — only cancellation propagates.

Bounds, all from :class:`~skitter.config.CrawlConfig`:

* ``connect_timeout``: one TCP connect; ``read_timeout``: the longest wait for a byte;
  ``total_timeout``: the whole hop (DNS, connect, headers and body) — a server that drips a
  byte a second ends there.
* ``max_body``: a declared ``Content-Length`` over the cap is refused without reading; the raw
  body read is capped; the *decoded* body is capped too (gzip/deflate are decoded here in
  bounded steps, so a gzip bomb costs no memory beyond the cap). Over the cap: ``too-large``.
"""

from __future__ import annotations

import asyncio
import socket
import ssl
import time
import zlib
from types import TracebackType
from typing import Any

import aiohttp
from yarl import URL

from .config import CrawlConfig
from .errors import (
    BlockedAddress,
    BodyTooLarge,
    ConnectError,
    DNSError,
    FetchError,
    FetchTimeout,
    ProtocolError,
    TLSError,
)
from .models import FetchResult
from .netguard import GuardedResolver, GuardRefused

__all__ = ["Fetcher", "ACCEPT", "ACCEPT_ENCODING", "CHUNK_SIZE"]

ACCEPT = "text/html,application/xhtml+xml;q=0.9,*/*;q=0.5"
#: Only what :class:`_Inflater` decodes. Anything else a server sends anyway is kept raw.
ACCEPT_ENCODING = "gzip, deflate"
CHUNK_SIZE = 65536

# Response header limits: aiohttp's defaults (8190) refuse some real sites' long CSP/cookies.
_MAX_LINE = 16 * 1024
_MAX_FIELD = 32 * 1024

_DECODABLE = {"gzip": "gzip", "x-gzip": "gzip", "deflate": "deflate"}

# aiohttp >= 3.10 has a dedicated DNS error; older versions raise ClientConnectorError with a
# gaierror as os_error (handled below by looking at the cause).
_DNSErrorType: type[BaseException] = getattr(aiohttp, "ClientConnectorDNSError", socket.gaierror)
_ConnTimeoutType: tuple[type[BaseException], ...] = tuple(
    t for t in (getattr(aiohttp, "ConnectionTimeoutError", None),) if t is not None
)


class _Inflater:
    """Streaming gzip/deflate decoder whose output is capped at ``cap`` bytes in total.

    Each ``decompress`` call is limited to ``remaining + 1`` output bytes, so the decoder never
    produces (or holds) more than one byte past the cap: a bomb stops after ~cap bytes of work.
    gzip: multi-member streams are decoded, trailing garbage after a member is ignored (as
    browsers do). deflate: zlib-wrapped or raw, told apart by the first two bytes.
    """

    __slots__ = ("kind", "cap", "size", "_d", "_head", "_ended")

    def __init__(self, kind: str, cap: int) -> None:
        self.kind = kind
        self.cap = cap
        self.size = 0
        self._d: Any = zlib.decompressobj(47) if kind == "gzip" else None  # 47: gzip or zlib
        self._head = b""  # deflate: bytes held until the first two are known
        self._ended = False

    def _start_deflate(self, data: bytes) -> None:
        b0, b1 = data[0], data[1]
        if b0 == 0x1F and b1 == 0x8B:
            wbits = 31  # gzip sent as "deflate"
        elif b0 & 0x0F == 8 and b0 >> 4 <= 7 and ((b0 << 8) | b1) % 31 == 0:
            wbits = 15  # zlib (RFC 1950), what the spec says "deflate" is
        else:
            wbits = -15  # raw deflate (RFC 1951), what some servers send
        self._d = zlib.decompressobj(wbits)

    def feed(self, data: bytes) -> bytes:
        if self._d is None:
            data = self._head + data
            if len(data) < 2:
                self._head = data
                return b""
            self._head = b""
            self._start_deflate(data)
        out: list[bytes] = []
        d = self._d
        while data:
            if self._ended:
                # gzip: another member may follow; anything else after the end is ignored.
                if self.kind == "gzip" and data[:2] == b"\x1f\x8b":
                    d = self._d = zlib.decompressobj(31)
                    self._ended = False
                else:
                    break
            remaining = self.cap - self.size
            before = len(data)
            try:
                # max_length 0 would mean "no limit": at the cap, probe for a single byte.
                piece = d.decompress(data, remaining if remaining > 0 else 1)
            except zlib.error as exc:
                raise ProtocolError(f"bad {self.kind} encoding: {exc}") from None
            if piece:
                if remaining <= 0:
                    raise _Overflow(b"".join(out))
                self.size += len(piece)
                out.append(piece)
            if d.eof:
                self._ended = True
                data = d.unused_data
            else:
                data = d.unconsumed_tail  # non-empty only when the output limit was reached
                if not piece and len(data) == before:
                    break  # no progress (cannot happen with zlib; defensive)
        if not out:
            return b""
        return out[0] if len(out) == 1 else b"".join(out)

    def flush(self) -> bytes:
        if self._d is None:
            if not self._head:
                return b""
            # One lone byte of "deflate": not a valid stream.
            raise ProtocolError(f"bad {self.kind} encoding: truncated stream")
        if self._ended:
            return b""
        remaining = self.cap - self.size
        try:
            piece = self._d.flush(remaining + 1)
        except zlib.error as exc:
            raise ProtocolError(f"bad {self.kind} encoding: {exc}") from None
        self.size += len(piece)
        if self.size > self.cap:
            raise _Overflow(piece[:remaining])
        # A truncated stream (no end marker) keeps what was decoded, as browsers do.
        return piece


class _Overflow(Exception):
    """The decoded body went over the cap; ``args[0]`` is the last piece that still fits."""


class _Decoder:
    """The Content-Encoding chain of one response (applied in reverse order)."""

    __slots__ = ("stages", "cap", "chunks")

    def __init__(self, codings: list[str], cap: int) -> None:
        self.stages = [_Inflater(_DECODABLE[c], cap) for c in reversed(codings)]
        self.cap = cap
        self.chunks: list[bytes] = []

    @classmethod
    def for_headers(cls, values: list[str], cap: int) -> "_Decoder | None":
        codings = [c.strip().lower() for v in values for c in v.split(",")]
        codings = [c for c in codings if c and c != "identity"]
        if not codings or any(c not in _DECODABLE for c in codings):
            return None  # nothing to do, or an encoding we cannot decode: keep raw
        return cls(codings, cap)

    def _push(self, data: bytes, start: int) -> None:
        for stage in self.stages[start:]:
            if not data:
                return
            data = stage.feed(data)
        if data:
            self.chunks.append(data)

    def feed(self, data: bytes) -> None:
        try:
            self._push(data, 0)
        except _Overflow as exc:
            self._overflow(exc)

    def finish(self) -> bytes:
        try:
            for i, stage in enumerate(self.stages):
                self._push(stage.flush(), i + 1)
        except _Overflow as exc:
            self._overflow(exc)
        return self.body()

    def body(self) -> bytes:
        return self.chunks[0] if len(self.chunks) == 1 else b"".join(self.chunks)

    def _overflow(self, exc: _Overflow) -> None:
        piece = exc.args[0]
        if piece and len(self.stages) == 1:
            self.chunks.append(piece)
        raise BodyTooLarge(f"decompressed body over the {self.cap}-byte cap") from None


def _to_url(url: str) -> URL:
    """A yarl URL, sent as given when it is already plain ASCII (the frontier normalises)."""
    try:
        if url.isascii() and url.isprintable() and " " not in url:
            u = URL(url, encoded=True)
        else:
            u = URL(url)
        port = u.port  # yarl checks the port lazily
    except (ValueError, TypeError) as exc:
        raise ProtocolError(_one_line(f"invalid URL: {exc}")) from None
    if u.scheme not in ("http", "https") or not u.raw_host or port is None:
        raise ProtocolError(_one_line(f"not an http(s) URL: {url}"))
    return u


def _find(exc: BaseException, kind: type[BaseException] | tuple[type[BaseException], ...]
          ) -> BaseException | None:
    """``exc`` or the first exception of type ``kind`` in its cause/context chain."""
    seen = 0
    cur: BaseException | None = exc
    while cur is not None and seen < 8:
        if isinstance(cur, kind):
            return cur
        os_error = getattr(cur, "os_error", None)
        if isinstance(os_error, kind):
            return os_error
        cur = cur.__cause__ or cur.__context__
        seen += 1
    return None


def _os_detail(err: BaseException | None) -> str:
    if isinstance(err, ConnectionRefusedError):
        return "connection refused"
    if isinstance(err, ConnectionResetError):
        return "connection reset"
    if isinstance(err, OSError) and err.strerror:
        return err.strerror
    return str(err) or type(err).__name__


def _peer_ip(resp: aiohttp.ClientResponse) -> str | None:
    """The peer address of the response's connection.

    ``resp.connection`` is already None when the whole body came with the headers (aiohttp
    releases the connection to the pool at once), so fall back on the response's protocol,
    which still holds the transport (private attribute, hence the getattr).
    """
    conn = resp.connection
    proto = conn.protocol if conn is not None else getattr(resp, "_protocol", None)
    transport = getattr(proto, "transport", None)
    if transport is None:
        return None
    peer = transport.get_extra_info("peername")
    return str(peer[0]) if peer else None


def _host_of(url: str) -> str:
    try:
        return URL(url).raw_host or ""
    except (ValueError, TypeError):
        return ""


def _limit(seconds: float | None) -> float | None:
    """A timeout setting: 0 or less means no limit."""
    return seconds if seconds is not None and seconds > 0 else None


def _one_line(text: str, limit: int = 200) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "\u2026"


class Fetcher:
    """One HTTP hop per :meth:`get`, over a shared keep-alive pool.

    ``allowed``: the address classes the crawl may connect to (see
    :func:`skitter.netguard.allowed_classes`). ``resolver_overrides``: host -> IP, like curl's
    ``--resolve``; merged over ``config.resolve``.
    """

    def __init__(
        self,
        config: CrawlConfig,
        *,
        allowed: frozenset[str],
        resolver_overrides: dict[str, str] | None = None,
    ) -> None:
        self.config = config
        self.allowed = frozenset(allowed)
        overrides = dict(config.resolve)
        overrides.update(resolver_overrides or {})
        self.resolver = GuardedResolver(self.allowed, overrides)
        self._session: aiohttp.ClientSession | None = None
        self._closed = False
        self._default_headers = {
            "User-Agent": config.user_agent,
            "Accept": ACCEPT,
            "Accept-Encoding": ACCEPT_ENCODING,
        }

    # -- life cycle --------------------------------------------------------------------------

    def _open(self) -> aiohttp.ClientSession:
        if self._closed:
            raise RuntimeError("Fetcher is closed")
        cfg = self.config
        connector = aiohttp.TCPConnector(
            limit=max(0, cfg.concurrency),
            limit_per_host=max(0, cfg.per_host),
            resolver=self.resolver,
            use_dns_cache=False,  # the GuardedResolver caches (TTL + LRU) and guards
            # Only needed (and only accepted without a warning) on Pythons with the SSL leak.
            enable_cleanup_closed=getattr(aiohttp.connector, "NEEDS_CLEANUP_CLOSED", True),
        )
        self._session = aiohttp.ClientSession(
            connector=connector,
            timeout=aiohttp.ClientTimeout(
                total=None,  # enforced by asyncio.timeout around the whole hop
                sock_connect=_limit(cfg.connect_timeout),
                sock_read=_limit(cfg.read_timeout),
            ),
            headers=self._default_headers,
            auto_decompress=False,
            cookie_jar=aiohttp.DummyCookieJar(),
            trust_env=False,
            raise_for_status=False,
            max_line_size=_MAX_LINE,
            max_field_size=_MAX_FIELD,
        )
        return self._session

    async def __aenter__(self) -> "Fetcher":
        if self._session is None:
            self._open()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    async def close(self) -> None:
        self._closed = True
        session, self._session = self._session, None
        if session is not None:
            await session.close()
        await self.resolver.close()

    # -- one hop -----------------------------------------------------------------------------

    async def get(self, url: str, *, headers: dict[str, str] | None = None) -> FetchResult:
        """GET ``url`` (one hop, no redirects followed). Never raises but on cancellation."""
        res = FetchResult(url=url, started=time.time())
        t0 = time.monotonic()
        session = self._session or self._open()
        deadline: asyncio.Timeout | None = None
        try:
            yurl = _to_url(url)
            self.resolver.check_literal(yurl.raw_host or "")
            async with asyncio.timeout(_limit(self.config.total_timeout)) as deadline:
                await self._exchange(session, yurl, headers, res)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # every failure becomes a result; see _classify
            try:
                err = self._classify(exc, res,
                                     total_expired=deadline is not None and deadline.expired())
            except Exception as odd:  # a bug in the mapping must not kill the crawl either
                err = ProtocolError(_one_line(f"{type(exc).__name__}: {exc} ({odd!r})"))
            res.error = err.record()
            res.retryable = err.retryable
            if not res.request_headers:
                res.request_headers = self._planned_headers(url, headers)
        res.elapsed = time.monotonic() - t0
        return res

    async def _exchange(
        self,
        session: aiohttp.ClientSession,
        url: URL,
        headers: dict[str, str] | None,
        res: FetchResult,
    ) -> None:
        async with session.get(url, headers=headers, allow_redirects=False) as resp:
            try:
                res.status = resp.status
                res.reason = resp.reason or ""
                v = resp.version
                res.http_version = f"{v.major}.{v.minor}" if v is not None else "1.1"
                res.headers = [(k.decode("latin-1"), val.decode("latin-1"))
                               for k, val in resp.raw_headers]
                res.request_headers = list(resp.request_info.headers.items())
                res.ip = _peer_ip(resp)
                await self._read_body(resp, res)
            except BaseException:
                resp.close()  # drop the connection: its body is not fully read
                raise

    async def _read_body(self, resp: aiohttp.ClientResponse, res: FetchResult) -> None:
        if resp.status in (204, 304) or resp.status < 200:
            return  # no body by definition; a 304's Content-Length describes the cached copy
        cap = self.config.max_body
        declared = resp.content_length
        if declared is not None and declared > cap:
            raise BodyTooLarge(f"Content-Length {declared} over the {cap}-byte cap")
        decoder = _Decoder.for_headers(resp.headers.getall("Content-Encoding", []), cap)
        chunks: list[bytes] = []
        size = 0
        try:
            async for chunk in resp.content.iter_chunked(CHUNK_SIZE):
                size += len(chunk)
                if size > cap:
                    raise BodyTooLarge(f"body over the {cap}-byte cap")
                chunks.append(chunk)
                if decoder is not None:
                    decoder.feed(chunk)
            raw = chunks[0] if len(chunks) == 1 else b"".join(chunks)
            res.raw_body = raw
            res.body = decoder.finish() if decoder is not None else raw
        except BodyTooLarge:
            # What was read stays (at most the cap): the crawl may keep a truncated record.
            res.raw_body = b"".join(chunks)
            res.body = decoder.body() if decoder is not None else res.raw_body
            raise

    def _planned_headers(self, url: str, headers: dict[str, str] | None) -> list[tuple[str, str]]:
        """The request headers we meant to send, for a request that got no response."""
        out: list[tuple[str, str]] = []
        try:
            u = URL(url)
            if u.raw_host:
                host = u.raw_host if ":" not in u.raw_host else f"[{u.raw_host}]"
                out.append(("Host", host if u.is_default_port() else f"{host}:{u.port}"))
        except (ValueError, TypeError):
            pass
        merged = dict(self._default_headers)
        merged.update(headers or {})
        out.extend(merged.items())
        return out

    def _classify(self, exc: BaseException, res: FetchResult, *, total_expired: bool) -> FetchError:
        """Map any exception of one hop onto the FetchError tree."""
        cfg = self.config
        guard = _find(exc, GuardRefused)
        if guard is not None:
            return BlockedAddress(str(guard))
        if isinstance(exc, FetchError):
            return exc
        if total_expired:
            return FetchTimeout(f"no complete response within {cfg.total_timeout:g}s")
        if isinstance(exc, asyncio.TimeoutError):
            if _ConnTimeoutType and isinstance(exc, _ConnTimeoutType):
                return FetchTimeout(f"no connection within {cfg.connect_timeout:g}s")
            if isinstance(exc, aiohttp.ServerTimeoutError):
                return FetchTimeout(f"no byte for {cfg.read_timeout:g}s")
            return FetchTimeout(str(exc) or "timed out")
        gai = _find(exc, socket.gaierror)
        if isinstance(exc, _DNSErrorType) or gai is not None:
            detail = gai.strerror if isinstance(gai, socket.gaierror) and gai.strerror else str(exc)
            host = getattr(exc, "host", None) or _host_of(res.url)
            return DNSError(_one_line(f"{host}: {detail}"))
        if isinstance(exc, (aiohttp.ClientSSLError, aiohttp.ServerFingerprintMismatch)) \
                or _find(exc, (ssl.SSLError, ssl.CertificateError)) is not None:
            inner = getattr(exc, "os_error", None) or _find(exc, (ssl.SSLError, ssl.CertificateError))
            detail = (getattr(inner, "verify_message", None) or getattr(inner, "reason", None)
                      or str(inner or exc))
            return TLSError(_one_line(str(detail)))
        if isinstance(exc, aiohttp.ClientPayloadError):
            cause = exc.__cause__ or exc.__context__
            detail = getattr(cause, "message", None) or str(cause or exc)
            return ProtocolError(_one_line(f"bad body: {detail}"))
        if isinstance(exc, aiohttp.ServerDisconnectedError):
            if res.status is not None:
                return ProtocolError("server disconnected mid-body")
            return ConnectError("server closed the connection without a response")
        if isinstance(exc, aiohttp.ClientResponseError):
            return ProtocolError(_one_line(f"malformed response: {exc.message or exc.status}"))
        if isinstance(exc, aiohttp.ClientConnectorError):
            return ConnectError(f"{_os_detail(exc.os_error)} ({exc.host}:{exc.port})")
        if isinstance(exc, (aiohttp.InvalidURL, aiohttp.NonHttpUrlClientError)):
            return ProtocolError(f"invalid URL: {exc}")
        if isinstance(exc, OSError):  # incl. ClientOSError, ConnectionResetError
            if res.status is not None and not isinstance(exc, ConnectionRefusedError):
                return ProtocolError(f"connection lost mid-body: {_os_detail(exc)}")
            return ConnectError(_os_detail(exc))
        if isinstance(exc, aiohttp.ClientConnectionError):
            return ConnectError(str(exc) or type(exc).__name__)
        if isinstance(exc, zlib.error):
            return ProtocolError(f"bad encoding: {exc}")
        # Anything else: one odd server must not kill the crawl.
        return ProtocolError(_one_line(f"{type(exc).__name__}: {exc}"))
