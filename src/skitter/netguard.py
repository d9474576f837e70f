"""The address guard: which IP addresses the crawler may connect to.

A crawler that follows links must not be turned into a probe of the network it runs on
(SSRF): a public page that links to ``http://127.0.0.1:8080/admin`` or to a name that resolves
to ``10.0.0.1`` is refused unless the crawl was seeded in that class of address, or
``--allow-private`` was given.

* :func:`address_class` and :func:`allowed_classes` are pure.
* :class:`GuardedResolver` is the resolver the fetcher asks before it hands a URL to curl: it
  applies ``--resolve`` overrides, caches lookups (TTL + LRU bound) and drops every address whose
  class is not allowed. If nothing is left it raises :class:`GuardRefused` (an ``OSError``; the
  fetcher reports ``blocked-address``). The fetcher pins what is left for curl, so curl never
  resolves a name on its own.

IP-literal hosts need no lookup: the fetcher checks those with
:meth:`GuardedResolver.check_literal`.
"""

from __future__ import annotations

import asyncio
import functools
import ipaddress
import socket
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Protocol, TypedDict

from .urls import URLError, dns_name_problem, origin

LOOPBACK = "loopback"
PRIVATE = "private"
LINK_LOCAL = "link-local"
RESERVED = "reserved"
PUBLIC = "public"

CLASSES = frozenset({LOOPBACK, PRIVATE, LINK_LOCAL, RESERVED, PUBLIC})
#: What ``--allow-private`` allows: everything but "reserved", which is never connectable
#: on purpose (0.0.0.0 reaches the local host on Linux; multicast/documentation are not web hosts).
PRIVATE_OK = frozenset({PUBLIC, PRIVATE, LOOPBACK, LINK_LOCAL})

_N4 = ipaddress.IPv4Network
_N6 = ipaddress.IPv6Network

# Order matters only for readability: the ranges do not overlap.
_V4_TABLE: tuple[tuple[ipaddress.IPv4Network, str], ...] = (
    (_N4("0.0.0.0/8"), RESERVED),          # "this network"; 0.0.0.0 connects to localhost
    (_N4("127.0.0.0/8"), LOOPBACK),
    (_N4("10.0.0.0/8"), PRIVATE),
    (_N4("172.16.0.0/12"), PRIVATE),
    (_N4("192.168.0.0/16"), PRIVATE),
    (_N4("100.64.0.0/10"), PRIVATE),       # CGNAT shared address space (RFC 6598)
    (_N4("169.254.0.0/16"), LINK_LOCAL),   # incl. cloud metadata 169.254.169.254
    (_N4("192.0.0.0/24"), RESERVED),       # IETF protocol assignments
    (_N4("192.0.2.0/24"), RESERVED),       # TEST-NET-1
    (_N4("198.51.100.0/24"), RESERVED),    # TEST-NET-2
    (_N4("203.0.113.0/24"), RESERVED),     # TEST-NET-3
    (_N4("198.18.0.0/15"), RESERVED),      # benchmarking
    (_N4("192.88.99.0/24"), RESERVED),     # deprecated 6to4 relay anycast
    (_N4("224.0.0.0/4"), RESERVED),        # multicast
    (_N4("240.0.0.0/4"), RESERVED),        # future use, incl. 255.255.255.255 broadcast
)

_V6_TABLE: tuple[tuple[ipaddress.IPv6Network, str], ...] = (
    (_N6("::1/128"), LOOPBACK),
    (_N6("::/128"), RESERVED),             # unspecified
    (_N6("::/96"), RESERVED),              # deprecated IPv4-compatible addresses
    (_N6("100::/64"), RESERVED),           # discard-only
    (_N6("2001:db8::/32"), RESERVED),      # documentation
    (_N6("3fff::/20"), RESERVED),          # documentation (RFC 9637)
    (_N6("fc00::/7"), PRIVATE),            # unique local
    (_N6("fec0::/10"), PRIVATE),           # deprecated site-local
    (_N6("fe80::/10"), LINK_LOCAL),
    (_N6("ff00::/8"), RESERVED),           # multicast
)

_NAT64 = _N6("64:ff9b::/96")


def _classify_v4(addr: ipaddress.IPv4Address) -> str:
    for net, cls in _V4_TABLE:
        if addr in net:
            return cls
    return PUBLIC


def address_class(ip: str | ipaddress.IPv4Address | ipaddress.IPv6Address) -> str:
    """The class of one IP address: loopback, private, link-local, reserved or public.

    IPv4-mapped (``::ffff:a.b.c.d``), NAT64 (``64:ff9b::/96``) and 6to4 (``2002::/16``)
    addresses are classified by the IPv4 address they embed. Brackets and a zone id
    (``fe80::1%eth0``) are accepted. Raises ``ValueError`` for something that is not an IP.
    """
    if isinstance(ip, str):
        text = ip.strip()
        if text.startswith("[") and text.endswith("]"):
            text = text[1:-1]
        addr = ipaddress.ip_address(text)
    else:
        addr = ip
    if isinstance(addr, ipaddress.IPv4Address):
        return _classify_v4(addr)
    mapped = addr.ipv4_mapped
    if mapped is not None:
        return _classify_v4(mapped)
    if addr in _NAT64:
        return _classify_v4(ipaddress.IPv4Address(int(addr) & 0xFFFFFFFF))
    six2four = addr.sixtofour
    if six2four is not None:
        return _classify_v4(six2four)
    for net, cls in _V6_TABLE:
        if addr in net:
            return cls
    return PUBLIC


def is_ip_literal(host: str) -> bool:
    """True if ``host`` (brackets allowed) is an IPv4 or IPv6 address."""
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def legacy_ipv4(host: str) -> str | None:
    """The IPv4 address a legacy numeric host (``127.1``, ``2130706433``, ``0x7f.1``) stands for.

    ``inet_aton`` (and so some resolvers) accept these forms; they must not slip past the guard.
    Returns None for anything that is not such a form.
    """
    if not host or not all(c in "0123456789abcdefxABCDEFX." for c in host) \
            or not host[0].isdigit():
        return None
    try:
        return socket.inet_ntoa(socket.inet_aton(host))
    except OSError:
        return None


def _seed_host(url: str) -> str | None:
    try:
        return origin(url.strip())[1].rstrip(".")
    except URLError:
        return None


def allowed_classes(
    seed_urls: Iterable[str],
    allow_private: bool,
    resolved: Mapping[str, str | Iterable[str]] | None = None,
) -> frozenset[str]:
    """The address classes the crawl may connect to.

    * ``"public"`` always;
    * the class of each seed whose host is an IP literal;
    * the classes of the already-resolved addresses of seed host names: ``resolved`` maps a
      host name to one IP or to a list of IPs (pass the ``--resolve`` overrides here, and/or the
      seeds' real lookups) — this function does no I/O;
    * with ``allow_private``: every class but ``"reserved"``.

    ``"reserved"`` (0.0.0.0/8, multicast, broadcast, documentation ranges...) is never allowed.
    """
    out = set(PRIVATE_OK) if allow_private else {PUBLIC}
    lookup: dict[str, list[str]] = {}
    for name, ips in (resolved or {}).items():
        key = name.rstrip(".").lower()
        lookup[key] = [ips] if isinstance(ips, str) else list(ips)
    for url in seed_urls:
        host = _seed_host(url)
        if host is None:
            continue
        ips = [host] if is_ip_literal(host) else lookup.get(host, [])
        for ip in ips:
            try:
                cls = address_class(ip)
            except ValueError:
                continue
            if cls != RESERVED:
                out.add(cls)
    return frozenset(out)


class GuardRefused(OSError):
    """Every address of a host is in a class the crawl does not allow."""

    def __init__(self, host: str, addresses: Iterable[tuple[str, str]]) -> None:
        self.host = host
        self.addresses = tuple(addresses)  # (ip, class) pairs that were refused
        shown = ", ".join(f"{ip} ({cls})" for ip, cls in self.addresses[:4])
        if len(self.addresses) == 1 and self.addresses[0][0] == host.strip("[]"):
            message = shown  # an IP literal: "127.0.0.1 (loopback)"
        else:
            message = f"{host} -> {shown}" if shown else f"{host}: no address"
        super().__init__(message)


# (expiry on self._clock, the results or a negative answer (errno, strerror))
_CacheEntry = tuple[float, "list[ResolveResult] | tuple[int, str]"]

# getaddrinfo answers that mean "this name has no address" (cached for negative_ttl);
# anything else (EAI_AGAIN, timeouts) is not cached.
_NEGATIVE_ERRNOS = {
    getattr(socket, name) for name in ("EAI_NONAME", "EAI_NODATA", "EAI_ADDRFAMILY")
    if hasattr(socket, name)
}


class ResolveResult(TypedDict):
    """One address of a name (the shape of aiohttp's, so either resolver can be the inner one)."""

    hostname: str
    host: str
    port: int
    family: int
    proto: int
    flags: int


class Resolver(Protocol):
    """What :class:`GuardedResolver` asks for addresses: :class:`SystemResolver`, or any alike."""

    async def resolve(self, host: str, port: int = 0,
                      family: socket.AddressFamily = socket.AF_INET) -> list[ResolveResult]: ...

    async def close(self) -> None: ...


class SystemResolver:
    """The system's resolver (``getaddrinfo`` in the event loop's thread pool), TCP addresses."""

    async def resolve(self, host: str, port: int = 0,
                      family: socket.AddressFamily = socket.AF_INET) -> list[ResolveResult]:
        infos = await asyncio.get_running_loop().getaddrinfo(
            host, port, type=socket.SOCK_STREAM, family=family, flags=socket.AI_ADDRCONFIG)
        out: list[ResolveResult] = []
        for fam, _, proto, _, address in infos:
            if fam not in (socket.AF_INET, socket.AF_INET6):
                continue
            out.append({"hostname": host, "host": str(address[0]), "port": int(address[1]),
                        "family": int(fam), "proto": proto, "flags": socket.AI_NUMERICHOST})
        return out

    async def close(self) -> None:
        pass


class GuardedResolver:
    """A resolver with overrides, a TTL+LRU cache, and the address-class guard.

    ``inner`` defaults to :class:`SystemResolver` (any object with ``resolve`` and ``close``
    coroutines answering in :class:`ResolveResult` dicts will do). ``clock`` is injectable for
    tests. Concurrent lookups of one name share a single query.
    """

    def __init__(
        self,
        allowed: Iterable[str],
        overrides: Mapping[str, str] | None = None,
        *,
        ttl: float = 300.0,
        negative_ttl: float = 30.0,
        max_entries: int = 10_000,
        clock: Callable[[], float] = time.monotonic,
        inner: Resolver | None = None,
    ) -> None:
        self.allowed = frozenset(allowed)
        self.overrides: dict[str, str] = {}
        for host, ip in (overrides or {}).items():
            ip = ip.strip()
            if ip.startswith("[") and ip.endswith("]"):
                ip = ip[1:-1]
            ipaddress.ip_address(ip)  # ValueError for a bad override: fail early
            self.overrides[host.rstrip(".").lower()] = ip
        self.ttl = ttl
        self.negative_ttl = negative_ttl
        self.max_entries = max_entries
        self._clock = clock
        self._inner = inner
        self._cache: OrderedDict[tuple[str, int, int], _CacheEntry] = OrderedDict()
        self._inflight: dict[tuple[str, int, int], asyncio.Future[list[ResolveResult]]] = {}
        self.lookups = 0  # queries sent to the inner resolver (for tests and stats)

    # -- the guard ---------------------------------------------------------------------------

    def check_literal(self, host: str) -> None:
        """Raise :class:`GuardRefused` if ``host`` is an IP literal of a class not allowed.

        An IP-literal host needs no lookup, so :meth:`resolve` is not asked: call this first.
        Host names are left to :meth:`resolve`.
        """
        ip = host.strip("[]") if is_ip_literal(host) else legacy_ipv4(host)
        if ip is None:
            return
        cls = address_class(ip)
        if cls not in self.allowed:
            raise GuardRefused(host, [(ip, cls)])

    def _filter(self, host: str, results: list[ResolveResult]) -> list[ResolveResult]:
        kept: list[ResolveResult] = []
        refused: list[tuple[str, str]] = []
        for r in results:
            try:
                cls = address_class(r["host"])
            except ValueError:
                cls = RESERVED
            if cls in self.allowed:
                kept.append(r)
            else:
                refused.append((r["host"], cls))
        if not kept:
            raise GuardRefused(host, refused)
        return kept

    # -- resolution --------------------------------------------------------------------------

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        name = host.rstrip(".").lower()
        ip = self.overrides.get(name)
        if ip is not None:
            fam = socket.AF_INET6 if ":" in ip else socket.AF_INET
            result: ResolveResult = {
                "hostname": host, "host": ip, "port": port, "family": fam,
                "proto": 0, "flags": socket.AI_NUMERICHOST,
            }
            return self._filter(host, [result])
        if is_ip_literal(name):
            self.check_literal(name)
            fam = socket.AF_INET6 if ":" in name else socket.AF_INET
            return [{"hostname": host, "host": name.strip("[]"), "port": port, "family": fam,
                     "proto": 0, "flags": socket.AI_NUMERICHOST}]
        problem = dns_name_problem(name)
        if problem is not None:   # no query: getaddrinfo's IDNA codec raised a UnicodeError on it
            raise socket.gaierror(getattr(socket, "EAI_NONAME", -2), problem)
        return self._filter(host, await self._lookup(name, port, int(family)))

    async def _lookup(self, name: str, port: int, family: int) -> list[ResolveResult]:
        key = (name, port, family)
        now = self._clock()
        entry = self._cache.get(key)
        if entry is not None:
            expires, value = entry
            if expires > now:
                self._cache.move_to_end(key)
                if isinstance(value, tuple):  # a cached negative answer: (errno, strerror)
                    raise socket.gaierror(*value)
                return value
            del self._cache[key]
        fut = self._inflight.get(key)
        if fut is None:
            fut = asyncio.ensure_future(self._query(key))
            self._inflight[key] = fut
            fut.add_done_callback(functools.partial(self._query_done, key))
        # One waiter giving up (its fetch timed out) must not cancel the shared query.
        return await asyncio.shield(fut)

    def _query_done(self, key: tuple[str, int, int], fut: asyncio.Future[Any]) -> None:
        self._inflight.pop(key, None)
        if not fut.cancelled():
            fut.exception()  # mark retrieved: every waiter may have given up already

    async def _query(self, key: tuple[str, int, int]) -> list[ResolveResult]:
        name, port, family = key
        if self._inner is None:
            self._inner = SystemResolver()
        self.lookups += 1
        try:
            results = await self._inner.resolve(name, port, family=socket.AddressFamily(family))
        except socket.gaierror as exc:
            if exc.errno in _NEGATIVE_ERRNOS:
                self._store(key, (exc.errno, exc.strerror), self.negative_ttl)
            raise
        if not results:
            answer = (getattr(socket, "EAI_NONAME", -2), "no address")
            self._store(key, answer, self.negative_ttl)
            raise socket.gaierror(*answer)
        self._store(key, results, self.ttl)
        return results

    def _store(self, key: tuple[str, int, int], value: Any, ttl: float) -> None:
        if ttl <= 0 or self.max_entries <= 0:
            return
        self._cache[key] = (self._clock() + ttl, value)
        self._cache.move_to_end(key)
        while len(self._cache) > self.max_entries:
            self._cache.popitem(last=False)

    def clear(self) -> None:
        self._cache.clear()

    async def close(self) -> None:
        for fut in list(self._inflight.values()):
            fut.cancel()
        self._inflight.clear()
        if self._inner is not None:
            await self._inner.close()
