"""Pure URL handling: resolve, canonicalise, fingerprint, host keys, scope.

No I/O happens here (no asyncio, sqlite3 or HTTP client): every function is a pure function of
its arguments, and this module runs for every link the parser extracts, so it is written for
speed: one WHATWG parse (ada-url, C++, called through its C API) per call, the serialisation
split with ``str.find`` instead of several getter calls, and string work only when a cheap test
(``"%" in s``) says it is needed.

Resolution
    :func:`resolve` follows the WHATWG URL Standard exactly (ada passes every case of the
    web-platform-tests data in ``tests/data/url_cases*.json``): leading and trailing C0 controls
    and spaces are stripped, tabs and newlines removed, backslashes treated as slashes in
    special URLs, and so on. It returns the full serialisation (fragment and userinfo included)
    or ``None`` when the reference cannot be resolved.

Canonical form (:func:`canonicalize`), applied to an absolute http(s) URL:

1. WHATWG parse. This already lower-cases the scheme and the host, maps an internationalised
   host to punycode (UTS #46 / IDNA), parses IPv4 in all its forms to dotted decimal and
   compresses IPv6, resolves ``.`` and ``..`` segments (also their ``%2e`` spellings), drops the
   default port (80 for http, 443 for https; ``:443`` on http is kept), gives ``/`` for an empty
   path, and percent-encodes what must be encoded (spaces, non-ASCII, controls).
2. The fragment is dropped (it never reaches the server).
3. Userinfo (``user:pass@``) is dropped: it is not part of the resource's identity, and a
   crawler must not store credentials it finds in links.
4. Percent-encoding is normalised in the path and the query: the hex digits of every escape are
   upper-cased (``%2f`` -> ``%2F``) and escapes of unreserved characters (``A-Z a-z 0-9 - . _
   ~``, RFC 3986 section 2.3) are decoded (``%7E`` -> ``~``, ``%41`` -> ``A``). Every other escape
   is kept as it is, notably ``%2F`` (an encoded slash is not a path separator), ``%25``,
   ``%26``, ``%3D`` and ``%2B``; a ``%`` not followed by two hex digits is left alone (WHATWG
   does the same), and so is an escape of a hex digit right after such a stray ``%``: decoding
   ``%2%61`` to ``%2a`` would make a new escape, change the meaning and break idempotence.
   ``+`` in the query is not touched (it means a space only to form decoders).
5. A ``?`` with an empty query is removed (``/a?`` -> ``/a``).
6. Query parameters keep their order, unless ``sort_query=True``: then the ``&``-separated
   parameters are sorted by key (a stable sort, so repeated keys keep their relative order) and
   empty parameters (``a=1&&b=2``) are dropped.
7. A canonical URL longer than ``max_length`` characters is rejected (a crawler-trap guard).

Deliberately NOT done, because the resources may differ and guessing wrong merges distinct
pages or splits one page into two: ``/index.html`` (or ``default.asp`` ...) is not stripped,
``www.`` is not stripped, the trailing slash is not added or removed beyond what WHATWG does
for the empty path, the query is not stripped of "tracking" parameters, and case in the path
and query is kept. Duplicate content that survives canonicalisation is the dedup stage's job.

The canonical form is idempotent: ``canonicalize(canonicalize(u)) == canonicalize(u)`` (the
WHATWG serialisation re-parses to itself for http(s) URLs, and the decoded characters are ones
WHATWG never encodes); the tests check it with Hypothesis.

Hosts
    :func:`host_key` is the politeness key: the host plus ``:port`` when the port is not the
    scheme's default. :func:`host_of` is the host alone. IPv6 hosts keep their brackets
    (``[::1]``), as WHATWG serialises them. :func:`registrable_domain` is the eTLD+1 by the
    Public Suffix List (ICANN and private sections, so ``a.github.io`` and ``b.github.io`` are
    different sites), read from the copy bundled in the ``publicsuffixlist`` package, never
    downloaded.
"""

from __future__ import annotations

import ipaddress
from collections import Counter
from functools import lru_cache

import ada_url
from ada_url._ada_wrapper import ffi as _ffi
from ada_url._ada_wrapper import lib as _lib

from .urlhash import fingerprint   # (a module of its own: see there)

__all__ = [
    "URLError",
    "canonicalize",
    "fingerprint",
    "host_key",
    "host_of",
    "in_scope",
    "path_depth_and_repeats",
    "registrable_domain",
    "resolve",
]


class URLError(ValueError):
    """A URL that cannot be parsed, is not http(s) where that is required, or is too long."""


# --- ada, bound once -------------------------------------------------------------------------
# The C API through cffi directly: ada_url.URL costs a Python object, a finaliser and one C call
# per attribute; here a parse costs one ada_parse, one ada_get_href and one ada_free.

_parse = _lib.ada_parse
_parse_with_base = _lib.ada_parse_with_base
_free = _lib.ada_free
_get_href = _lib.ada_get_href  # an empty string for a URL that failed to parse
_unpack = _ffi.unpack

# --- percent-encoding normalisation ----------------------------------------------------------

_UNRESERVED = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
_HEXDIGITS = frozenset("0123456789abcdefABCDEF")


def _build_escape_table() -> dict[str, str]:
    """Map the two characters after each ``%`` to their normal form, for every hex pair."""
    table = {}
    for hi in _HEXDIGITS:
        for lo in _HEXDIGITS:
            pair = hi + lo
            char = chr(int(pair, 16))
            table[pair] = char if char in _UNRESERVED else "%" + pair.upper()
    return table


_ESCAPES = _build_escape_table()


def _normalize_escapes(s: str) -> str:
    """Upper-case escape hex digits and decode escaped unreserved characters.

    The caller checks ``"%" in s`` first, so strings without escapes cost nothing.
    """
    parts = s.split("%")
    out = [parts[0]]
    get = _ESCAPES.get
    open_stray = False  # the previous '%' is a stray one still missing its hex digits
    for part in parts[1:]:
        repl = get(part[:2])
        if repl is None:  # a '%' not followed by two hex digits: leave it
            out.append("%")
            out.append(part)
            open_stray = not part or (len(part) == 1 and part in _HEXDIGITS)
            continue
        if open_stray and repl in _HEXDIGITS:
            # Decoding would complete the stray escape before it ("%2%61" -> "%2a"), making a
            # new escape that means something else and that a second pass would change: keep.
            repl = "%" + part[:2].upper()
        out.append(repl)
        out.append(part[2:])
        open_stray = False
    return "".join(out)


def _query_key(param: str) -> str:
    return param.partition("=")[0]


def _sort_query(query: str) -> str:
    """Stable-sort ``?a=1&b=2`` style parameters by key; empty parameters are dropped."""
    params = [p for p in query[1:].split("&") if p]
    if not params:
        return ""
    params.sort(key=_query_key)
    return "?" + "&".join(params)


# --- parsing helpers -------------------------------------------------------------------------


def _short(url: object) -> str:
    """``url`` for an error message: repr, cut to a readable length."""
    r = repr(url)
    return r if len(r) <= 120 else r[:117] + "..."


def _encode(s: str) -> bytes | None:
    try:
        return s.encode()
    except (UnicodeEncodeError, AttributeError):  # lone surrogates, or not a str
        return None


def _href(url: str) -> str:
    """WHATWG serialisation of the absolute URL ``url``, or ``""`` if it does not parse."""
    b = _encode(url)
    if b is None:
        return ""
    obj = _parse(b, len(b))
    try:
        s = _get_href(obj)
        n = s.length
        return _unpack(s.data, n).decode() if n else ""
    finally:
        _free(obj)


def _authority_start(href: str) -> int:
    """Where the authority of a serialised http(s) URL starts, or -1 for another scheme."""
    if href.startswith("https://"):
        return 8
    if href.startswith("http://"):
        return 7
    return -1


# In the WHATWG serialisation of an http(s) URL the delimiters are unambiguous, so plain
# str.find splits it: the path always starts with "/" and the authority contains no "/" (it is
# percent-encoded in userinfo and forbidden in hosts); at most one "@" ends the userinfo; "?" is
# percent-encoded in the path and "#" in the query. That is cheaper than asking ada for its
# component offsets through cffi.


@lru_cache(maxsize=4096)   # a URL's questions come close together; 65,536 entries cost ~15 MB
def _split(url: str) -> tuple[str, int, int, int, int]:
    """Parse ``url`` once: (href, host_start, port_start, path_start, path_end).

    Memoised: the link filter, the politeness key and the scope test ask about the same URL in
    turn, and a site's navigation links recur on every page.

    ``href[host_start:port_start]`` is the host, ``href[port_start:path_start]`` is ``:port``
    or empty, ``href[path_start:path_end]`` the path. Raises :class:`URLError` if ``url`` does
    not parse or has no host.
    """
    href = _href(url)
    if not href:
        raise URLError(f"not a valid URL: {_short(url)}")
    hs = _authority_start(href)
    if hs < 0:  # not http(s): rare here; let ada find the parts
        return _split_other(url)
    ps = href.find("/", hs)
    at = href.find("@", hs, ps)
    if at >= 0:
        hs = at + 1
    if href.startswith("[", hs):
        he = href.index("]", hs) + 1
    else:
        he = href.find(":", hs, ps)
        if he < 0:
            he = ps
    end = href.find("#", ps)
    if end < 0:
        end = len(href)
    pe = href.find("?", ps, end)
    if pe < 0:
        pe = end
    return href, hs, he, ps, pe


def _split_other(url: str) -> tuple[str, int, int, int, int]:
    """:func:`_split` for a scheme other than http(s), through ada_url's attribute getters."""
    parsed = ada_url.URL(url)
    host = parsed.host
    if not host:
        raise URLError(f"URL has no host: {_short(url)}")
    hostname = parsed.hostname
    pathname = parsed.pathname
    href = host + pathname
    return href, 0, len(hostname), len(host), len(href)


# --- public API ------------------------------------------------------------------------------


def resolve(base: str | None, href: str) -> str | None:
    """Resolve ``href`` against the absolute URL ``base`` as WHATWG does.

    Returns the serialised result, or ``None`` when it cannot be resolved (or ``base`` is not a
    valid absolute URL). With ``base=None`` ``href`` is parsed on its own, as an absolute URL.
    Never raises for any pair of strings.
    """
    if base is None:
        return _href(href) or None
    hb = _encode(href)
    bb = _encode(base)
    if hb is None or bb is None:
        return None
    obj = _parse_with_base(hb, len(hb), bb, len(bb))
    try:
        s = _get_href(obj)
        n = s.length
        return _unpack(s.data, n).decode() if n else None
    finally:
        _free(obj)


def canonicalize(url: str, *, max_length: int = 2048, sort_query: bool = False) -> str:
    """The canonical form of the absolute http(s) URL ``url`` (see the module docstring).

    Raises :class:`URLError` if ``url`` does not parse, is not http or https, has no host, or
    its canonical form is longer than ``max_length``.
    """
    try:  # _href() inlined: this is the hottest function of the crawler
        b = url.encode()
    except (UnicodeEncodeError, AttributeError):
        raise URLError(f"not a valid URL: {_short(url)}") from None
    obj = _parse(b, len(b))
    try:
        sv = _get_href(obj)
        n = sv.length
        href = _unpack(sv.data, n).decode() if n else ""
    finally:
        _free(obj)
    if not href:
        raise URLError(f"not a valid URL: {_short(url)}")
    if href.startswith("https://"):
        hs = 8
    elif href.startswith("http://"):
        hs = 7
    else:
        raise URLError(f"not an http(s) URL: {_short(url)}")

    if "%" not in href and "@" not in href:
        # The common case: no escapes to normalise and no userinfo (nor any "@" at all), so
        # the first "#" starts the fragment and the first "?" the query.
        end = href.find("#")
        if end >= 0:
            href = href[:end]
        qs = href.find("?")
        if qs >= 0:
            if sort_query:
                href = href[:qs] + _sort_query(href[qs:])
            elif qs == len(href) - 1:  # a lone "?"
                href = href[:-1]
        if len(href) > max_length:
            raise URLError(f"URL longer than {max_length} characters: {_short(href)}")
        return href

    ps = href.find("/", hs)
    if ps <= hs:  # WHATWG rejects empty http(s) hosts, and the path starts with "/": a guard
        raise URLError(f"URL has no host: {_short(url)}")
    at = href.find("@", hs, ps)
    if at >= 0:  # userinfo: drop it
        head = href[:hs] + href[at + 1 : ps]
    else:
        head = href[:ps]

    end = href.find("#", ps)
    if end < 0:
        end = len(href)
    qs = href.find("?", ps, end)
    if qs < 0:
        path = href[ps:end]
        query = ""
    else:
        path = href[ps:qs]
        query = href[qs:end]
        if "%" in query:
            query = _normalize_escapes(query)
        if sort_query:
            query = _sort_query(query)
        elif len(query) == 1:  # a lone "?"
            query = ""
    if "%" in path:
        path = _normalize_escapes(path)

    result = head + path + query
    if len(result) > max_length:
        raise URLError(f"URL longer than {max_length} characters: {_short(result)}")
    return result


def host_key(url: str) -> str:
    """Politeness key of the absolute URL ``url``: ``host`` or ``host:port`` when the port is
    not the scheme's default; lower-case. Raises :class:`URLError` if there is no host."""
    href, hs, _, ps, _ = _split(url)
    return href[hs:ps].lower()


DEFAULT_PORTS = {"http": 80, "https": 443}


def origin(url: str) -> tuple[str, str, int]:
    """``(scheme, host, port)`` of the absolute http(s) URL ``url``: lower-case, the port filled
    in when it is the scheme's default, an IPv6 host without its brackets (RFC 9309's unit: one
    robots.txt per origin). Raises :class:`URLError` for another scheme or no host."""
    href, hs, he, ps, _ = _split(url)
    scheme = "https" if href.startswith("https://") else "http" if href.startswith("http://") else ""
    if not scheme:
        raise URLError(f"not an http(s) URL: {_short(url)}")
    host = href[hs:he].lower()
    if host.startswith("["):
        host = host[1:-1]
    return scheme, host, int(href[he + 1:ps]) if he < ps else DEFAULT_PORTS[scheme]


def host_of(url: str) -> str:
    """Host name of the absolute URL ``url``, without port, lower-case (IPv6 in brackets).
    Raises :class:`URLError` if there is no host."""
    href, hs, he, _, _ = _split(url)
    return href[hs:he].lower()


@lru_cache(maxsize=1)
def _public_suffix_list():  # loaded on first use (about 50 ms), not at import
    from publicsuffixlist import PublicSuffixList

    return PublicSuffixList()


def header_url(value: str) -> str:
    """A URL from a header the fetcher decoded as Latin-1 (RFC 9110's default): its bytes read as
    UTF-8 when they are (browsers do so; a server sending ``Location: /café`` in UTF-8 gave
    ``/caf%C3%83%C2%A9``), else as they were."""
    if value.isascii():
        return value
    try:
        return value.encode("latin-1").decode("utf-8")
    except (UnicodeEncodeError, UnicodeDecodeError):
        return value


def dns_name_problem(host: str) -> str | None:
    """What makes ``host`` (canonical: lower case, IDNA-encoded) no DNS name, or None. The WHATWG
    parser takes empty labels and labels of any length; DNS does not (RFC 1035 2.3.4: labels of
    1-63 octets, names of at most 253), and Python's resolver raised a UnicodeError on them, which
    the crawl recorded as a protocol error. IP literals are no names: None."""
    if _is_ip(host):
        return None
    name = host[:-1] if host.endswith(".") else host
    if len(name) > 253:
        return "a host name longer than 253 characters"
    for label in name.split("."):
        if not label:
            return "an empty label in the host name"
        if len(label) > 63:
            return "a label of the host name longer than 63 characters"
    return None


def _is_ip(host: str) -> bool:
    if host.startswith("["):
        return True
    last = host.rstrip(".").rpartition(".")[2]
    if not last or not (last[0].isdigit()):  # WHATWG: a numeric last label means IPv4
        return False
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return last.isdigit() or last.lower().startswith("0x")
    return True


@lru_cache(maxsize=65536)
def registrable_domain(host: str) -> str:
    """eTLD+1 of ``host`` by the Public Suffix List (``www.example.co.uk`` ->
    ``example.co.uk``), lower-case, without a trailing dot.

    IP addresses, single-label hosts, and hosts that are themselves public suffixes return
    themselves (lower-cased).
    """
    host = host.lower()
    if not host or _is_ip(host):
        return host
    name = host.rstrip(".")
    if "." not in name:
        return name
    return _public_suffix_list().privatesuffix(name) or name


def in_scope(
    url: str, scope: str, seed_hosts: frozenset[str], seed_domains: frozenset[str]
) -> bool:
    """Whether ``url`` is inside the crawl's scope.

    ``scope`` is ``"host"`` (the URL's host is one of ``seed_hosts``, built with
    :func:`host_of`; the port does not matter), ``"domain"`` (its registrable domain is one of
    ``seed_domains``, built with :func:`registrable_domain`) or ``"any"``. Raises :class:`URLError` if the
    URL has no host and ``ValueError`` for an unknown scope.
    """
    if scope == "any":
        return True
    if scope == "host":
        return host_of(url) in seed_hosts
    if scope == "domain":
        return registrable_domain(host_of(url)) in seed_domains
    raise ValueError(f"unknown scope {scope!r} (expected host, domain or any)")


def path_depth_and_repeats(url: str) -> tuple[int, int]:
    """(number of path segments, highest count of any one non-empty segment) of ``url``.

    ``/`` has depth 0, ``/a/b`` and ``/a/b/`` depth 2 (a trailing slash opens no segment),
    ``/a//b`` depth 3. ``/a/b/a/b/a`` has 3 repeats (of ``a``). Used by the trap filter.
    """
    href, _, _, ps, pe = _split(url)
    path = href[ps:pe]
    if path.startswith("/"):
        path = path[1:]
    if path.endswith("/"):
        path = path[:-1]
    if not path:
        return 0, 0
    segments = path.split("/")
    n = len(segments)
    distinct = set(segments)
    if len(distinct) == n:  # no repeats (and some segment is not empty)
        return n, 1
    distinct.discard("")
    if not distinct:
        return n, 0
    if n <= 64:
        return n, max(map(segments.count, distinct))
    return n, max(Counter(s for s in segments if s).values())
