"""The fetcher: one HTTP hop, bounded in time and memory, that never raises for a bad URL.

:class:`Fetcher` drives libcurl's multi interface (pycurl's ``CurlMulti``) from the asyncio
event loop: curl tells the loop which sockets to watch and when its next timeout is due
(``M_SOCKETFUNCTION``, ``M_TIMERFUNCTION``), and the loop calls curl back when a socket is
ready. One multi handle holds the keep-alive pool for the whole crawl. :meth:`Fetcher.get`
sends one GET, never follows redirects, and always returns a
:class:`~skitter.models.FetchResult`: a failure is a result with ``error`` set (see
:mod:`skitter.errors`), never an exception; only cancellation propagates.

Why curl and not aiohttp: on the benchmark web, fetching was a quarter of the crawl process's
CPU through aiohttp; curl does the same work (HTTP/1.1 parsing, chunked transfer coding,
keep-alive, timeouts) in C, for about two thirds of the CPU a page (docs/benchmarks.md).

Names are resolved by :class:`~skitter.netguard.GuardedResolver` (overrides, TTL cache, the
address-class guard) before curl sees the URL, and handed to curl pinned
(``CURLOPT_RESOLVE``): curl never resolves a name itself, so it cannot reach an address the
guard did not pass. IP-literal hosts are checked by :meth:`GuardedResolver.check_literal`.

Bounds, all from :class:`~skitter.config.CrawlConfig`:

* ``connect_timeout``: one TCP connect; ``read_timeout``: the longest wait for a byte (curl's
  low-speed limit: less than one byte a second over that many seconds, rounded up to a whole
  second); ``total_timeout``: the whole hop (DNS, connect, headers and body): a server that
  drips a byte a second ends there.
* ``max_body``: a declared ``Content-Length`` over the cap is refused without reading; the raw
  body read is capped; the *decoded* body is capped too (gzip/deflate are decoded here in
  bounded steps as the body arrives, so a gzip bomb costs no memory beyond the cap). Over the
  cap: ``too-large``.

What goes out is what the caller asked for and nothing else: ``Host``, then ``User-Agent``,
``Accept``, ``Accept-Encoding`` and the caller's headers, over HTTP/1.1, no proxy (the
environment's proxy variables are ignored), no cookies, the path sent as given.
"""

from __future__ import annotations

import asyncio
import errno
import math
import os
import socket
import struct
import ssl
import time
import zlib
from types import TracebackType
from typing import Any, NamedTuple

import ada_url
import pycurl

from .config import CrawlConfig
from .errors import (
    BlockedAddress,
    BodyCutShort,
    BodyTooLarge,
    ConnectError,
    DNSError,
    FetchError,
    FetchTimeout,
    ProtocolError,
    TLSError,
    UnaskedCoding,
)
from .models import FetchResult
from .netguard import GuardedResolver, GuardRefused, is_ip_literal, legacy_ipv4

__all__ = ["Fetcher", "ACCEPT", "ACCEPT_ENCODING", "CHUNK_SIZE"]

ACCEPT = "text/html,application/xhtml+xml;q=0.9,*/*;q=0.5"
#: Only what :class:`_Inflater` decodes. Anything else a server sends anyway is kept raw.
ACCEPT_ENCODING = "gzip, deflate"
#: curl's receive buffer: the largest piece handed to the body callback.
CHUNK_SIZE = 65536

_DECODABLE = {"gzip": "gzip", "x-gzip": "gzip", "deflate": "deflate"}
_UNDECODABLE = frozenset({"br", "zstd", "compress", "x-compress", "pack200-gzip", "exi", "dcb", "dcz"})

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


def unasked_coding(values: list[str]) -> str | None:
    """A compression among the Content-Encoding ``values`` that the request did not accept
    (``br``, ``zstd``, ...; RFC 9110 8.4.1): the body cannot be read. None when there is none."""
    for v in values:
        for c in v.split(","):
            if c.strip().lower() in _UNDECODABLE:
                return c.strip().lower()
    return None


class _Decoder:
    """The Content-Encoding chain of one response (applied in reverse order)."""

    __slots__ = ("stages", "cap", "chunks")

    def __init__(self, codings: list[str], cap: int) -> None:
        self.stages = [_Inflater(_DECODABLE[c], cap) for c in reversed(codings)]
        self.cap = cap
        self.chunks: list[bytes] = []

    @classmethod
    def for_headers(cls, values: list[str], cap: int) -> _Decoder | None:
        codings = [c.strip().lower() for v in values for c in v.split(",")]
        codings = [c for c in codings if c and c != "identity"]
        if not codings or any(c not in _DECODABLE for c in codings):
            return None  # nothing to do, or a token that is no coding ("utf-8"): keep raw, as browsers do
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


class _Target(NamedTuple):
    """What a request needs of its URL, parsed by the WHATWG parser (ada-url) the frontier's
    canonical form comes from: ``href`` is what curl is given, ``host`` the name or address to
    resolve (IPv6 without brackets), ``port`` the port (the scheme's default if none is given),
    ``host_header`` the Host header's value."""

    href: str
    host: str
    port: int
    host_header: str


_DEFAULT_PORTS = {"http:": 80, "https:": 443}


def _target(url: str) -> _Target:
    try:
        u = ada_url.URL(url)
    except ValueError as exc:
        raise ProtocolError(_one_line(f"invalid URL: {url}: {exc}")) from None
    default = _DEFAULT_PORTS.get(u.protocol)
    if default is None or not u.hostname:
        raise ProtocolError(_one_line(f"not an http(s) URL: {url}"))
    host = u.hostname[1:-1] if u.hostname.startswith("[") else u.hostname
    return _Target(u.href, host, int(u.port) if u.port else default, u.host)


def _host_of(url: str) -> str:
    try:
        return _target(url).host
    except ProtocolError:
        return ""


def _host_port(url: str) -> str:
    try:
        t = _target(url)
    except ProtocolError:
        return ""
    return f"{t.host}:{t.port}"


def _os_detail(code: int) -> str:
    if code == errno.ECONNRESET:
        return "connection reset"
    if code == errno.ECONNREFUSED:
        return "connection refused"
    return os.strerror(code)


def _limit(seconds: float | None) -> float | None:
    """A timeout setting: 0 or less means no limit."""
    return seconds if seconds is not None and seconds > 0 else None


def _one_line(text: str, limit: int = 200) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "\u2026"


def _ca_options() -> list[tuple[int, str]]:
    """Where curl finds the trusted CA certificates: Python's own (OpenSSL's default paths).

    The libcurl inside pycurl's wheel was built elsewhere and may look in another
    distribution's place; the interpreter's ``ssl`` module knows this machine's.
    """
    paths = ssl.get_default_verify_paths()
    out: list[tuple[int, str]] = []
    for opt, path, test in ((pycurl.CAINFO, paths.cafile, os.path.isfile),
                            (pycurl.CAPATH, paths.capath, os.path.isdir)):
        if path and test(path):
            out.append((opt, path))
    if not any(opt == pycurl.CAINFO for opt, _ in out):
        try:
            import certifi
        except ImportError:
            pass
        else:
            out.append((pycurl.CAINFO, certifi.where()))
    return out


# curl error codes (curl/curl.h) by what they mean for the crawl.
_TLS_CODES = frozenset({35, 53, 54, 58, 59, 60, 64, 66, 77, 80, 82, 83, 90, 91, 98})
_CONNECT_CODES = frozenset({7, 45})
_RESET_CODES = frozenset({55, 56})


class _Transfer:
    """One request in flight: the response's header lines and body as curl hands them over.

    ``write`` is curl's body callback. It runs inside curl, so it never raises: a failure is
    kept in ``error`` and the transfer aborted by returning 0 (curl: ``CURLE_WRITE_ERROR``).
    """

    __slots__ = ("handle", "future", "cap", "lines", "chunks", "size", "decoder", "error", "unasked",
                 "parsed", "status", "reason", "version", "headers", "server_time")

    def __init__(self, handle: pycurl.Curl, future: asyncio.Future[tuple[int, str]],
                 cap: int) -> None:
        self.handle = handle
        self.future = future
        self.cap = cap
        self.lines: list[bytes] = []
        self.chunks: list[bytes] = []
        self.size = 0
        self.decoder: _Decoder | None = None
        self.error: BaseException | None = None
        self.unasked: str | None = None   # a compression the request did not accept
        self.parsed = False
        self.status: int | None = None
        self.reason = ""
        self.version = "1.1"
        self.headers: list[tuple[str, str]] = []
        self.server_time: float | None = None   # the kernel's clock: see _server_time

    def write(self, data: bytes) -> int | None:
        try:
            if not self.parsed:
                self._body_starts()
            self.size += len(data)
            if self.size > self.cap:  # curl's own cap (MAXFILESIZE) stops it first
                raise BodyTooLarge(f"body over the {self.cap}-byte cap")
            self.chunks.append(data)
            if self.decoder is not None:
                self.decoder.feed(data)
        except Exception as exc:  # kept, and reported when the transfer ends
            self.error = exc
            return 0
        return None

    def _body_starts(self) -> None:
        """The first byte of the body: the headers are complete."""
        self.parse_head()
        values = [v for k, v in self.headers if k.lower() == "content-encoding"]
        if values:
            self.decoder = _Decoder.for_headers(values, self.cap)
            # read whole and archived as sent, then an error (_complete): no page to parse
            self.unasked = unasked_coding(values)

    def parse_head(self) -> None:
        """The final response's status line and header fields, from curl's header lines.

        curl hands over every header line of every response on the connection for this
        request: interim 1xx responses first, and trailers after a chunked body. The final
        response is the last status line seen before the body (or the end); fields are kept
        raw and in order (latin-1), obsolete line folding joined with a space.
        """
        if self.parsed:
            return
        self.parsed = True
        lines = self.lines
        start = -1
        for i in range(len(lines) - 1, -1, -1):
            if lines[i].startswith(b"HTTP/"):
                start = i
                break
        if start < 0:
            return
        rows = b"".join(lines[start:]).decode("latin-1").split("\n")
        status_line = rows[0].rstrip("\r")
        proto, _, rest = status_line.partition(" ")
        code, _, reason = rest.partition(" ")
        try:
            self.status = int(code)
        except ValueError:
            return
        self.version = proto[5:] or "1.1"
        if self.version == "2":
            self.version = "2.0"
        self.reason = reason.strip()
        headers = self.headers
        for row in rows[1:]:
            line = row.rstrip("\r")
            if not line:
                break
            if line[0] in " \t":
                if headers:
                    k, v = headers[-1]
                    headers[-1] = (k, f"{v} {line.strip()}" if v else line.strip())
                continue
            name, sep, value = line.partition(":")
            if sep:
                headers.append((name.strip(), value.strip()))

    def body(self) -> bytes:
        chunks = self.chunks
        return chunks[0] if len(chunks) == 1 else b"".join(chunks)

    def release(self) -> None:
        """Drop the response's bytes (the result holds what it needs)."""
        self.chunks = []
        self.lines.clear()
        self.decoder = None


def _server_time(fd: int) -> float | None:
    """Seconds from the request's last byte sent to the response's last byte received, by the
    kernel's clock (Linux ``TCP_INFO``: ``tcpi_last_data_sent`` and ``tcpi_last_data_recv``, the
    milliseconds since each), or None where that cannot be read.

    curl's own transfer times are taken when curl handles a socket event, that is when our event
    loop gets round to it: on a busy crawler a response's bytes wait in the socket for a loop
    iteration, and curl counts that wait as the server's (a 0.7 ms server measured 3 ms and
    more). The kernel stamps the segments as they arrive. Its clock ticks in jiffies (4 ms at
    HZ=250): a faster server reads 0 or one tick, in proportion to its time, so the average is
    right, which is what a delay of ten times the response time needs. Read when curl reports
    the transfer done, before the connection can carry another request."""
    if fd < 0 or _TCP_INFO is None:
        return None
    try:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, 0, fd)   # no syscall: fd as given
        try:
            info = sock.getsockopt(socket.IPPROTO_TCP, _TCP_INFO, _TCP_TIMES.size + 44)
        finally:
            sock.detach()   # curl owns the socket
    except OSError:
        return None
    if len(info) < _TCP_TIMES.size + 44:
        return None
    last_sent, _, last_recv = _TCP_TIMES.unpack_from(info, 44)
    return max(0, last_sent - last_recv) / 1000.0


_TCP_INFO = getattr(socket, "TCP_INFO", None)
# struct tcp_info: 8 bytes of u8 fields, 9 u32 fields, then tcpi_last_data_sent (offset 44),
# tcpi_last_ack_sent, tcpi_last_data_recv (52), in milliseconds (linux/tcp.h, stable since 2.6)
_TCP_TIMES = struct.Struct("=III")


class _CurlLoop:
    """One ``CurlMulti`` driven by an asyncio loop (curl's socket and timer callbacks)."""

    def __init__(self, loop: asyncio.AbstractEventLoop, total: int, per_host: int) -> None:
        self.loop = loop
        self.multi = m = pycurl.CurlMulti()
        m.setopt(pycurl.M_SOCKETFUNCTION, self._on_socket)
        m.setopt(pycurl.M_TIMERFUNCTION, self._on_timer)
        if total > 0:
            m.setopt(pycurl.M_MAX_TOTAL_CONNECTIONS, total)
        if per_host > 0:
            m.setopt(pycurl.M_MAX_HOST_CONNECTIONS, per_host)
        self._watched: dict[int, int] = {}  # fd -> 1 read, 2 write, 3 both
        self._timer: asyncio.TimerHandle | None = None
        self.active: dict[pycurl.Curl, _Transfer] = {}
        self.closed = False

    def _on_socket(self, what: int, fd: int, multi: Any, data: Any) -> None:
        loop = self.loop
        old = self._watched.get(fd, 0)
        want = 0 if what == pycurl.POLL_REMOVE else what & 3  # POLL_IN 1, OUT 2, INOUT 3
        if want & 1 and not old & 1:
            loop.add_reader(fd, self._act, fd, pycurl.CSELECT_IN)
        elif old & 1 and not want & 1:
            loop.remove_reader(fd)
        if want & 2 and not old & 2:
            loop.add_writer(fd, self._act, fd, pycurl.CSELECT_OUT)
        elif old & 2 and not want & 2:
            loop.remove_writer(fd)
        if want:
            self._watched[fd] = want
        else:
            self._watched.pop(fd, None)

    def _on_timer(self, ms: int) -> None:
        # Called from inside curl: act later, from the loop (curl must not be re-entered).
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if ms >= 0:
            self._timer = self.loop.call_later(ms / 1000.0, self._act,
                                               pycurl.SOCKET_TIMEOUT, 0)

    def _act(self, fd: int, event: int) -> None:
        if self.closed:
            return
        multi = self.multi
        while True:
            ret, _ = multi.socket_action(fd, event)
            if ret != pycurl.E_CALL_MULTI_PERFORM:
                break
        while True:
            queued, ok, failed = multi.info_read()
            for handle in ok:
                self._done(handle, 0, "")
            for handle, code, message in failed:
                self._done(handle, code, message)
            if not queued:
                break

    def _done(self, handle: pycurl.Curl, code: int, message: str) -> None:
        transfer = self.active.get(handle)
        if transfer is not None and not code:
            # now, before the connection can carry another request (see _server_time)
            transfer.server_time = _server_time(handle.getinfo(pycurl.ACTIVESOCKET))
        self.multi.remove_handle(handle)
        transfer = self.active.pop(handle, None)
        if transfer is not None and not transfer.future.done():
            transfer.future.set_result((code, message))

    def add(self, transfer: _Transfer) -> None:
        self.active[transfer.handle] = transfer
        self.multi.add_handle(transfer.handle)

    def drop(self, transfer: _Transfer) -> None:
        """Abandon a transfer (its caller was cancelled): curl closes its connection."""
        if self.active.pop(transfer.handle, None) is not None:
            self.multi.remove_handle(transfer.handle)

    def close(self) -> None:
        self.closed = True
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        for handle in list(self.active):
            self.multi.remove_handle(handle)
            self.active.pop(handle).future.cancel()
        self.multi.close()  # closes the pooled connections (POLL_REMOVE for each)
        for fd in list(self._watched):
            self._on_socket(pycurl.POLL_REMOVE, fd, None, None)


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
        self._curl: _CurlLoop | None = None
        self._closed = False
        self._default_headers = {
            "User-Agent": config.user_agent,
            "Accept": ACCEPT,
            "Accept-Encoding": ACCEPT_ENCODING,
        }
        self._default_lines = [f"{k}: {v}" for k, v in self._default_headers.items()]
        self._free: list[pycurl.Curl] = []
        self._literals: dict[str, bool] = {}  # host -> an allowed IP literal (no lookup)
        self._ca = _ca_options()

    # -- life cycle --------------------------------------------------------------------------

    def _open(self) -> _CurlLoop:
        if self._closed:
            raise RuntimeError("Fetcher is closed")
        cfg = self.config
        self._curl = _CurlLoop(asyncio.get_running_loop(), max(0, cfg.concurrency),
                               max(0, cfg.per_host))
        return self._curl

    async def __aenter__(self) -> Fetcher:
        if self._curl is None:
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
        curl, self._curl = self._curl, None
        if curl is not None:
            curl.close()
        for handle in self._free:
            handle.close()
        self._free.clear()
        await self.resolver.close()

    def _handle(self) -> pycurl.Curl:
        """A curl easy handle with the crawl's fixed options (reused across requests)."""
        if self._free:
            return self._free.pop()
        cfg = self.config
        c = pycurl.Curl()
        c.setopt(pycurl.NOSIGNAL, 1)
        c.setopt(pycurl.PROTOCOLS, pycurl.PROTO_HTTP | pycurl.PROTO_HTTPS)
        c.setopt(pycurl.FOLLOWLOCATION, 0)
        c.setopt(pycurl.HTTP_VERSION, pycurl.CURL_HTTP_VERSION_1_1)
        c.setopt(pycurl.PROXY, "")  # never the environment's proxy
        c.setopt(pycurl.PATH_AS_IS, 1)  # the frontier normalised the path: send it as it is
        c.setopt(pycurl.BUFFERSIZE, CHUNK_SIZE)
        c.setopt(pycurl.MAXFILESIZE_LARGE, cfg.max_body)
        connect = _limit(cfg.connect_timeout)
        if connect is not None:
            c.setopt(pycurl.CONNECTTIMEOUT_MS, max(1, int(connect * 1000)))
        total = _limit(cfg.total_timeout)
        if total is not None:
            c.setopt(pycurl.TIMEOUT_MS, max(1, int(total * 1000)))
        read = _limit(cfg.read_timeout)
        if read is not None:
            c.setopt(pycurl.LOW_SPEED_LIMIT, 1)
            c.setopt(pycurl.LOW_SPEED_TIME, max(1, math.ceil(read)))
        for opt, path in self._ca:
            c.setopt(opt, path)
        return c

    # -- one hop -----------------------------------------------------------------------------

    async def get(self, url: str, *, headers: dict[str, str] | None = None) -> FetchResult:
        """GET ``url`` (one hop, no redirects followed). Never raises but on cancellation."""
        res = FetchResult(url=url, started=time.time())
        t0 = time.monotonic()
        curl = self._curl or self._open()
        try:
            await self._exchange(curl, url, headers, res, t0)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # every failure becomes a result; see _classify
            try:
                err = self._classify(exc, res)
            except Exception as odd:  # a bug in the mapping must not kill the crawl either
                err = ProtocolError(_one_line(f"{type(exc).__name__}: {exc} ({odd!r})"))
            res.error = err.record()
            res.retryable = err.retryable
            if not res.request_headers:
                res.request_headers = self._planned_headers(url, headers)
        res.elapsed = time.monotonic() - t0
        return res

    async def _resolve(self, u: _Target) -> list[str] | None:
        """``+host:port:addr,...`` for curl's resolve list, or None for an IP-literal host."""
        host = u.host
        literal = self._literals.get(host)
        if literal is None:
            self.resolver.check_literal(host)  # GuardRefused: not cached, raised every time
            literal = is_ip_literal(host) or legacy_ipv4(host) is not None
            if len(self._literals) >= 4096:
                self._literals.clear()
            self._literals[host] = literal
        if literal:
            return None  # an address (legacy forms too: checked above, curl parses them)
        port = u.port
        timeout = _limit(self.config.total_timeout)
        try:
            async with asyncio.timeout(timeout):
                found = await self.resolver.resolve(host, port, socket.AF_UNSPEC)
        except TimeoutError:
            raise FetchTimeout(f"no address for {host} within {timeout:g}s") from None
        addrs = ",".join(f"[{r['host']}]" if ":" in r["host"] else r["host"] for r in found)
        # "+": the entry expires from curl's DNS cache like a looked-up one (60 s), so a crawl
        # of a million hosts does not keep a million pinned names.
        return [f"+{host}:{port}:{addrs}"]

    async def _exchange(self, curl: _CurlLoop, url: str, headers: dict[str, str] | None,
                        res: FetchResult, t0: float) -> None:
        u = _target(url)
        pinned = await self._resolve(u)
        handle = self._handle()
        total = _limit(self.config.total_timeout)
        shortened: float | None = None   # the hop's timeout, if curl was given less for this one
        if pinned is not None and total is not None:
            looked_up = time.monotonic() - t0
            if looked_up > 0.001:  # a lookup took time: curl gets what is left of the whole hop
                handle.setopt(pycurl.TIMEOUT_MS, max(1, int((total - looked_up) * 1000)))
                shortened = total
        transfer = _Transfer(handle, curl.loop.create_future(), self.config.max_body)
        handle.setopt(pycurl.URL, u.href)
        handle.setopt(pycurl.WRITEFUNCTION, transfer.write)
        handle.setopt(pycurl.HEADERFUNCTION, transfer.lines.append)
        if headers:
            merged = dict(self._default_headers)
            merged.update(headers)
            sent = list(merged.items())
            handle.setopt(pycurl.HTTPHEADER, [f"{k}: {v}" for k, v in sent])
        else:
            sent = list(self._default_headers.items())
            handle.setopt(pycurl.HTTPHEADER, self._default_lines)
        if pinned is not None:
            handle.setopt(pycurl.RESOLVE, pinned)
        res.request_headers = [("Host", u.host_header), *sent]
        curl.add(transfer)
        try:
            code, message = await transfer.future
        except asyncio.CancelledError:
            curl.drop(transfer)
            handle.close()
            raise
        try:
            self._complete(transfer, code, message, res)
        finally:
            if pinned is not None:
                handle.setopt(pycurl.RESOLVE, [])
            if shortened is not None:
                handle.setopt(pycurl.TIMEOUT_MS, max(1, int(shortened * 1000)))
            transfer.release()  # the idle handle's callbacks still point at it
            self._free.append(handle)

    def _complete(self, transfer: _Transfer, code: int, message: str, res: FetchResult) -> None:
        """The result of a finished transfer: status, headers, body, or the error it ended on."""
        handle = transfer.handle
        transfer.parse_head()
        res.status = transfer.status
        res.reason = transfer.reason
        res.http_version = transfer.version
        res.headers = transfer.headers
        res.ip = handle.getinfo(pycurl.PRIMARY_IP) or None
        if res.status is not None:   # a response came: how long the server took (_server_time)
            res.response_time = transfer.server_time
            if res.response_time is None:   # the connection is gone: curl's clock, lag included
                res.response_time = max(0.0, handle.getinfo(pycurl.TOTAL_TIME) - handle.getinfo(pycurl.PRETRANSFER_TIME))
        if transfer.error is not None:
            self._keep_body(transfer, res)
            raise transfer.error
        if code:
            self._keep_body(transfer, res)
            raise _CurlError(code, message, handle.getinfo(pycurl.OS_ERRNO))
        raw = transfer.body()
        res.raw_body = raw
        if transfer.unasked is not None:   # whole, and unreadable: archived, not parsed
            res.body = b""
            raise UnaskedCoding(transfer.unasked)
        res.body = transfer.decoder.finish() if transfer.decoder is not None else raw

    @staticmethod
    def _keep_body(transfer: _Transfer, res: FetchResult) -> None:
        """What was read before a failure stays (at most the cap): a truncated record."""
        res.raw_body = transfer.body()
        decoder = transfer.decoder
        res.body = decoder.body() if decoder is not None else res.raw_body

    def _planned_headers(self, url: str, headers: dict[str, str] | None) -> list[tuple[str, str]]:
        """The request headers we meant to send, for a request that got no response."""
        out: list[tuple[str, str]] = []
        try:
            out.append(("Host", _target(url).host_header))
        except ProtocolError:
            pass
        merged = dict(self._default_headers)
        merged.update(headers or {})
        out.extend(merged.items())
        return out

    def _classify(self, exc: BaseException, res: FetchResult) -> FetchError:
        """Map any exception of one hop onto the FetchError tree."""
        if isinstance(exc, GuardRefused):
            return BlockedAddress(str(exc))
        if isinstance(exc, FetchError):
            return exc
        if isinstance(exc, _CurlError):
            return self._classify_curl(exc, res)
        if isinstance(exc, socket.gaierror):
            detail = exc.strerror or str(exc)
            return DNSError(_one_line(f"{_host_of(res.url)}: {detail}"))
        if isinstance(exc, zlib.error):
            return ProtocolError(f"bad encoding: {exc}")
        if isinstance(exc, OSError):
            return ConnectError(_one_line(exc.strerror or str(exc)))
        # Anything else: one odd server must not kill the crawl.
        return ProtocolError(_one_line(f"{type(exc).__name__}: {exc}"))

    def _classify_curl(self, exc: _CurlError, res: FetchResult) -> FetchError:
        cfg = self.config
        code, message = exc.code, exc.message
        low = message.lower()
        got_status = res.status is not None
        if code == 28:  # CURLE_OPERATION_TIMEDOUT
            if "too slow" in low:   # curl's low-speed limit: its average, not the time since a byte
                return FetchTimeout(f"under 1 byte/s for {cfg.read_timeout:g}s")
            if not got_status and ("connect" in low or "connection timed out" in low):
                return FetchTimeout(f"no connection within {cfg.connect_timeout:g}s")
            return FetchTimeout(f"no complete response within {cfg.total_timeout:g}s")
        if code == 63:  # CURLE_FILESIZE_EXCEEDED
            declared = res.header("content-length") if got_status else None
            if declared is not None and not res.raw_body:
                return BodyTooLarge(f"Content-Length {declared.strip()} over the "
                                    f"{cfg.max_body}-byte cap")
            return BodyTooLarge(f"body over the {cfg.max_body}-byte cap")
        if code in _CONNECT_CODES:
            if exc.os_errno == errno.ECONNREFUSED:
                return ConnectError(f"connection refused ({_host_port(res.url)})")
            return ConnectError(_one_line(message))
        if code == 52:  # CURLE_GOT_NOTHING
            return ConnectError("server closed the connection without a response")
        if code in _RESET_CODES:
            if not exc.os_errno:  # curl's own complaint about what it read (bad chunking)
                return ProtocolError(_one_line(f"bad body: {message}"))
            detail = _os_detail(exc.os_errno)
            if got_status:
                return BodyCutShort(f"connection lost mid-body: {detail}")
            return ConnectError(detail)
        if code == 18:  # CURLE_PARTIAL_FILE
            return BodyCutShort("server disconnected mid-body")
        if code in _TLS_CODES:
            return TLSError(_one_line(message))
        if code in (5, 6):  # proxy / host resolution (not reached: names are pinned)
            return DNSError(_one_line(message))
        if code == 3:
            return ProtocolError(_one_line(f"invalid URL: {message}"))
        if code == 100:  # CURLE_TOO_LARGE (curl 8.6): in a response, a header over curl's limit
            return ProtocolError("response headers too large (over curl's limit)")
        return ProtocolError(_one_line(f"malformed response: {message}" if message
                                       else f"curl error {code}"))


class _CurlError(Exception):
    """A transfer curl ended with an error: its code, message and the OS errno."""

    def __init__(self, code: int, message: str, os_errno: int) -> None:
        super().__init__(code, message)
        self.code = code
        self.message = message
        self.os_errno = os_errno
