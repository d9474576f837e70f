"""Sitemaps, pure: a sitemap document's bytes and its URL -> page entries or child sitemaps.

No I/O: the caller fetches (issue #20's crawl loop reads robots.txt ``Sitemap:`` lines and each
host's ``/sitemap.xml``); :func:`parse_sitemap` only reads bytes and never raises.

What it reads (the sitemaps.org protocol 0.9, and what crawlers meet in its place):

- XML ``<urlset>`` (pages: ``loc``, ``lastmod``, ``changefreq``, ``priority``) and
  ``<sitemapindex>`` (child sitemaps: ``loc``, ``lastmod``), in the root element's namespace
  (whatever it is: old and misspelt namespaces are common), so that extension elements in other
  namespaces (``<image:loc>``, ``<news:publication_date>``) are never taken for the page's own;
- plain text, one URL per line (UTF-8);
- RSS 2.0 (``channel/item/link``, ``pubDate``) and Atom 1.0 (``entry/link[@href]`` with no
  ``rel`` or ``rel="alternate"``, ``updated`` or else ``published``), as the protocol allows;
- gzip, recognised by its magic bytes (never by the name: servers add and drop ``.gz`` freely).

Limits, each reported rather than raised: 50,000 URLs per document (the protocol's; more are
counted in ``ignored``), 50 MiB of decompressed input (past it the parse stops with an error), 64
levels of element nesting, 4 KiB of text per field. Decompression and parsing are streamed in
1 MiB pieces, so memory stays small and a gzip bomb stops at the first piece that is not XML, or
at 50 MiB of XML at worst.

Safety: XML is parsed by the standard library's expat with a handler that refuses any document
type declaration, and so any entity declaration, before expat reads it (``error`` starts with
``refused``); only XML's predefined entities and character references are expanded; external
entities are never loaded. defusedxml does the same on the same expat (and would be a dependency
for it), lxml parses a 50,000-URL sitemap faster but the time goes to ``canonicalize`` either way
(docs/recrawl.md has the measurement).

URLs: each ``loc`` (and feed link) is put in canonical form (:func:`skitter.urls.canonicalize`);
one that is not an absolute http(s) URL, or whose scheme and host (and port) differ from the
sitemap's own, is counted in ``rejected``. The protocol's rule is stricter still (a sitemap may
list only URLs under its own directory); like the major crawlers, only the origin is checked.
Sitemaps named by robots.txt may list other hosts (the protocol's cross-submission):
``cross_host=True``.
"""

from __future__ import annotations

import calendar
import re
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime, UTC
from email.utils import parsedate_tz
from xml.parsers import expat

from .urls import URLError, canonicalize, resolve

__all__ = ["CHANGEFREQS", "MAX_BYTES", "MAX_URLS", "Sitemap", "SitemapEntry", "parse_sitemap",
           "parse_cross_host", "parse_w3c_datetime"]

MAX_URLS = 50_000
MAX_BYTES = 50 * 1024 * 1024
CHANGEFREQS = frozenset({"always", "hourly", "daily", "weekly", "monthly", "yearly", "never"})

_CHUNK = 1 << 20
_MAX_DEPTH = 64
_MAX_FIELD = 4096
_GZIP_MAGIC = b"\x1f\x8b"
_ATOM_NS = "http://www.w3.org/2005/Atom"


@dataclass(frozen=True, slots=True)
class SitemapEntry:
    """One page (or, in a sitemap index, one child sitemap). ``loc`` is canonical; ``lastmod`` is
    seconds since the epoch (UTC) or None; ``changefreq`` one of :data:`CHANGEFREQS` or None;
    ``priority`` within [0, 1] or None (an invalid value is None, not an error)."""

    loc: str
    lastmod: float | None = None
    changefreq: str | None = None
    priority: float | None = None


@dataclass(frozen=True, slots=True)
class Sitemap:
    """What one document said. ``kind``: "urlset", "sitemapindex", "text", "rss", "atom", or ""
    when nothing was recognised. ``entries`` are pages, ``sitemaps`` child sitemaps (a sitemap
    index). ``error`` is None or one line; entries read before an error are kept. ``ignored``:
    URLs past the 50,000 limit; ``rejected``: URLs that are invalid or on another host."""

    kind: str = ""
    entries: tuple[SitemapEntry, ...] = ()
    sitemaps: tuple[SitemapEntry, ...] = ()
    error: str | None = None
    ignored: int = 0
    rejected: int = 0
    compressed: bool = False


class _Stop(Exception):
    """Ends a parse from inside an expat callback (refused DTD, too deep, not a sitemap)."""


# ----------------------------------------------------------------------------------------------
# dates

_W3C = re.compile(r"(\d{4})(?:-(\d\d)(?:-(\d\d)(?:[Tt ](\d\d):(\d\d)(?::(\d\d)(\.\d+)?)?"
                  r"\s*([Zz]|[+-]\d\d:?\d\d)?)?)?)?")


def parse_w3c_datetime(text: str) -> float | None:
    """Seconds since the epoch for a W3C datetime (``YYYY``, ``YYYY-MM``, ``YYYY-MM-DD``,
    ``YYYY-MM-DDThh:mm[:ss[.s]]TZD``), or None. A time without a zone is taken as UTC (the
    protocol requires one; many sitemaps omit it)."""
    text = text.strip()
    try:   # the full form, in C; it also takes a few ISO 8601 forms W3C's profile lacks
        dt = datetime.fromisoformat(text)
    except ValueError:
        return _parse_w3c_slow(text)
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    return dt.timestamp()


def _parse_w3c_slow(text: str) -> float | None:
    """The W3C forms ``fromisoformat`` refuses: ``YYYY``, ``YYYY-MM``, ``+hhmm`` zones, a space
    before the zone."""
    m = _W3C.fullmatch(text)
    if m is None:
        return None
    y, mo, d, hh, mi, ss, frac, tz = m.groups()
    try:
        dt = datetime(int(y), int(mo or 1), int(d or 1), int(hh or 0), int(mi or 0), int(ss or 0))
    except ValueError:
        return None
    offset = 0
    if tz and tz not in "Zz":
        sign = -1 if tz[0] == "-" else 1
        digits = tz[1:].replace(":", "")
        hours, minutes = int(digits[:2]), int(digits[2:])
        if hours > 23 or minutes > 59:
            return None
        offset = sign * (hours * 3600 + minutes * 60)
    return calendar.timegm(dt.timetuple()) + (float(frac) if frac else 0.0) - offset


def _parse_rfc822(text: str) -> float | None:
    """RSS's pubDate (RFC 822 with four-digit years); W3C datetimes are accepted too."""
    parts = parsedate_tz(text)
    if parts is None:
        return parse_w3c_datetime(text)
    try:
        dt = datetime(*parts[:6])
    except ValueError:
        return None
    return float(calendar.timegm(dt.timetuple()) - (parts[9] or 0))


def _priority(text: str | None) -> float | None:
    try:
        p = float(text) if text is not None else None
    except ValueError:
        return None
    return p if p is not None and 0.0 <= p <= 1.0 else None


# ----------------------------------------------------------------------------------------------
# input: gzip detection, decompression and the size cap


def _chunks(body: bytes, compressed: bool, cap: int) -> Iterator[bytes]:
    """The document in pieces of at most 1 MiB, decompressed if ``compressed``; raises
    ``_Stop`` past ``cap`` bytes or on a corrupt gzip stream (every member of a multi-member file
    is read; bytes after the last member that are no gzip are ignored, as gzip(1) does)."""
    if not compressed:
        for i in range(0, min(len(body), cap), _CHUNK):
            yield body[i:min(i + _CHUNK, cap)]
        if len(body) > cap:
            raise _Stop(f"larger than {cap} bytes")
        return
    total = 0
    data = body
    while data[:2] == _GZIP_MAGIC:
        d = zlib.decompressobj(wbits=31)
        while True:
            try:
                out = d.decompress(data, min(_CHUNK, cap + 1 - total))
            except zlib.error as exc:
                raise _Stop(f"gzip: {exc}") from None
            total += len(out)
            if total > cap:
                yield out[:len(out) - (total - cap)]
                raise _Stop(f"larger than {cap} bytes decompressed")
            if out:
                yield out
            if d.eof:
                break
            data = d.unconsumed_tail
            if not data and not out:
                raise _Stop("gzip: truncated stream")
        data = d.unused_data


# ----------------------------------------------------------------------------------------------
# the parse


class _Reader:
    """Collects entries, applying the URL rules and the limit."""

    def __init__(self, url: str, cross_host: bool, max_urls: int) -> None:
        self.base = url
        self.origin = None if cross_host else _origin(url)
        self.max_urls = max_urls
        self.items = 0
        self.entries: list[SitemapEntry] = []
        self.ignored = 0
        self.rejected = 0

    def add(self, raw: str | None, lastmod: float | None = None, changefreq: str | None = None,
            priority: float | None = None, *, relative: bool = False) -> None:
        """One item of the document: counted against the limit, then checked and kept."""
        self.items += 1
        if self.items > self.max_urls:
            self.ignored += 1
            return
        loc = self._check(raw, relative)
        if loc is None:
            self.rejected += 1
            return
        self.entries.append(SitemapEntry(loc, lastmod, changefreq, priority))

    def _check(self, raw: str | None, relative: bool) -> str | None:
        if not raw:
            return None
        raw = raw.strip()
        if relative:   # feeds may use relative links; a sitemap's loc must be absolute
            raw = resolve(self.base, raw) or ""
        try:
            loc = canonicalize(raw)
        except URLError:
            return None
        if self.origin is not None and not loc.startswith(self.origin):
            return None
        return loc


def _origin(url: str) -> str:
    """``scheme://host[:port]/`` of the canonical ``url``: the prefix every listed URL needs."""
    canon = canonicalize(url)
    return canon[:canon.index("/", canon.index("//") + 2) + 1]


# the item element, its depth and the fields read from its children, per kind of document
_LAYOUT = {
    "urlset": ("url", 2, ("loc", "lastmod", "changefreq", "priority")),
    "sitemapindex": ("sitemap", 2, ("loc", "lastmod")),
    "rss": ("item", 3, ("link", "pubDate")),
    "atom": ("entry", 2, ("updated", "published")),
}


class _XmlHandler:
    """expat callbacks: a stream of elements, no tree. Only the root's name, the item element's
    fields and the depth are tracked, so memory does not grow with the document. Names arrive as
    ``"namespace local"``; after the root, item and field names are compared whole (one dict
    look-up an element: this is the parse's inner loop)."""

    def __init__(self, reader: _Reader) -> None:
        self.reader = reader
        self.kind = ""
        self.depth = 0
        self.item_depth = -1
        self.item_name = ""
        self.field_names: dict[str, str] = {}
        self.atom_link = ""
        self.in_item = False
        self.values: dict[str, str] = {}
        self.link: str | None = None
        self.text: list[str] | None = None
        self.text_len = 0
        self.field = ""

    def start(self, name: str, attrs: dict[str, str]) -> None:
        self.depth = depth = self.depth + 1
        if self.in_item and depth == self.item_depth + 1:
            field = self.field_names.get(name)
            if field is not None:
                self.field, self.text, self.text_len = field, [], 0
            elif name == self.atom_link and self.link is None:
                if attrs.get("rel", "alternate").strip().lower() == "alternate":
                    self.link = attrs.get("href")
        elif depth == self.item_depth and name == self.item_name:
            self.in_item, self.values, self.link = True, {}, None
        elif depth == 1:
            self._root(name)
        elif depth > _MAX_DEPTH:
            raise _Stop(f"elements nested deeper than {_MAX_DEPTH}")

    def _root(self, name: str) -> None:
        ns, _, local = name.rpartition(" ")
        if local == "feed" and ns == _ATOM_NS:
            self.kind = "atom"
        elif local in ("urlset", "sitemapindex", "rss"):
            self.kind = local
        else:
            raise _Stop(f"not a sitemap: root element <{local}>")
        prefix = f"{ns} " if ns else ""
        item, self.item_depth, fields = _LAYOUT[self.kind]
        self.item_name = prefix + item
        self.field_names = {prefix + f: f for f in fields}
        if self.kind == "atom":
            self.atom_link = prefix + "link"

    def end(self, name: str) -> None:
        depth = self.depth
        self.depth = depth - 1
        if self.text is not None and depth == self.item_depth + 1:
            self.values[self.field] = "".join(self.text)
            self.text = None
        elif self.in_item and depth == self.item_depth:
            self.in_item = False
            self._emit(self.values)

    def chars(self, data: str) -> None:
        if self.text is not None and self.text_len < _MAX_FIELD:
            self.text.append(data)
            self.text_len += len(data)

    def _emit(self, v: dict[str, str]) -> None:
        r = self.reader
        if self.kind == "urlset":
            freq = v.get("changefreq")
            if freq is not None:
                freq = freq.strip().lower()
            r.add(v.get("loc"), _date(v.get("lastmod")), freq if freq in CHANGEFREQS else None,
                  _priority(v.get("priority")))
        elif self.kind == "sitemapindex":
            r.add(v.get("loc"), _date(v.get("lastmod")))
        elif self.kind == "rss":
            pub = v.get("pubDate")
            r.add(v.get("link"), _parse_rfc822(pub) if pub else None, relative=True)
        else:
            r.add(self.link, _date(v.get("updated") or v.get("published")), relative=True)


def _date(text: str | None) -> float | None:
    return parse_w3c_datetime(text) if text else None


def _refuse(*_: object) -> None:
    raise _Stop("refused: a document type declaration (DTDs and entities are not allowed)")


def _parse_xml(chunks: Iterable[bytes], handler: _XmlHandler) -> None:
    p = expat.ParserCreate(namespace_separator=" ")
    p.SetParamEntityParsing(expat.XML_PARAM_ENTITY_PARSING_NEVER)
    p.StartDoctypeDeclHandler = _refuse
    p.EntityDeclHandler = _refuse
    p.StartElementHandler = handler.start
    p.EndElementHandler = handler.end
    p.CharacterDataHandler = handler.chars
    p.buffer_text = True
    try:
        for chunk in chunks:
            p.Parse(chunk, False)
        p.Parse(b"", True)
    except expat.ExpatError as exc:
        raise _Stop(f"xml: {expat.ErrorString(exc.code)} at line {exc.lineno}, column {exc.offset}") from None


def _parse_text(chunks: Iterable[bytes], reader: _Reader) -> None:
    """One URL per line; blank lines skipped, others counted (accepted or rejected). A document
    whose first line is no http(s) URL is not a text sitemap (an error page, binary data), and a
    line longer than 4 KiB is no URL: both stop the parse, so garbage costs one piece at most."""
    rest = b""
    for chunk in chunks:
        lines = (rest + chunk).split(b"\n")
        rest = lines.pop()
        for line in lines:
            _text_line(line, reader)
        if len(rest) > _MAX_FIELD:
            raise _Stop(f"not a sitemap: a line longer than {_MAX_FIELD} bytes")
    _text_line(rest, reader)


def _text_line(line: bytes, reader: _Reader) -> None:
    text = line.decode("utf-8", "replace").strip().lstrip("\ufeff")
    if not text:
        return
    if not reader.items and not text[:8].lower().startswith(("http://", "https://")):
        raise _Stop("not a sitemap: neither XML nor a URL per line")
    reader.add(text)


def _looks_like_xml(first: bytes) -> bool:
    head = first.lstrip(b"\xef\xbb\xbf \t\r\n")
    return head[:1] == b"<" or first[:2] in (b"\xff\xfe", b"\xfe\xff")


def parse_sitemap(body: bytes, url: str, *, cross_host: bool = False, max_urls: int = MAX_URLS,
                  max_bytes: int = MAX_BYTES) -> Sitemap:
    """Parse the sitemap document ``body`` fetched from ``url``. Never raises.

    ``cross_host``: accept URLs on any host (for a sitemap that robots.txt names); otherwise
    only ``url``'s scheme and host (and port) may be listed. ``max_urls`` and ``max_bytes`` are
    the protocol's limits (50,000 URLs, 50 MiB decompressed)."""
    compressed = body[:2] == _GZIP_MAGIC
    try:
        reader = _Reader(url, cross_host, max_urls)
    except URLError:
        return Sitemap(error=f"not an http(s) sitemap URL: {url[:200]!r}", compressed=compressed)
    handler = _XmlHandler(reader)
    kind, error = "", None
    chunks = _chunks(body, compressed, max_bytes)
    try:
        first = next((c for c in chunks if c.strip()), b"")
        if not first:
            error = "empty document"
        elif _looks_like_xml(first):
            if first[:3] == b"\xef\xbb\xbf":
                first = first[3:]
            # leading white space is common in the wild; expat wants the declaration first
            _parse_xml(_prepend(first.lstrip(b" \t\r\n"), chunks), handler)
            kind = handler.kind
        else:
            kind = "text"
            _parse_text(_prepend(first, chunks), reader)
    except _Stop as exc:
        error = str(exc)
        kind = kind or handler.kind
    entries = tuple(reader.entries)
    if kind == "sitemapindex":
        return Sitemap(kind, (), entries, error, reader.ignored, reader.rejected, compressed)
    return Sitemap(kind, entries, (), error, reader.ignored, reader.rejected, compressed)


def _prepend(first: bytes, rest: Iterator[bytes]) -> Iterator[bytes]:
    yield first
    yield from rest


def parse_cross_host(body: bytes, url: str) -> Sitemap:
    """``parse_sitemap(body, url, cross_host=True)``, by position (for a worker process's call)."""
    return parse_sitemap(body, url, cross_host=True)
