"""The wild web: a second generated web, of another shape than the demo web in every way we can.

The demo web (``web.py``) has hosts of equal size, one URL layout (``/a/<n>.html``), 5-30 links a
page and its oddities on fixed hosts. A crawler tuned on it can still hang or go wrong on webs it
never saw. This generator draws everything from ``WildConfig.seed`` instead:

Shape
    host sizes       Zipf-like: host ``r``-th by size gets ``pages * r**-host_zipf / H`` documents
                     (at least 3), so a few hosts are big and most are small; which host is big is
                     drawn too.
    site types       every host is a blog, a wiki, a shop, a docs site or a forum, with that kind
                     of site's URLs: ``/2019/03/some-slug/`` and ``/2019/03/page/2/``,
                     ``/wiki/Caf%C3%A9_(film)`` and ``/wiki/Category:X?from=Title``,
                     ``/item?id=123`` and ``/c/slug/?page=2``, ``/docs/sec/name.html``,
                     ``/viewtopic.php?t=123`` and ``/viewforum.php?f=3&start=40``. A wiki's ``/``
                     redirects (302) to ``/wiki/Main_Page``.
    structure        home -> section listings (paginated, every page linking every other page of
                     its section) -> content; every document is at most 3 hops from its host's
                     home (robots.txt aside), so ``max_depth`` only ever binds inside the traps.
    out-degree       heavy-tailed: ``hub_share`` of the content pages link 100-400 pages, the rest
                     5-40 (log-uniform); listings of big sections are hubs too.
    in-links         preferential: targets are drawn by a Zipf popularity over each host's content
                     (PageRank is concentrated), ``cross_host`` (a per-host rate drawn from the
                     range) of them on other hosts, whose choice favours big hosts.
    page sizes       log-uniform in ``page_kb``; ``huge_pages`` pages just under the 10 MiB cap.

Link spellings (all resolve, by WHATWG, to the URL the model says; ``outlinks``)
    path-absolute, relative with ``../`` and ``./`` (mostly on docs sites), absolute,
    protocol-relative, upper-case scheme and host, fragments, spaces and newlines around the
    href, a tab inside it, ``./`` and ``x/../`` dot segments, lower-case percent-escapes, raw
    non-ASCII instead of escapes, an escaped unreserved letter (``%61``), ``&`` raw or as
    ``&amp;``, ``<base href>`` on some pages, a relative ``./Category:X`` (without ``./`` it would
    be a URL of scheme ``category:``). Ignored links: ``mailto:``, ``javascript:``, ``tel:``,
    ``#top``, ``href=""`` and a bare ``Category:X``; ``rel`` nofollow/ugc/sponsored on ~3 % of the
    content links. Equivalent-but-distinct URLs, which canonicalisation must NOT merge and the
    server answers with the same bytes: ``/item?id=1&ref=home`` and ``/item?ref=home&id=1``,
    ``utm_*`` tracking parameters, ``?replytocom=`` on blog posts, ``/docs/sec/index.html``.

robots.txt (``robots_txt``): per host one of: 404; rules for ``*`` with ``*`` and ``$``
patterns aimed at what that site type links (edit links, reply links, carts, searches, tracking
parameters, ``sort=`` facets); a ``User-agent: skitter`` group (which then replaces ``*``, whose
group may say ``Disallow: /``); a robots.txt that 301-redirects to ``/static/robots.txt``; and on
one host (hosts >= 4) a 500: the whole host disallowed (RFC 9309 2.3.1.4). Groups for other
agents, ``Sitemap:`` lines, comments, key case, CRLF and a BOM vary. ``Crawl-delay`` on
``crawl_delay_hosts`` (a count drawn at random, or explicit host indices), in every group there.

Failures
    redirects        chains of 1-4 hops (301/302/303/307/308; Locations path-absolute,
                     relative, absolute), one 7-hop chain (a crawler following at most 5 never
                     reaches its end page), a loop, a self-redirect, redirects to other hosts
                     (one to a URL robots.txt disallows, one into the robots-500 host), a 302
                     without Location, directory URLs without the trailing slash (301 to it).
    errors           linked 404s (in each site's URL style) and 410s; one URL that always
                     answers 500.
    transient        on ``transient_hosts`` (default 2, drawn), ``transient_share`` of the
                     documents answer 503 (``Retry-After: 1``) or 429 (``Retry-After`` as an
                     HTTP-date 2 s ahead) to their FIRST request and 200 afterwards. The model only
                     says which (``first_failure``): the request counters live in the server.
    slow             ``slow_hosts`` answer after ``latency`` seconds (``latency``; the server sleeps).
    content types    HTML served as text/plain (a crawler must not parse it: the page it alone
                     links is unreachable), HTML with no Content-Type (sniffed, parsed),
                     application/xhtml+xml, a PDF as application/octet-stream, images and PDFs,
                     a windows-1252 page whose charset is only in ``<meta>``; a page with
                     ``<meta name="robots" content="nofollow">``; gzip on about a third of the
                     hosts when the request accepts it.
    directory        on one host (a docs site if there is one) a directory URL without its
                     slash answers 200 with the same bytes instead of redirecting, and the home
                     page's menu links the sections that way: relative links resolve one level up
                     (to 404s). Each section index links ``print.html`` relatively, the only link
                     to it: a crawler that skips the links of an exact duplicate body (the
                     section with its slash, met second) never fetches it.

Spider traps (none on the robots-500 host; linked only from their host's home page)
    facets           ``/shop?color=red&size=m&sort=price``: every page links each value of each
                     facet not yet chosen (appended), each other value of each chosen one (in
                     place) and the removal of each: all ordered partial choices, FINITE:
                     ``sum over ordered subsets`` (159 URLs for the default facets ``(3, 3, 2)``,
                     all within 4 hops of the home page).
    session ids      on one small host every same-host link carries ``;jsessionid=<sid>``: the
                     sid of the page's own URL, or for a URL without one, a hash of it; links from
                     other hosts carry one shared stale sid. FINITE: the host is crawled twice (the
                     seed's session and the shared one), plus a duplicate of each home.
    relative         ``/<a>/<b>/`` links ``./<b>/``: ``/<a>/<b>/<b>/``, ... INFINITE on the server;
                     a crawler that drops URLs repeating a segment more than 3 times (skitter's
                     default) fetches 3 of them; with ``max_depth`` alone, ten.
    calendar         ``/events?date=2024-03-15`` links the previous and the next day (query-only
                     hrefs ``?date=...``). INFINITE (years 1-9999): ``2 * max_depth - 1`` days
                     from its entry at depth 1.

Ground truth
    ``seeds()``      every host's ``/`` (so a host-scoped crawl reaches every host).
    ``pages()``      the documents, exactly ``config.pages`` of them (the session host's without
                     a session id).
    ``reachable()``  ``{canonical URL: final status}`` of a correct breadth-first crawl: seeds,
                     links (unless nofollow) of every parsed page above ``max_depth``, redirect
                     targets at their source's depth (at most ``max_redirects`` hops from a link),
                     URLs longer than ``max_url_length`` or repeating a segment more than
                     ``max_repeated_segments`` times left out, robots.txt obeyed for the
                     ``user_agent`` token, transient failures retried (their status is 200),
                     robots.txt itself not counted. The traps are the only URLs that depend on
                     ``max_depth``.

Pure and deterministic: the same config and base URLs give the same bytes. ``respond`` serves one
request; ``wild_server.py`` serves it over HTTP, ``write_static`` writes it for nginx.
"""

from __future__ import annotations

import bisect
import gzip
import hashlib
import html
import json
import math
import random
import re
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from datetime import date, timedelta
from pathlib import Path
from urllib.parse import unquote, urljoin, urlsplit

from .serving import accepts_gzip
from .web import Response, _words

__all__ = ["Response", "WildConfig", "WildWeb"]

HostSpec = int | tuple[int, ...]   # a number of hosts drawn at random, or the host indices


@dataclass(frozen=True)
class WildConfig:
    seed: int = 1
    hosts: int = 12
    pages: int = 1500                               # documents over all hosts, exactly (pages())
    page_kb: tuple[float, float] = (1.0, 48.0)      # HTML body size, log-uniform, KiB
    host_zipf: float = 1.0                          # host sizes ~ rank ** -host_zipf
    cross_host: tuple[float, float] = (0.02, 0.35)  # per-host share of content links to other hosts
    hub_share: float = 0.01                         # content pages with 100-400 links
    crawl_delay_hosts: HostSpec = 3
    crawl_delay: tuple[float, float] = (0.5, 2.0)   # seconds, drawn per host, 2 decimals
    transient_hosts: HostSpec = 2
    transient_share: float = 0.05                   # of those hosts' documents: 503/429 first
    slow_hosts: HostSpec = 1
    latency: tuple[float, float] = (0.05, 0.25)     # seconds a slow host waits before answering
    huge_pages: int = 0
    huge_kb: tuple[int, int] = (9 * 1024, 10 * 1024 - 64)
    facets: tuple[int, ...] = (3, 3, 2)             # values per facet of the faceted-search trap

    def __post_init__(self) -> None:
        if self.hosts < 1:
            raise ValueError("hosts must be >= 1")
        if self.pages < 3 * self.hosts:
            raise ValueError("pages must be >= 3 per host")
        for name in ("page_kb", "cross_host", "crawl_delay", "latency", "huge_kb"):
            lo, hi = getattr(self, name)
            if not 0 <= lo <= hi:
                raise ValueError(f"{name} must be (lo, hi) with 0 <= lo <= hi")
        if self.page_kb[0] <= 0:
            raise ValueError("page_kb must be positive")
        if self.cross_host[1] > 1 or not 0 <= self.hub_share <= 1 or not 0 <= self.transient_share <= 1:
            raise ValueError("shares must be within [0, 1]")
        if not 1 <= len(self.facets) <= len(_FACETS) or not all(1 <= v <= 5 for v in self.facets):
            raise ValueError(f"facets: 1 to {len(_FACETS)} facets of 1 to 5 values")
        for name in ("crawl_delay_hosts", "transient_hosts", "slow_hosts"):
            spec = getattr(self, name)
            if isinstance(spec, int):
                if spec < 0:
                    raise ValueError(f"{name} must be >= 0")
            elif not all(0 <= g < self.hosts for g in spec):
                raise ValueError(f"{name}: host indices must be within [0, hosts)")


# ----------------------------------------------------------------------------------------------
# vocabulary and text

_SYLLABLES = ("ba ce di fo gu ha je ki lo mu na pe ri so tu va we xi yo za bra cle dro fri "
              "glu kra ple sta tri vor wen zal mir qua sh th on an er in ol us ar").split()
_NON_ASCII = ("Zürich", "Café", "Ångström", "Ñandú", "Łódź", "Ελλάδα", "Москва", "東京", "Straße",
              "Crème_brûlée", "São_Paulo", "Dvořák", "Føroyar", "Kraków")
_SUFFIXES = ("_(film)", "_(band)", "_(disambiguation)", "_(1998)")
_EXTRAS = ("about", "contact", "privacy", "imprint", "faq", "team", "press", "jobs", "terms", "history")
_FACETS = (("color", ("red", "blue", "green", "black", "white")),
           ("size", ("s", "m", "l", "xl", "xxl")),
           ("sort", ("price", "name", "new", "rating", "stock")),
           ("brand", ("acme", "globex", "initech", "umbrella", "hooli")),
           ("material", ("wool", "cotton", "linen", "silk", "hemp")))
_SITES = ("blog", "wiki", "shop", "docs", "forum")

#: Disallow (False) and Allow (True) rules a site of each kind might write, with ``*`` and ``$``.
_ROBOTS_RULES: dict[str, list[tuple[bool, str]]] = {
    "any": [(False, "/private/"), (False, "/*.json$"), (False, "/cgi-bin/"), (False, "/tmp/")],
    "blog": [(False, "/*?replytocom="), (False, "/*/feed/$"), (False, "/wp-admin/"),
             (True, "/wp-admin/admin-ajax.php")],
    "wiki": [(False, "/w/"), (False, "/*action=edit"), (False, "/*action=history$"),
             (False, "/wiki/Special:")],
    "shop": [(False, "/cart"), (False, "/*sort="), (False, "/*utm_"), (False, "/*&ref=")],
    "docs": [(False, "/search"), (False, "/*.pdf$"), (False, "/docs/*/index.html$")],
    "forum": [(False, "/posting.php"), (False, "/memberlist.php"), (False, "/*mode=reply")],
}
_POOL = 4096
_HTML = "text/html; charset=utf-8"
_REDIRECTS = (301, 302, 303, 307, 308)
_UNRESERVED = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
_ESCAPE = re.compile(r"%([0-9A-Fa-f]{2})")
_SID = re.compile(r";jsessionid=([^/?;]*)$")


def _rng(*key: object) -> random.Random:
    """A random stream for one purpose and one thing (string seeds are stable across runs)."""
    return random.Random(":".join(map(str, key)))


def _hash(*key: object) -> int:
    return int.from_bytes(hashlib.blake2b(":".join(map(str, key)).encode(), digest_size=8).digest(), "big")


def _vocabulary(seed: int, n: int = 2400) -> list[str]:
    rng = _rng(seed, "vocab")
    out: dict[str, None] = {}
    while len(out) < n:
        out["".join(rng.choice(_SYLLABLES) for _ in range(rng.choice((1, 2, 2, 3, 3, 4))))] = None
    return list(out)


def _pool(words: list[str]) -> list[str]:
    """4096 slots, word ``r`` taking ~1/(r+3) of them (Zipf), for ``web._words``."""
    weights = [1.0 / (r + 3) for r in range(len(words))]
    total = sum(weights)
    pool: list[str] = []
    for w, x in zip(words, weights):
        pool += [w] * max(1, round(_POOL * x / total))
    return (pool + words)[:_POOL] if len(pool) < _POOL else pool[:_POOL]


def _sentences(rng: random.Random, pool: list[str], n_bytes: int) -> str:
    """Text of about ``n_bytes``: capitalised sentences of 5-16 words."""
    out: list[str] = []
    size = 0
    while size < n_bytes:
        words = _words(rng, pool, rng.randint(5, 16))
        s = " ".join(words).capitalize() + rng.choice(".....?!")
        out.append(s)
        size += len(s) + 1
    return " ".join(out)


# ----------------------------------------------------------------------------------------------
# URLs (canonical as skitter's urls.canonicalize writes them, computed without it)


def _enc(text: str) -> str:
    """Percent-encode what WHATWG encodes in our names: non-ASCII, as UTF-8, upper-case hex (the
    ASCII of our names is never encoded: letters, digits and ``_-.,():;=&``)."""
    return "".join(c if c.isascii() else "".join(f"%{b:02X}" for b in c.encode()) for c in text)


def _normalize(path_qs: str) -> str:
    """A request target in canonical form: no fragment, non-ASCII and spaces encoded, escapes of
    unreserved characters decoded, the others' hex digits upper-cased, no empty ``?``."""
    path_qs = path_qs.partition("#")[0]
    path_qs = "".join(c if c.isascii() and c > " " else "".join(f"%{b:02X}" for b in c.encode())
                      for c in path_qs)

    def fix(m: re.Match) -> str:
        ch = chr(int(m.group(1), 16))
        return ch if ch in _UNRESERVED else "%" + m.group(1).upper()

    path_qs = _ESCAPE.sub(fix, path_qs)
    return path_qs[:-1] if path_qs.endswith("?") else path_qs


def _resolve(base: str, ref: str) -> str:
    """``ref`` (canonically spelled) resolved against the canonical URL ``base``: canonical."""
    url = urljoin(base, ref).partition("#")[0]
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc.lower()}" + _normalize(
        (parts.path or "/") + ("?" + parts.query if parts.query else ""))


def _relative(base_dir: str, target: str) -> str:
    """A relative reference from the directory ``base_dir`` (ends in "/") to ``target`` (a path
    and query on the same host): ``../`` as needed, ``./`` where the first segment has a colon."""
    path, q, query = target.partition("?")
    have = base_dir.strip("/").split("/") if base_dir != "/" else []
    want = path.lstrip("/").split("/")
    common = 0
    while common < len(have) and common < len(want) - 1 and have[common] == want[common]:
        common += 1
    ref = "../" * (len(have) - common) + "/".join(want[common:])
    if ref == "" or ":" in ref.split("/")[0]:
        ref = "./" + ref
    return ref + q + query


def _with_sid(pq: str, sid: str) -> str:
    path, q, query = pq.partition("?")
    return f"{path};jsessionid={sid}{q}{query}"


def _repeats(path: str) -> int:
    """The highest count of one non-empty path segment (skitter's repeated-segment test)."""
    segments = [s for s in path.strip("/").split("/") if s]
    return max((segments.count(s) for s in set(segments)), default=0)


# ----------------------------------------------------------------------------------------------
# records


@dataclass(slots=True)
class _Doc:
    kind: str          # home | listing | content | extra
    pq: str            # canonical path and query
    title: str
    section: int = -1
    k: int = 0         # listing: page number (1-based); content: index within the section


@dataclass(slots=True)
class _Ref:
    """A link as the model plans it: target host and canonical path (without session id)."""
    g: int
    pq: str
    anchor: str
    rel: str = ""
    relative: bool = False    # always written as a relative reference


@dataclass(slots=True)
class _Page:
    """An HTML page to render: its links by place, and what seeds its text and spellings."""
    title: str
    key: str
    size: int
    nav: list[_Ref] = field(default_factory=list)
    body: list[_Ref] = field(default_factory=list)
    lists: list[tuple[str, list[_Ref]]] = field(default_factory=list)
    base: str | None = None       # <base href>, a path on the page's host
    nofollow: bool = False        # <meta name="robots" content="nofollow">
    relative: float = 0.1         # share of same-host links written relative
    charset: str = "utf-8"


@dataclass(slots=True)
class _Res:
    """What one URL is: its status and how its body is made."""
    kind: str                                 # see WildWeb.kind
    status: int = 200
    ctype: str | None = _HTML
    page: Callable[[str | None], _Page] | None = None   # HTML: the page, given the session id
    location: str | None = None               # a redirect's Location header, as sent
    blob: tuple[str, str] | None = None       # binary bodies: (format, key)
    own: str = ""                             # HTML: the URL (path, query) its links are written for

    @property
    def parsed(self) -> bool:
        """Whether a crawler parses the body: HTML by type, or sniffed when the type is missing."""
        if self.page is None or self.status != 200:
            return False
        return self.ctype is None or self.ctype.split(";")[0].strip().lower() in ("text/html",
                                                                                 "application/xhtml+xml")


@dataclass
class _Robots:
    kind: str                                            # 404 | rules | agent | redirect | 500
    groups: list[tuple[list[str], list[tuple[bool, str]]]] = field(default_factory=list)
    delay: float | None = None
    crlf: bool = False
    bom: bool = False


class _Host:
    """One host's plan: documents, sections, roles, specials and routes."""

    def __init__(self, g: int, base: str, n: int, site: str) -> None:
        self.g = g
        self.base = base
        self.netloc = urlsplit(base).netloc
        self.n = n
        self.site = site
        self.name = ""
        self.docs: list[_Doc] = []
        self.by_pq: dict[str, int] = {}
        self.sections: list[tuple[str, list[int], list[int]]] = []   # (title, listing docs, items)
        self.parts: list[str] = []      # each section's part of the URL
        self.taken: set[str] = set()    # content URLs drawn so far
        self.per_page = 20
        self.cross = 0.0
        self.contents: list[int] = []
        self.pop_cum: list[float] = []
        self.routes: dict[str, _Res] = {}
        self.carried: dict[int, list[_Ref]] = {}
        self.robots = _Robots("404")
        self.transient = False
        self.latency = 0.0
        self.gzip = False
        self.slashless_ok = False       # directory URLs without "/" answer 200, not 301
        self.traps: list[str] = []      # facets | calendar | relative
        self.sid = False
        self.trap_words = ("", "")
        self.calendar_start = date(2024, 1, 1)


# ----------------------------------------------------------------------------------------------
# the web


class WildWeb:
    """The wild web for one config and one base URL per host (``http://ip:port`` or a name)."""

    def __init__(self, config: WildConfig, base_urls: list[str]) -> None:
        if len(base_urls) != config.hosts:
            raise ValueError(f"need {config.hosts} base URLs, got {len(base_urls)}")
        self.config = config
        self.base_urls = [_resolve(u.rstrip("/") + "/", "/")[:-1] for u in base_urls]
        self._host_of = {u: g for g, u in enumerate(self.base_urls)}
        if len(self._host_of) != config.hosts:
            raise ValueError("base URLs must be distinct")
        self._vocab = _vocabulary(config.seed)
        self._pool = _pool(self._vocab)
        self._shared_sid = f"{_hash(config.seed, 'shared-sid'):016X}"
        self._page_cache: dict[tuple[int, int], _Page] = {}
        sizes = self._host_sizes()
        sites = self._site_types()
        self.hosts = [_Host(g, self.base_urls[g], sizes[g], sites[g]) for g in range(config.hosts)]
        self._assign_roles()
        for h in self.hosts:
            self._plan_documents(h)
        self._plan_popularity()
        for h in self.hosts:
            self._plan_robots(h)
        self._plan_politeness()
        self._plan_specials()

    # ------------------------------------------------------------------ plan: sizes and roles

    def _host_sizes(self) -> list[int]:
        """Documents per host: Zipf by a random rank, at least 3, summing to ``pages`` exactly."""
        cfg = self.config
        ranks = list(range(cfg.hosts))
        _rng(cfg.seed, "ranks").shuffle(ranks)
        weights = [(ranks[g] + 1) ** -cfg.host_zipf for g in range(cfg.hosts)]
        spare = cfg.pages - 3 * cfg.hosts
        raw = [spare * w / sum(weights) for w in weights]
        sizes = [3 + int(x) for x in raw]
        for g in sorted(range(cfg.hosts), key=lambda g: raw[g] - int(raw[g]), reverse=True):
            if sum(sizes) == cfg.pages:
                break
            sizes[g] += 1
        return sizes

    def _site_types(self) -> list[str]:
        rng = _rng(self.config.seed, "sites")
        kinds = list(_SITES)
        rng.shuffle(kinds)
        return [kinds[g] if g < len(kinds) else rng.choice(_SITES) for g in range(self.config.hosts)]

    def _assign_roles(self) -> None:
        """Who gets the robots-500, the session ids and each trap: distinct hosts while there are
        enough; the session host among the smaller half (it is crawled twice)."""
        hosts = self.hosts
        rng = _rng(self.config.seed, "roles")
        order = [h.g for h in hosts]
        rng.shuffle(order)
        self.r500 = order.pop() if len(hosts) >= 4 else None
        self.sid_host: int | None = None
        if len(hosts) >= 3:
            small = sorted(order, key=lambda g: hosts[g].n)[:max(1, len(order) // 2)]
            self.sid_host = rng.choice(small)
            order.remove(self.sid_host)
            hosts[self.sid_host].sid = True
        for i, trap in enumerate(("facets", "calendar", "relative")):
            hosts[order[i % len(order)]].traps.append(trap)
        for h in hosts:
            if "facets" in h.traps:
                h.site = "shop"   # a faceted search belongs to a shop
            h.gzip = rng.random() < 0.35
            h.trap_words = (rng.choice(self._vocab), rng.choice(self._vocab))
            h.calendar_start = date(2024, 1, 1) + timedelta(days=rng.randrange(366))
        docs_hosts = [g for g in order if hosts[g].site == "docs"] or \
                     [g for g in order if hosts[g].site in ("blog", "shop")]
        if docs_hosts:
            hosts[rng.choice(docs_hosts)].slashless_ok = True

    def _eligible(self) -> list[int]:
        """Hosts that carry special URLs: not the robots-500 one, not the session one."""
        return [h.g for h in self.hosts if h.g not in (self.r500, self.sid_host)] or [0]

    def _pick_hosts(self, spec: HostSpec, key: str, among: list[int]) -> set[int]:
        if not isinstance(spec, int):
            return set(spec)
        pool = list(among)
        _rng(self.config.seed, key).shuffle(pool)
        return set(pool[:spec])

    def _plan_politeness(self) -> None:
        """Crawl-delay, transient failures and latency, on hosts of the config's choosing."""
        cfg = self.config
        rng = _rng(cfg.seed, "politeness")
        live = [h.g for h in self.hosts if h.g != self.r500]
        delayed = self._pick_hosts(cfg.crawl_delay_hosts, "delay-hosts", live)
        if self.r500 in delayed:
            raise ValueError(f"host {self.r500} answers robots.txt with 500: it can have no Crawl-delay")
        for g in sorted(delayed):
            r = self.hosts[g].robots
            r.delay = round(rng.uniform(*cfg.crawl_delay), 2)
            if r.kind == "404":
                r.kind = "rules"
                r.groups = [(["*"], [(False, "/private/")])]
        for g in self._pick_hosts(cfg.transient_hosts, "transient-hosts", live):
            self.hosts[g].transient = True
        for g in sorted(self._pick_hosts(cfg.slow_hosts, "slow-hosts", live)):
            self.hosts[g].latency = round(rng.uniform(*cfg.latency), 3)

    # ------------------------------------------------------------------ plan: documents

    def _plan_documents(self, h: _Host) -> None:
        """Home, paginated section listings, content, and extra pages to make up ``h.n``."""
        rng = _rng(self.config.seed, "docs", h.g)
        h.name = " ".join(self._word(rng).capitalize() for _ in range(rng.randint(1, 2)))
        h.per_page = P = rng.choice((10, 20, 25, 40, 50))
        n_sec = max(1, min(150, (h.n - 1) // 4, round(h.n / rng.uniform(12, 45))))
        weights = [rng.paretovariate(1.2) for _ in range(n_sec)]

        def alloc(c: int) -> list[int]:   # c items over the sections, largest remainder
            raw = [c * w / sum(weights) for w in weights]
            out = [int(x) for x in raw]
            for s in sorted(range(n_sec), key=lambda s: raw[s] - out[s], reverse=True)[:c - sum(out)]:
                out[s] += 1
            return out

        def total(c: int) -> int:
            return 1 + sum(math.ceil(x / P) for x in alloc(c) if x) + c

        c = max(1, (h.n - 1) * P // (P + 1))
        while c > 1 and total(c) > h.n:
            c -= 1
        names = self._section_names(h, rng, n_sec)
        kept = [(size, name) for size, name in zip(alloc(c), names) if size]   # no empty sections
        sizes, names = [size for size, _ in kept], [name for _, name in kept]
        n_sec = len(kept)
        h.parts = [part for part, _ in names]
        h.cross = rng.uniform(*self.config.cross_host)
        items = [self._item_names(h, rng, s, sizes[s]) for s in range(n_sec)]
        h.docs.append(_Doc("home", "/wiki/Main_Page" if h.site == "wiki" else "/", h.name))
        listing_of: list[list[int]] = []
        for s in range(n_sec):
            pages = []
            for k in range(1, math.ceil(sizes[s] / P) + 1):
                first = items[s][(k - 1) * P][0] if items[s] else ""
                pages.append(len(h.docs))
                title = names[s][1] + (f", page {k}" if k > 1 else "")
                h.docs.append(_Doc("listing", self._listing_pq(h, names[s][0], k, first), title, s, k))
            listing_of.append(pages)
        for s in range(n_sec):
            ids = []
            for j, (pq, title) in enumerate(items[s]):
                ids.append(len(h.docs))
                h.contents.append(len(h.docs))
                h.docs.append(_Doc("content", pq, title, s, j))
            h.sections.append((names[s][1], listing_of[s], ids))
        for e in range(h.n - len(h.docs)):
            word = _EXTRAS[e] if e < len(_EXTRAS) else f"page-{e}"
            pq = {"wiki": f"/wiki/Help:{word.capitalize()}", "forum": f"/{word}.php"}.get(h.site, f"/{word}/")
            h.docs.append(_Doc("extra", pq, word.capitalize()))
        h.by_pq = {d.pq: i for i, d in enumerate(h.docs)}
        assert len(h.docs) == h.n and len(h.by_pq) == h.n, (h.g, h.site)

    def _word(self, rng: random.Random) -> str:
        return self._vocab[rng.randrange(len(self._vocab))]

    def _words(self, rng: random.Random, lo: int, hi: int) -> list[str]:
        return [self._word(rng) for _ in range(rng.randint(lo, hi))]

    def _section_names(self, h: _Host, rng: random.Random, n: int) -> list[tuple[str, str]]:
        """(URL part, title) per section, distinct."""
        out: dict[str, str] = {}
        if h.site == "blog":
            months = [(y, m) for y in range(2008, 2025) for m in range(1, 13)]
            for y, m in sorted(rng.sample(months, n), reverse=True):
                out[f"{y}/{m:02d}"] = f"Archive {y}-{m:02d}"
            return list(out.items())
        while len(out) < n:
            words = self._words(rng, 1, 2)
            if h.site == "wiki":
                out.setdefault("_".join(w.capitalize() for w in words), " ".join(words).capitalize())
            elif h.site == "forum":
                out.setdefault(str(len(out) + 1), " ".join(words).capitalize())
            else:
                out.setdefault("-".join(words), " ".join(words).capitalize())
        return list(out.items())

    def _item_names(self, h: _Host, rng: random.Random, s: int, n: int) -> list[tuple[str, str]]:
        """(canonical path and query, title) of a section's content documents, distinct."""
        out: list[tuple[str, str]] = []
        while len(out) < n:
            words = self._words(rng, 2, 5)
            title = " ".join(words).capitalize()
            if h.site == "blog":
                pq = f"/{h.parts[s]}/{'-'.join(words)}/"
            elif h.site == "wiki":
                parts = [w.capitalize() for w in words[:3]]
                if rng.random() < 0.15:
                    parts.insert(rng.randrange(len(parts) + 1), rng.choice(_NON_ASCII))
                name = "_".join(parts) + (rng.choice(_SUFFIXES) if rng.random() < 0.08 else "")
                if rng.random() < 0.04:
                    name = parts[0] + ",_" + "_".join(parts[1:] or ["Jr"])
                title = name.replace("_", " ")
                pq = "/wiki/" + _enc(name)
            elif h.site == "shop":
                pq = f"/item?id={rng.randrange(100, 1_000_000)}"
            elif h.site == "docs":
                pq = f"/docs/{h.parts[s]}/{'-'.join(words[:3])}.html"
            else:
                pq = f"/viewtopic.php?t={rng.randrange(1000, 1_000_000)}"
            if pq not in h.taken:
                h.taken.add(pq)
                out.append((pq, title))
        if h.site == "wiki":
            out.sort(key=lambda x: x[1])    # a category lists its pages by title
        return out

    def _listing_pq(self, h: _Host, part: str, k: int, first_title_pq: str) -> str:
        if h.site == "blog":
            return f"/{part}/" if k == 1 else f"/{part}/page/{k}/"
        if h.site == "wiki":
            cat = f"/wiki/Category:{part}"
            return cat if k == 1 else cat + "?from=" + first_title_pq.removeprefix("/wiki/")
        if h.site == "shop":
            return f"/c/{part}/" if k == 1 else f"/c/{part}/?page={k}"
        if h.site == "docs":
            return f"/docs/{part}/" if k == 1 else f"/docs/{part}/index-{k}.html"
        return f"/viewforum.php?f={part}" + (f"&start={(k - 1) * h.per_page}" if k > 1 else "")

    # ------------------------------------------------------------------ plan: links

    def _plan_popularity(self) -> None:
        """Zipf popularity over each host's content (the preferential attachment of in-links),
        and host weights for cross-host links (big hosts attract more)."""
        for h in self.hosts:
            ranks = list(range(len(h.contents)))
            _rng(self.config.seed, "popularity", h.g).shuffle(ranks)
            acc = 0.0
            for r in ranks:
                acc += (r + 1) ** -1.2
                h.pop_cum.append(acc)
        acc = 0.0
        self._host_cum: list[float] = []
        for h in self.hosts:
            acc += h.n ** 0.8
            self._host_cum.append(acc)

    def _popular(self, h: _Host, rng: random.Random) -> int:
        """A content document of ``h`` by popularity (a listing or extra page one time in ten)."""
        if not h.contents or rng.random() < 0.1:
            return rng.randrange(h.n)
        return h.contents[bisect.bisect_left(h.pop_cum, rng.random() * h.pop_cum[-1])]

    def _target(self, h: _Host, rng: random.Random) -> _Ref:
        """A content link of a page on ``h``: same host or (at ``h.cross``) another host."""
        g2 = h.g
        if len(self.hosts) > 1 and rng.random() < h.cross:
            for _ in range(20):
                g2 = bisect.bisect_left(self._host_cum, rng.random() * self._host_cum[-1])
                if g2 != h.g:
                    break
            else:
                g2 = (h.g + 1) % len(self.hosts)
        h2 = self.hosts[g2]
        i = self._popular(h2, rng)
        return _Ref(g2, self._spelled_target(h2, i, rng), h2.docs[i].title)

    def _spelled_target(self, h: _Host, i: int, rng: random.Random) -> str:
        """Which URL of document ``i`` a link names: mostly its own, sometimes an equivalent one the
        server answers too (item parameters reordered or with tracking, a directory without its
        slash, ``index.html``)."""
        doc = h.docs[i]
        r = rng.random()
        if h.site == "shop" and doc.kind == "content" and r < 0.15:
            return rng.choice(_item_variants(self.config.seed, doc.pq))
        if not h.sid and doc.pq.endswith("/") and doc.pq != "/" and r < 0.06:
            return doc.pq[:-1]
        if h.site == "docs" and doc.kind == "listing" and doc.k == 1 and r < 0.1:
            return doc.pq + "index.html"
        return doc.pq

    def _ref(self, h: _Host, i: int) -> _Ref:
        return _Ref(h.g, h.docs[i].pq, h.docs[i].title)

    def _size(self, rng: random.Random) -> int:
        lo, hi = self.config.page_kb
        return int(1024 * math.exp(rng.uniform(math.log(lo), math.log(hi))))

    def _doc_page(self, h: _Host, i: int) -> _Page:
        doc = h.docs[i]
        rng = _rng(self.config.seed, "page", h.g, i)
        page = _Page(doc.title, f"{h.g}:{i}", self._size(rng), relative=0.6 if h.site == "docs" else 0.1)
        home = _Ref(h.g, h.docs[0].pq, "Home")
        extras = [self._ref(h, j) for j, d in enumerate(h.docs) if d.kind == "extra"]
        if doc.kind == "home":
            page.nav = extras[:6]
            sections = [self._ref(h, pages[0]) for _, pages, _ in h.sections]
            if h.slashless_ok:   # this site's menu leaves the slash out, and the server answers 200
                sections = [_Ref(r.g, r.pq.rstrip("/") or "/", r.anchor) for r in sections]
            page.lists.append(("Sections", sections))
            page.lists.append(("Featured", [self._ref(h, self._popular(h, rng)) for _ in range(8)]))
            others = [g for g in range(len(self.hosts)) if g != h.g]
            friends = rng.sample(others, min(len(others), rng.randint(2, 6)))
            page.lists.append(("Elsewhere", [_Ref(g, "/", self.hosts[g].name) for g in friends]))
            page.lists.append(("Explore", self._trap_entries(h)))
        elif doc.kind == "listing":
            _, pages, items = h.sections[doc.section]
            per = h.per_page
            page.nav = [home] + extras[:3]
            page.lists.append(("Pages", [self._ref(h, j) for j in pages if j != i]))
            page.lists.append(("In this section",
                               [self._ref(h, j) for j in items[(doc.k - 1) * per:doc.k * per]]))
            near = [h.sections[s][1][0] for s in (doc.section - 1, doc.section + 1) if 0 <= s < len(h.sections)]
            page.lists.append(("Nearby", [self._ref(h, j) for j in near]))
            if h.slashless_ok and doc.k == 1:   # only this page leads there (from the slashless URL: a 404)
                page.nav.append(_Ref(h.g, doc.pq + "print.html", "Printable version", relative=True))
            page.size = min(page.size, 4096)
        elif doc.kind == "content":
            page.nav = [home, self._ref(h, h.sections[doc.section][1][doc.k // h.per_page])]
            page.body = self._content_links(h, i, rng)
            if h.site == "docs" and rng.random() < 0.2:
                page.base = "/docs/"
            if len(page.body) > 25:
                page.lists.append(("Further reading", page.body[25:]))
                page.body = page.body[:25]
        else:
            page.nav = [home]
            page.body = [self._target(h, rng) for _ in range(rng.randint(3, 8))]
        return page

    def _content_links(self, h: _Host, i: int, rng: random.Random) -> list[_Ref]:
        """A content page's links: a heavy-tailed number of targets, some with rel=nofollow,
        the specials it carries and a link of its site's kind (edit, reply, cart ...)."""
        hub = rng.random() < self.config.hub_share
        degree = rng.randint(100, 400) if hub else round(math.exp(rng.uniform(math.log(5), math.log(40))))
        seen: set[tuple[int, str]] = set()
        out: list[_Ref] = []
        for _ in range(4 * degree):
            if len(out) == degree:
                break
            ref = self._target(h, rng)
            if (ref.g, ref.pq) not in seen and (ref.g, ref.pq) != (h.g, h.docs[i].pq):
                seen.add((ref.g, ref.pq))
                if rng.random() < 0.03:
                    ref.rel = rng.choice(("nofollow", "ugc", "sponsored", "external nofollow", "ugc nofollow"))
                elif rng.random() < 0.03:
                    ref.rel = "noopener"          # not a nofollow
                out.append(ref)
        out += [r for r in h.carried.get(i, []) if (r.g, r.pq) not in seen]
        if rng.random() < 0.25:
            out.append(self._utility_ref(h, h.docs[i], rng))
        rng.shuffle(out)
        return out

    def _utility_ref(self, h: _Host, doc: _Doc, rng: random.Random) -> _Ref:
        """The site kind's link that robots.txt files like to disallow."""
        if h.site == "blog":
            if rng.random() < 0.5:
                return _Ref(h.g, f"{doc.pq}?replytocom={rng.randrange(1, 10_000)}", "Reply")
            return _Ref(h.g, f"{doc.pq}feed/", "Comments feed")
        if h.site == "wiki":
            title = doc.pq.removeprefix("/wiki/")
            return _Ref(h.g, f"/w/index.php?title={title}&action={rng.choice(('edit', 'history'))}", "Edit")
        if h.site == "shop":
            return _Ref(h.g, f"/cart?add={doc.pq.partition('=')[2]}", "Add to cart")
        if h.site == "docs":
            return _Ref(h.g, f"/search?q={self._word(rng)}", "Search")
        if rng.random() < 0.5:
            return _Ref(h.g, f"/posting.php?mode=reply&t={doc.pq.partition('=')[2]}", "Reply")
        return _Ref(h.g, f"/memberlist.php?mode=viewprofile&u={rng.randrange(1, 500)}", "Profile")

    def _trap_entries(self, h: _Host) -> list[_Ref]:
        out = []
        if "facets" in h.traps:
            out.append(_Ref(h.g, "/shop", "Shop by colour and size"))
        if "calendar" in h.traps:
            out.append(_Ref(h.g, f"/events?date={h.calendar_start.isoformat()}", "Events"))
        if "relative" in h.traps:
            a, b = h.trap_words
            out.append(_Ref(h.g, f"/{a}/{b}/", "Manual (latest)"))
        return out

    # ------------------------------------------------------------------ plan: special URLs

    def _carry(self, g: int, ref: _Ref, rng: random.Random) -> None:
        """Link ``ref`` from a random content page of host ``g`` (every host has one)."""
        h = self.hosts[g]
        h.carried.setdefault(rng.choice(h.contents), []).append(ref)

    def _token(self, rng: random.Random) -> str:
        return f"{self._word(rng)}-{rng.randrange(100, 1000)}"

    def _plan_specials(self) -> None:
        """Redirects, errors, odd content types and orphans, spread over the eligible hosts."""
        rng = _rng(self.config.seed, "specials")
        eligible = self._eligible()
        for g in eligible:
            h = self.hosts[g]
            for _ in range(max(1, h.n // 80)):
                self._carry(g, _Ref(g, self._missing_pq(h, rng), "An older page"), rng)
            for _ in range(max(1, h.n // 60)):
                fmt = rng.choice(("png", "jpg", "pdf"))
                pq = f"/{'files' if fmt == 'pdf' else 'media'}/{self._token(rng)}.{fmt}"
                h.routes[pq] = _Res("binary", ctype={"png": "image/png", "jpg": "image/jpeg",
                                                     "pdf": "application/pdf"}[fmt], blob=(fmt, pq))
                self._carry(g, _Ref(g, pq, "Download"), rng)
            for _ in range(max(1, h.n // 150)):
                self._chain(h, rng, rng.randint(1, 4), h.docs[rng.choice(h.contents)].pq)
        one = lambda: self.hosts[rng.choice(eligible)]   # noqa: E731 - a host for a one-off
        for _ in range(2):
            h = one()
            pq = f"/archive/{self._token(rng)}.html"
            h.routes[pq] = _Res("gone", status=410)
            self._carry(h.g, _Ref(h.g, pq, "Archived"), rng)
        h = one()
        self._chain(h, rng, 7, self._orphan(h, rng, "The end of a long chain"))
        self._loop(one(), rng)
        h = one()
        pq = f"/here/{self._token(rng)}"
        h.routes[pq] = _Res("redirect", status=302, location=pq)
        self._carry(h.g, _Ref(h.g, pq, "Here"), rng)
        self._offhost_redirects(rng, eligible)
        h = one()
        pq = f"/moved/{self._token(rng)}"
        h.routes[pq] = _Res("no-location", status=302, page=self._small(h, pq, "Moved", []))
        self._carry(h.g, _Ref(h.g, pq, "Moved"), rng)
        h = one()
        pq = f"/cgi-bin/{self._word(rng)}.cgi"
        h.routes[pq] = _Res("error", status=500, ctype="text/plain; charset=utf-8")
        self._carry(h.g, _Ref(h.g, pq, "Counter"), rng)
        odd = (("plain-html", "/legacy/{}.html", "text/plain; charset=utf-8"),
               ("untyped-html", "/raw/{}", None),
               ("xhtml", "/m/{}.xhtml", "application/xhtml+xml"),
               ("latin1", "/latin/{}.html", "text/html"),
               ("nofollow", "/hidden/{}.html", _HTML))
        for kind, shape, ctype in odd:
            h = one()
            pq = shape.format(self._word(rng))
            links = [self._ref(h, rng.randrange(h.n)) for _ in range(3)]
            links.append(_Ref(h.g, self._orphan(h, rng, f"Only linked from {pq}"), "More"))
            maker = self._small(h, pq, kind.capitalize(), links, charset="cp1252" if kind == "latin1" else "utf-8",
                                nofollow=kind == "nofollow")
            h.routes[pq] = _Res(kind, ctype=ctype, page=maker)
            self._carry(h.g, _Ref(h.g, pq, kind.capitalize()), rng)
        h = one()
        pq = f"/download/{self._word(rng)}"
        h.routes[pq] = _Res("octet", ctype="application/octet-stream", blob=("pdf", pq))
        self._carry(h.g, _Ref(h.g, pq, "Get the report"), rng)
        for k in range(self.config.huge_pages):
            h = one()
            pq = f"/big/{k}.html"
            size = 1024 * rng.randint(*self.config.huge_kb)
            links = [self._ref(h, rng.randrange(h.n)) for _ in range(5)]
            h.routes[pq] = _Res("huge", page=self._small(h, pq, f"Big page {k}", links, size=size))
            self._carry(h.g, _Ref(h.g, pq, "The full log"), rng)
        for h in self.hosts:
            if h.site == "wiki":
                h.routes["/"] = _Res("redirect", status=302, location="/wiki/Main_Page")

    def _small(self, h: _Host, pq: str, title: str, links: list[_Ref], *, charset: str = "utf-8",
               nofollow: bool = False, size: int = 0) -> Callable[[str | None], _Page]:
        """A page maker for a special page: its title, links and size."""
        def make(sid: str | None) -> _Page:
            return _Page(title, f"{h.g}:{pq}", size or 1500, body=list(links), nofollow=nofollow,
                         charset=charset)
        return make

    def _missing_pq(self, h: _Host, rng: random.Random) -> str:
        """A URL in the host's own style that does not exist (a 404)."""
        for _ in range(100):
            w = "-".join(self._words(rng, 2, 3))
            pq = {"blog": f"/{rng.choice(h.parts)}/{w}/",
                  "wiki": "/wiki/" + w.replace("-", "_").capitalize(),
                  "shop": f"/item?id={rng.randrange(100, 1_000_000)}",
                  "docs": f"/docs/{rng.choice(h.parts)}/{w}.html",
                  "forum": f"/viewtopic.php?t={rng.randrange(1000, 1_000_000)}"}[h.site]
            if pq not in h.taken:
                return pq
        raise AssertionError("no free URL for a 404")

    def _orphan(self, h: _Host, rng: random.Random, title: str) -> str:
        """A 200 page only one special URL leads to."""
        pq = f"/orphan/{self._token(rng)}.html"
        h.routes[pq] = _Res("orphan", page=self._small(h, pq, title, [_Ref(h.g, h.docs[0].pq, "Home")]))
        return pq

    def _chain(self, h: _Host, rng: random.Random, hops: int, end: str) -> None:
        """``hops`` redirects ``/r/<token>`` -> ``/r/<token>/1`` -> ... -> ``end``, with mixed
        statuses and Location spellings; the first one is linked."""
        tok = self._token(rng)
        paths = [f"/r/{tok}"] + [f"/r/{tok}/{k}" for k in range(1, hops)] + [end]
        for src, dst in zip(paths, paths[1:]):
            form = rng.choice(("path", "relative", "absolute"))
            loc = {"path": dst, "relative": _relative(src.rpartition("/")[0] + "/", dst),
                   "absolute": h.base + dst}[form]
            h.routes[src] = _Res("redirect", status=rng.choice(_REDIRECTS), location=loc)
        self._carry(h.g, _Ref(h.g, paths[0], "Read on"), rng)

    def _loop(self, h: _Host, rng: random.Random) -> None:
        tok = self._token(rng)
        a, b = f"/loop/{tok}/a", f"/loop/{tok}/b"
        h.routes[a] = _Res("redirect", status=302, location="b")
        h.routes[b] = _Res("redirect", status=307, location=a)
        self._carry(h.g, _Ref(h.g, a, "Round and round"), rng)

    def _offhost_redirects(self, rng: random.Random, eligible: list[int]) -> None:
        """``/out/<k>`` redirects to another host: to a page, into the robots-500 host, and to a
        URL that host's robots.txt disallows."""
        if len(self.hosts) < 2:
            return
        targets: list[tuple[int, str]] = []
        g2 = rng.choice([g for g in eligible if len(eligible) == 1 or g != eligible[0]])
        h2 = self.hosts[g2]
        targets.append((g2, h2.docs[rng.choice(h2.contents)].pq))
        if self.r500 is not None:
            targets.append((self.r500, "/"))
        for h2 in self.hosts:
            if h2.g in eligible:
                pq = self._utility_ref(h2, h2.docs[h2.contents[0]], rng).pq
                if self._route(h2, pq) is not None and not self._allowed(h2.g, pq):
                    targets.append((h2.g, pq))
                    break
        for k, (g2, pq) in enumerate(targets):
            others = [g for g in eligible if g != g2] or eligible
            h = self.hosts[rng.choice(others)]
            src = f"/out/{k}"
            h.routes[src] = _Res("redirect", status=rng.choice((301, 302, 307)), location=self.hosts[g2].base + pq)
            self._carry(h.g, _Ref(h.g, src, "Elsewhere"), rng)

    # ------------------------------------------------------------------ plan: robots.txt

    def _plan_robots(self, h: _Host) -> None:
        rng = _rng(self.config.seed, "robots", h.g)
        if h.g == self.r500:
            h.robots = _Robots("500")
            return
        kinds = ["404", "rules", "agent", "redirect"]
        _rng(self.config.seed, "robot-kinds").shuffle(kinds)
        kind = kinds[h.g] if h.g < len(kinds) else rng.choice(("404", "rules", "rules", "agent", "redirect"))
        if kind == "404":
            return
        pool = _ROBOTS_RULES["any"] + _ROBOTS_RULES[h.site]
        star = rng.sample(pool, rng.randint(1, min(3, len(pool))))
        groups: list[tuple[list[str], list[tuple[bool, str]]]] = []
        if kind == "agent":
            ours = rng.sample(pool, rng.randint(1, min(3, len(pool))))
            groups.append((["skitter"], ours))
            if rng.random() < 0.5:
                star = [(False, "/")]     # everybody else is shut out
        groups.append((["*"], star))
        if rng.random() < 0.5:
            groups.append((["BadBot"], [(False, "/")]))
        if rng.random() < 0.3:
            groups.append((["Googlebot", "Bingbot"], [(False, "/nogoogle/")]))
        rng.shuffle(groups)
        h.robots = _Robots(kind, groups, crlf=rng.random() < 0.3, bom=rng.random() < 0.15)


    # ------------------------------------------------------------------ routing

    def _host_index(self, base_url: str) -> int:
        g = self._host_of.get(_resolve(base_url.rstrip("/") + "/", "/")[:-1])
        if g is None:
            raise ValueError(f"not a host of this web: {base_url!r}")
        return g

    def _split(self, url: str) -> tuple[int, str] | None:
        parts = urlsplit(url)
        g = self._host_of.get(f"{parts.scheme.lower()}://{parts.netloc.lower()}")
        if g is None:
            return None
        return g, _normalize((parts.path or "/") + ("?" + parts.query if parts.query else ""))

    def _lookup(self, g: int, pq: str) -> tuple[_Res | None, str | None]:
        """What ``pq`` (canonical) is on host ``g``, and the session id its links carry (on the
        session host: the URL's own, or for a URL without one, a hash of the URL)."""
        h = self.hosts[g]
        if not h.sid:
            return self._route(h, pq), None
        path, q, query = pq.partition("?")
        m = _SID.search(path)
        if m:
            return self._route(h, path[:m.start()] + q + query), m.group(1)
        return self._route(h, pq), f"{_hash(self.config.seed, 'sid', pq):016X}"

    def _route(self, h: _Host, pq: str) -> _Res | None:
        if pq in ("/robots.txt", "/static/robots.txt"):
            return self._robots_res(h, pq)
        if pq == "/sitemap.xml":
            return _Res("sitemap", ctype="application/xml; charset=utf-8", blob=("sitemap", str(h.g)))
        i = h.by_pq.get(pq)
        if i is not None:
            return self._doc_res(h, i, h.docs[i].kind)
        res = h.routes.get(pq)
        if res is not None:
            return res
        path, _, query = pq.partition("?")
        params = [(k, v) for k, _, v in (p.partition("=") for p in query.split("&"))] if query else []
        if not query and path + "/" in h.by_pq and path != "" and not h.sid:
            if h.slashless_ok:
                return self._doc_res(h, h.by_pq[path + "/"], "variant")
            loc = path + "/" if _hash(h.g, path) % 2 else h.base + path + "/"
            return _Res("redirect", status=301, location=loc)
        i = h.by_pq.get(path.removesuffix("print.html"))
        if h.slashless_ok and path.endswith("/print.html") and not query and i is not None and \
                h.docs[i].kind == "listing":
            return _Res("print", page=self._small(h, path, f"{h.docs[i].title} (print)", []), own=path)
        if h.site == "docs" and path.endswith("/index.html") and not query:
            i = h.by_pq.get(path[:-len("index.html")])
            if i is not None and h.docs[i].kind == "listing":
                return self._doc_res(h, i, "variant")
        route = {"blog": self._route_blog, "wiki": self._route_wiki, "shop": self._route_shop,
                 "docs": self._route_docs, "forum": self._route_forum}[h.site]
        site = route(h, path, params)
        return site if site is not None else self._route_trap(h, path, params)

    def _doc_res(self, h: _Host, i: int, kind: str) -> _Res:
        return _Res(kind, page=lambda sid: self._doc_page_cached(h.g, i), own=h.docs[i].pq)

    def _route_blog(self, h: _Host, path: str, params: list[tuple[str, str]]) -> _Res | None:
        i = h.by_pq.get(path)
        if i is not None and h.docs[i].kind == "content" and len(params) == 1 and \
                params[0][0] == "replytocom" and params[0][1].isdigit():
            return self._doc_res(h, i, "variant")
        i = h.by_pq.get(path.removesuffix("feed/"))
        if path.endswith("/feed/") and not params and i is not None and h.docs[i].kind == "content":
            return _Res("feed", ctype="application/rss+xml; charset=utf-8", blob=("rss", path))
        return None

    def _route_wiki(self, h: _Host, path: str, params: list[tuple[str, str]]) -> _Res | None:
        p = dict(params)
        i = h.by_pq.get("/wiki/" + p.get("title", ""))
        if path == "/w/index.php" and len(p) == len(params) == 2 and i is not None and \
                p.get("action") in ("edit", "history"):
            title = f"{p['action'].capitalize()}: {h.docs[i].title}"
            return self._utility(h, path, params, title, [self._ref(h, i)])
        return None

    def _route_shop(self, h: _Host, path: str, params: list[tuple[str, str]]) -> _Res | None:
        keys = [k for k, _ in params]
        p = dict(params)
        i = h.by_pq.get(f"/item?id={p.get('id', '')}")
        if path == "/item" and i is not None and len(set(keys)) == len(keys) and all(p.values()) and \
                set(keys) <= {"id", "ref", "utm_source", "utm_medium", "utm_campaign"}:
            return self._doc_res(h, i, "variant")
        i = h.by_pq.get(f"/item?id={p.get('add', '')}")
        if path == "/cart" and keys == ["add"] and i is not None:
            return self._utility(h, path, params, "Your cart", [self._ref(h, i)])
        return None

    def _route_docs(self, h: _Host, path: str, params: list[tuple[str, str]]) -> _Res | None:
        if path == "/search" and len(params) == 1 and params[0][0] == "q" and params[0][1]:
            rng = _rng(self.config.seed, "search", h.g, params[0][1])
            return self._utility(h, path, params, f"Search: {params[0][1]}",
                                 [self._ref(h, rng.randrange(h.n)) for _ in range(5)])
        return None

    def _route_forum(self, h: _Host, path: str, params: list[tuple[str, str]]) -> _Res | None:
        p = dict(params)
        if path == "/posting.php" and p.get("mode") == "reply" and len(params) == 2:
            i = h.by_pq.get(f"/viewtopic.php?t={p.get('t', '')}")
            if i is not None:
                return self._utility(h, path, params, "Post a reply", [self._ref(h, i)])
        if path == "/memberlist.php" and p.get("mode") == "viewprofile" and len(params) == 2 and \
                p.get("u", "").isdigit():
            rng = _rng(self.config.seed, "profile", h.g, p["u"])
            return self._utility(h, path, params, f"Profile of member {p['u']}",
                                 [self._ref(h, rng.choice(h.contents)) for _ in range(3)])
        return None

    def _utility(self, h: _Host, path: str, params: list[tuple[str, str]], title: str,
                 links: list[_Ref]) -> _Res:
        pq = path + "?" + "&".join(f"{k}={v}" for k, v in params)
        return _Res("utility", page=self._small(h, pq, title, [_Ref(h.g, h.docs[0].pq, "Home")] + links),
                    own=pq)

    # ------------------------------------------------------------------ traps

    def _route_trap(self, h: _Host, path: str, params: list[tuple[str, str]]) -> _Res | None:
        if "facets" in h.traps and path == "/shop":
            chosen = self._facet_choice(params)
            if chosen is not None:
                return _Res("trap-facets", page=lambda sid: self._facet_page(h, chosen), own=self._facet_pq(chosen))
        if "calendar" in h.traps and path == "/events" and len(params) == 1 and params[0][0] == "date":
            try:
                day = date.fromisoformat(params[0][1])
            except ValueError:
                return None
            if params[0][1] == day.isoformat():
                return _Res("trap-calendar", page=lambda sid: self._calendar_page(h, day),
                            own=f"/events?date={day.isoformat()}")
        a, b = h.trap_words
        if "relative" in h.traps and not params and re.fullmatch(f"/{a}/{b}/(?:{b}/)*", path):
            return _Res("trap-relative", page=lambda sid: self._relative_page(h, path), own=path)
        return None

    def _facet_choice(self, params: list[tuple[str, str]]) -> list[tuple[str, str]] | None:
        """The facet choices of a /shop query, in order, or None if it is not one."""
        allowed = {key: values[:n] for (key, values), n in zip(_FACETS, self.config.facets)}
        keys = [k for k, _ in params]
        if len(set(keys)) != len(keys) or any(v not in allowed.get(k, ()) for k, v in params):
            return None
        return list(params)

    @staticmethod
    def _facet_pq(chosen: list[tuple[str, str]]) -> str:
        return "/shop" + ("?" + "&".join(f"{k}={v}" for k, v in chosen) if chosen else "")

    def _facet_page(self, h: _Host, chosen: list[tuple[str, str]]) -> _Page:
        """Every facet value not chosen yet (appended), every other value of a chosen facet (in
        place), every removal, and a few products of the choice (whatever its order)."""
        links = [_Ref(h.g, h.docs[0].pq, "Home")]
        have = dict(chosen)
        for (key, values), n in zip(_FACETS, self.config.facets):
            for v in values[:n]:
                if key not in have:
                    links.append(_Ref(h.g, self._facet_pq(chosen + [(key, v)]), f"{key}: {v}"))
                elif v != have[key]:
                    links.append(_Ref(h.g, self._facet_pq([(k, v if k == key else x) for k, x in chosen]),
                                      f"{key}: {v}"))
            if key in have:
                links.append(_Ref(h.g, self._facet_pq([(k, x) for k, x in chosen if k != key]), f"any {key}"))
        rng = _rng(self.config.seed, "facet", h.g, sorted(chosen))
        links += [self._ref(h, rng.choice(h.contents)) for _ in range(rng.randint(2, 5))]
        title = "Shop" + "".join(f", {k} {v}" for k, v in chosen)
        return _Page(title, f"{h.g}:{self._facet_pq(chosen)}", 2500, body=links, relative=1.0)

    def _calendar_page(self, h: _Host, day: date) -> _Page:
        links = [_Ref(h.g, h.docs[0].pq, "Home")]
        for d, label in ((day - timedelta(days=1), "Previous day"), (day + timedelta(days=1), "Next day")):
            if date.min < d < date.max:
                links.append(_Ref(h.g, f"/events?date={d.isoformat()}", label))
        return _Page(f"Events on {day.isoformat()}", f"{h.g}:events:{day.isoformat()}", 1800,
                     body=links, relative=1.0)

    def _relative_page(self, h: _Host, path: str) -> _Page:
        b = h.trap_words[1]
        links = [_Ref(h.g, h.docs[0].pq, "Home"), _Ref(h.g, f"{path}{b}/", "Latest version")]
        return _Page(f"Manual ({path.count('/') - 2} levels)", f"{h.g}:{path}", 1800, body=links,
                     relative=1.0)

    # ------------------------------------------------------------------ robots.txt

    def _robots_res(self, h: _Host, pq: str) -> _Res | None:
        kind = h.robots.kind
        if pq == "/static/robots.txt":
            return _Res("robots", ctype="text/plain", blob=("robots", str(h.g))) if kind == "redirect" else None
        if kind == "404":
            return None
        if kind == "500":
            return _Res("robots", status=500, ctype="text/html; charset=utf-8", blob=("error", "500"))
        if kind == "redirect":
            return _Res("robots", status=301, location="/static/robots.txt")
        return _Res("robots", ctype="text/plain", blob=("robots", str(h.g)))

    def robots_txt(self, g: int) -> str | None:
        """Host ``g``'s robots.txt as text (BOM and line ends aside), or None (a 404 or a 500)."""
        h = self.hosts[g]
        r = h.robots
        if r.kind in ("404", "500"):
            return None
        rng = _rng(self.config.seed, "robots-text", g)
        key = rng.choice((str, str.lower, str.upper))
        lines = [f"# robots.txt for {h.name}", ""]
        for agents, rules in r.groups:
            lines += [f"{key('User-agent')}: {a}" for a in agents]
            lines += [f"{key('Allow' if allow else 'Disallow')}: {p}" for allow, p in rules]
            if r.delay is not None and agents[0] in ("*", "skitter"):
                lines.append(f"{key('Crawl-delay')}: {r.delay:g}")
            lines.append("")
        lines.append(f"Sitemap: {h.base}/sitemap.xml")
        return "\n".join(lines) + "\n"

    def _robots_bytes(self, g: int) -> bytes:
        r = self.hosts[g].robots
        text = self.robots_txt(g) or ""
        if r.crlf:
            text = text.replace("\n", "\r\n")
        return (b"\xef\xbb\xbf" if r.bom else b"") + text.encode()

    def _group(self, h: _Host, token: str) -> list[tuple[bool, str]]:
        """The rules for ``token``: all groups naming it, else the ``*`` groups (RFC 9309 2.2.1)."""
        ours = [rules for agents, rules in h.robots.groups if token in (a.lower() for a in agents)]
        if not ours:
            ours = [rules for agents, rules in h.robots.groups if "*" in agents]
        return [rule for rules in ours for rule in rules]

    def _allowed(self, g: int, pq: str, token: str = "skitter") -> bool:
        """RFC 9309 for the canonical ``pq``: longest match wins, Allow on a tie; a 404 allows
        everything, a 500 nothing."""
        h = self.hosts[g]
        if h.robots.kind == "500":
            return False
        if h.robots.kind == "404" or pq == "/robots.txt":
            return True
        best: tuple[int, bool] | None = None
        for allow, pattern in self._group(h, token):
            if _robots_match(pattern, pq):
                best = max(best or (-1, False), (len(pattern), allow))
        return best is None or best[1]

    def robots_allowed(self, url: str, user_agent: str = "skitter") -> bool:
        s = self._split(url)
        return True if s is None else self._allowed(s[0], s[1], _token(user_agent))

    def crawl_delay(self, url: str, user_agent: str = "skitter") -> float | None:
        """The Crawl-delay robots.txt gives ``user_agent`` on ``url``'s host, or None."""
        s = self._split(url)
        if s is None:
            return None
        r = self.hosts[s[0]].robots
        return r.delay if r.kind not in ("404", "500") and _token(user_agent) not in ("badbot",) else None

    # ------------------------------------------------------------------ pages to HTML

    def _doc_page_cached(self, g: int, i: int) -> _Page:
        key = (g, i)
        page = self._page_cache.get(key)
        if page is None:
            if len(self._page_cache) > 4096:
                self._page_cache.clear()
            page = self._page_cache[key] = self._doc_page(self.hosts[g], i)
        return page

    def _hrefs(self, h: _Host, page: _Page, own: str, sid: str | None) -> list[tuple[_Ref, str, str]]:
        """Every link of the page: (planned link, canonical reference, href as written)."""
        rng = _rng(self.config.seed, "href", page.key)
        own_path = own.partition("?")[0]
        base_path = page.base or own_path
        base_dir = base_path[:base_path.rfind("/") + 1]
        out = []
        for ref in page.nav + page.body + [r for _, refs in page.lists for r in refs]:
            s = self._ref_string(h, ref, base_dir, own_path if page.base is None else "", sid, rng, page.relative)
            out.append((ref, s, _spell(s, rng, page.charset == "utf-8")))
        return out

    def _ref_string(self, h: _Host, ref: _Ref, base_dir: str, own_path: str, sid: str | None,
                    rng: random.Random, relative: float) -> str:
        """How a link names its target before any odd spelling: path-absolute, relative (query
        only when the path is the page's own), absolute or protocol-relative."""
        h2 = self.hosts[ref.g]
        pq = ref.pq
        if h2.sid:
            pq = _with_sid(pq, sid if h2 is h and sid else self._shared_sid)
        if h2 is not h:
            return (h2.base if rng.random() < 0.7 else "//" + h2.netloc) + pq
        if h.sid:
            return pq
        r = 0.0 if ref.relative else rng.random()
        if r < relative or ref.relative:
            path, _, query = pq.partition("?")
            return "?" + query if query and path == own_path else _relative(base_dir, pq)
        if r < relative + 0.08:
            return h.base + pq
        if r < relative + 0.11:
            return "//" + h.netloc + pq
        return pq

    def _html(self, h: _Host, res: _Res, page: _Page, sid: str | None) -> bytes:
        links = self._hrefs(h, page, res.own, sid)
        raw_amp = _rng(self.config.seed, "amp", page.key).random() < 0.3
        anchors = [_a(href, ref, raw_amp) for ref, _, href in links]
        rng = _rng(self.config.seed, "text", page.key)
        n_nav, n_body = len(page.nav), len(page.body)
        own_url = h.base + (_with_sid(res.own, sid) if h.sid and sid else res.own)
        xhtml = res.ctype == "application/xhtml+xml"
        head = ['<?xml version="1.0" encoding="UTF-8"?>\n' if xhtml else "", "<!DOCTYPE html>\n",
                '<html xmlns="http://www.w3.org/1999/xhtml" lang="en">\n' if xhtml else '<html lang="en">\n',
                "<head>\n",
                '<meta charset="windows-1252"/>\n' if page.charset == "cp1252" else '<meta charset="utf-8"/>\n',
                f"<title>{html.escape(page.title)} | {html.escape(h.name)}</title>\n",
                f'<link rel="canonical" href="{html.escape(own_url)}"/>\n']
        if page.base:
            head.append(f'<base href="{html.escape(page.base)}"/>\n')
        if page.nofollow:
            head.append('<meta name="robots" content="nofollow"/>\n')
        parts = head + ["</head>\n<body>\n", f"<header><p>{html.escape(h.name)}</p></header>\n",
                        "<nav>" + " | ".join(anchors[:n_nav]) + "</nav>\n<main>\n",
                        f"<h1>{html.escape(page.title)}</h1>\n"]
        if page.charset == "cp1252":
            parts.append("<p>Le café – naïve “déjà vu” for €5 … ½ price.</p>\n")
        body = anchors[n_nav:n_nav + n_body]
        while body:   # paragraphs with one to three links each, in order
            words = _sentences(rng, self._pool, rng.randint(150, 600)).split(" ")
            cuts = sorted(rng.randrange(len(words) + 1) for _ in range(min(len(body), rng.randint(1, 3))))
            pieces = [" ".join(words[a:b]) for a, b in zip([0] + cuts, cuts + [len(words)])]
            text = pieces[0] + "".join(f" {body.pop(0)} {piece}" for piece in pieces[1:])
            parts.append(f"<p>{text}</p>\n")
        at = n_nav + n_body
        for heading, refs in page.lists:
            parts.append(f"<h2>{html.escape(heading)}</h2>\n<ul>\n" +
                         "".join(f"<li>{a}</li>\n" for a in anchors[at:at + len(refs)]) + "</ul>\n")
            at += len(refs)
        foot = self._footer(h, page, rng)
        size = sum(map(len, parts)) + len(foot)
        filler = _sentences(rng, self._pool, min(page.size - size, 65536)) if page.size > size else ""
        while size < page.size:
            chunk = filler[:page.size - size]
            parts.append(f"<p>{chunk}</p>\n")
            size += len(chunk) + 8
        parts.append(foot)
        text = "".join(parts)
        return text.encode("cp1252", "xmlcharrefreplace") if page.charset == "cp1252" else text.encode()

    def _footer(self, h: _Host, page: _Page, rng: random.Random) -> str:
        """Links a crawler must ignore: other schemes, the page itself, a scheme-like word."""
        pseudo = [f"mailto:info@{h.netloc.split(':')[0]}", "javascript:void(0)", "tel:+1-555-0100",
                  "javascript:history.back()"]
        if page.base is None:
            pseudo += ["#top", ""]
        if h.site == "wiki":
            pseudo.append("Category:Help")
        chosen = rng.sample(pseudo, rng.randint(1, 3))
        links = " ".join(f'<a href="{html.escape(p)}">{html.escape(p or "this page")}</a>' for p in chosen)
        return f"</main>\n<footer>{links}<p>&copy; {html.escape(h.name)}</p></footer>\n</body>\n</html>\n"

    def _blob(self, fmt: str, key: str) -> bytes:
        if fmt == "robots":
            return self._robots_bytes(int(key))
        if fmt == "sitemap":
            h = self.hosts[int(key)]
            locs = "".join(f"<url><loc>{html.escape(h.base + h.docs[i].pq)}</loc></url>\n"
                           for i in h.contents[:50_000])
            return ('<?xml version="1.0" encoding="UTF-8"?>\n<urlset xmlns="http://www.sitemaps.org/'
                    f'schemas/sitemap/0.9">\n{locs}</urlset>\n').encode()
        if fmt == "rss":
            return (f'<?xml version="1.0" encoding="UTF-8"?>\n<rss version="2.0"><channel><title>Comments on '
                    f'{html.escape(key)}</title></channel></rss>\n').encode()
        if fmt == "error":
            return b"<!DOCTYPE html>\n<html><head><title>500</title></head><body><h1>Server error</h1></body></html>\n"
        rng = _rng(self.config.seed, "blob", key)
        noise = rng.randbytes(rng.randint(1024, 8192))
        if fmt == "png":
            return b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + noise + b"\x00\x00\x00\x00IEND\xaeB`\x82"
        if fmt == "jpg":
            return b"\xff\xd8\xff\xe0\x00\x10JFIF\x00" + noise + b"\xff\xd9"
        return b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n1 0 obj\n<< /Type /Catalog >>\nendobj\n" + noise + b"\n%%EOF\n"

    # ------------------------------------------------------------------ serving

    def respond(self, base_url: str, path_qs: str, headers: Mapping[str, str] | None = None) -> Response:
        """The response to a GET of ``path_qs`` on host ``base_url``, always the same (transient
        failures are the server's: ``first_failure``). ``headers``: the request's; a third of the
        hosts gzip HTML when Accept-Encoding allows it."""
        g = self._host_index(base_url)
        h = self.hosts[g]
        res, sid = self._lookup(g, _normalize(path_qs))
        if res is None:
            return Response(404, [("Content-Type", _HTML)], _NOT_FOUND)
        out: list[tuple[str, str]] = [("Content-Type", res.ctype)] if res.ctype else []
        if res.location is not None:
            out.append(("Location", res.location))
        if res.page is not None:
            body = self._html(h, res, res.page(sid), sid)
        elif res.blob is not None:
            body = self._blob(*res.blob)
        elif res.status in _REDIRECTS:
            body = (f'<!DOCTYPE html>\n<html><head><title>Moved</title></head><body><p>The document has moved '
                    f'<a href="{html.escape(res.location or "/")}">here</a>.</p></body></html>\n').encode()
            out = [("Content-Type", _HTML)] + out[1:]
        else:
            body = f"<!DOCTYPE html>\n<html><body><h1>{res.status}</h1></body></html>\n".encode()
        accept = next((v for k, v in (headers or {}).items() if k.lower() == "accept-encoding"), None)
        if h.gzip and res.ctype and res.ctype.startswith("text/html") and accepts_gzip(accept):
            body = gzip.compress(body, compresslevel=6, mtime=0)
            out += [("Content-Encoding", "gzip"), ("Vary", "Accept-Encoding")]
        return Response(res.status, out, body)

    def first_failure(self, url: str) -> tuple[int, float] | None:
        """``(status, Retry-After seconds)`` that the FIRST request of ``url`` gets instead of its
        response (503 or 429), or None. The server counts the requests."""
        s = self._split(url)
        if s is None or not self.hosts[s[0]].transient:
            return None
        res, _ = self._lookup(*s)
        if res is None or res.kind not in ("home", "listing", "content", "extra"):
            return None
        x = _hash(self.config.seed, "transient", url) / 2 ** 64
        if x >= self.config.transient_share:
            return None
        return (503, 1.0) if x < self.config.transient_share / 2 else (429, 2.0)

    def latency(self, base_url: str | None) -> float:
        """Seconds host ``base_url`` waits before answering (0 but on the slow hosts)."""
        return 0.0 if base_url is None else self.hosts[self._host_index(base_url)].latency

    # ------------------------------------------------------------------ ground truth

    def seeds(self) -> list[str]:
        return [h.base + "/" for h in self.hosts]

    def pages(self) -> list[str]:
        return [h.base + d.pq for h in self.hosts for d in h.docs]

    def kind(self, url: str) -> str:
        """home, listing, content, extra (documents); variant (another URL of a document);
        redirect, no-location, missing (404), gone (410), error (500), binary, octet, feed,
        plain-html, untyped-html, xhtml, latin1, nofollow, huge, orphan, utility, print,
        trap-facets, trap-calendar, trap-relative, robots, sitemap; offsite."""
        s = self._split(url)
        if s is None:
            return "offsite"
        res, _ = self._lookup(*s)
        return "missing" if res is None else res.kind

    def status(self, url: str) -> int:
        s = self._split(url)
        res = self._lookup(*s)[0] if s else None
        return 404 if res is None else res.status

    def redirect_target(self, url: str) -> str | None:
        """The canonical URL a redirect's Location names (None if ``url`` is none)."""
        s = self._split(url)
        res = self._lookup(*s)[0] if s else None
        if res is None or res.location is None:
            return None
        return _resolve(url, res.location)

    def outlinks(self, url: str) -> list[tuple[str, bool]]:
        """``(canonical target, nofollow)`` of every link a parser finds on ``url`` (in order, the
        first of equal targets, the page itself left out); [] if ``url`` is not parsed."""
        s = self._split(url)
        if s is None:
            return []
        res, sid = self._lookup(*s)
        if res is None or not res.parsed:
            return []
        h = self.hosts[s[0]]
        page = res.page(sid)   # type: ignore[misc]
        base = _resolve(url, page.base) if page.base else url
        seen = {url}
        out = []
        for ref, string, _ in self._hrefs(h, page, res.own, sid):
            target = _resolve(base, string)
            if target not in seen:
                seen.add(target)
                out.append((target, page.nofollow or not _NOFOLLOW.isdisjoint(ref.rel.split())))
        return out

    def reachable(self, max_depth: int = 10, obey_robots: bool = True, user_agent: str = "skitter", *,
                  max_redirects: int = 5, max_url_length: int = 2048,
                  max_repeated_segments: int = 3) -> dict[str, int]:
        """``{canonical URL: final status}`` of a correct breadth-first crawl (see the module doc).

        Level by level: a redirect's target joins its source's level (at most ``max_redirects``
        hops from a link or seed); a parsed page's followable links join the next level if they
        pass the trap filter (length, repeated segments). A URL is seen once: the first level
        that names it is its depth. Disallowed URLs are seen but not fetched."""
        token = _token(user_agent)
        fetched: dict[str, int] = {}
        seen: set[str] = set()
        levels: list[list[tuple[str, int]]] = [[] for _ in range(max_depth + 1)]

        def admit(url: str, depth: int, hops: int, checked: bool) -> None:
            if url in seen:
                return
            if checked and (len(url) > max_url_length or max_repeated_segments and
                            _repeats(urlsplit(url).path) > max_repeated_segments):
                return
            seen.add(url)
            if not obey_robots or self.robots_allowed(url, token):
                levels[depth].append((url, hops))

        for seed in self.seeds():
            admit(seed, 0, 0, True)
        for depth, level in enumerate(levels):
            for url, hops in level:   # grows while it is read: redirect targets join it
                fetched[url] = self.status(url)
                target = self.redirect_target(url)
                if target is not None:
                    if fetched[url] in _REDIRECTS and hops < max_redirects and target != url:
                        admit(target, depth, hops + 1, False)
                elif depth < max_depth:
                    for link, nofollow in self.outlinks(url):
                        if not nofollow:
                            admit(link, depth + 1, 0, True)
        return fetched

    def info(self) -> list[dict]:
        """Each host's shape, for people and tests: site type, documents, roles."""
        return [{"base": h.base, "site": h.site, "documents": h.n, "robots": h.robots.kind,
                 "crawl_delay": h.robots.delay, "transient": h.transient, "latency": h.latency,
                 "gzip": h.gzip, "traps": list(h.traps), "session_ids": h.sid,
                 "slashless_200": h.slashless_ok, "cross_host": round(h.cross, 3)} for h in self.hosts]

    # ------------------------------------------------------------------ static export

    def write_static(self, root: Path) -> dict:
        """Write the web under ``root/<g>/`` for nginx (``bench/nginx.py``) and return (and write)
        ``root/manifest.json``; the files embed the base URLs, so serve them on the same ones.

        Written: every status-200 URL of ``reachable(obey_robots=False)`` (so traps as far as a
        crawl with skitter's defaults goes: beyond, 404), robots.txt, sitemap.xml. A path is a file
        at its decoded path (``index.html`` for one ending in "/"); a URL with a query is the file
        ``_q/<path>/<query>.html`` (nginx: ``try_files /_q$uri/$args.html``). The manifest lists
        what files cannot say: redirects, other statuses (410, 500, robots.txt's 500), directories
        without their slash that answer 200 (``aliases``: path -> file) and Content-Types that
        differ from nginx's guess by extension (``""``: none). Not static,
        absent: transient 503/429, the slow hosts' latency, gzip, the 302 without Location.
        """
        root = Path(root)
        redirects: dict[str, dict[str, list]] = {str(g): {} for g in range(len(self.hosts))}
        statuses: dict[str, dict[str, int]] = {str(g): {} for g in range(len(self.hosts))}
        headers: dict[str, dict[str, list[list[str]]]] = {str(g): {} for g in range(len(self.hosts))}
        aliases: dict[str, dict[str, str]] = {str(g): {} for g in range(len(self.hosts))}
        truth = self.reachable(obey_robots=False)
        for url, status in sorted(truth.items()):
            g, pq = self._split(url)   # type: ignore[misc]
            path, _, query = pq.partition("?")
            fs_path = unquote(path)
            if query and status not in (200, 404):
                raise AssertionError(f"a query URL nginx cannot answer: {url} ({status})")
            location = self._lookup(g, pq)[0].location if status in _REDIRECTS else None  # type: ignore[union-attr]
            if location is not None:
                redirects[str(g)][fs_path] = [status, location]
            elif status == 200:
                self._write_file(root, g, pq, fs_path, query, headers[str(g)], aliases[str(g)])
            elif status not in (404, *_REDIRECTS):   # (a 3xx without Location: absent, a 404)
                statuses[str(g)][fs_path] = status
        for h in self.hosts:
            d = root / str(h.g)
            d.mkdir(parents=True, exist_ok=True)
            (d / "sitemap.xml").write_bytes(self._blob("sitemap", str(h.g)))
            if h.robots.kind == "500":
                statuses[str(h.g)]["/robots.txt"] = 500
            elif h.robots.kind == "redirect":
                redirects[str(h.g)]["/robots.txt"] = [301, "/static/robots.txt"]
                (d / "static").mkdir(exist_ok=True)
                (d / "static" / "robots.txt").write_bytes(self._robots_bytes(h.g))
            elif h.robots.kind != "404":
                (d / "robots.txt").write_bytes(self._robots_bytes(h.g))
        manifest = {
            "generator": "wild", "config": asdict(self.config), "base_urls": self.base_urls,
            "pages": len(self.pages()), "urls": len(truth), "redirects": redirects, "headers": headers,
            "statuses": statuses, "aliases": aliases, "default_type": _HTML, "query_files": True,
            "no_robots_hosts": [h.g for h in self.hosts if h.robots.kind == "404"],
            "skipped": ["transient 503/429 (always 200)", "latency of the slow hosts", "gzip",
                        "the 302 without Location (404)", "traps beyond what reachable() fetches (404)"],
        }
        (root / "manifest.json").write_text(json.dumps(manifest, indent=1, ensure_ascii=False) + "\n")
        return manifest

    def _write_file(self, root: Path, g: int, pq: str, fs_path: str, query: str,
                    headers: dict[str, list[list[str]]], aliases: dict[str, str]) -> None:
        """One status-200 URL as a file, and its Content-Type in ``headers`` (under the file's
        path: nginx looks a directory's index up again) if nginx would guess another one. A
        directory without its slash that answers 200 is an alias of the directory's index (nginx
        would redirect it)."""
        h = self.hosts[g]
        if not query and not fs_path.endswith("/") and pq + "/" in h.by_pq:
            aliases[fs_path] = fs_path + "/index.html"
            return
        resp = self.respond(h.base, pq)
        if query:
            dest = root / str(g) / "_q" / fs_path.strip("/") / f"{query}.html"
        else:
            dest = root / str(g) / (fs_path.lstrip("/") + ("index.html" if fs_path.endswith("/") else ""))
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_bytes(resp.body)
        ctype = resp.header("Content-Type") or ""
        guess = _NGINX_TYPES.get(dest.suffix if not query else ".html", _HTML)
        if ctype.split(";")[0] != guess.split(";")[0] and not query:
            headers["/" + str(dest.relative_to(root / str(g)))] = [["Content-Type", ctype]]


#: What nginx's mime.types says for the extensions the wild web uses (the rest: default_type).
_NGINX_TYPES = {".html": "text/html", ".png": "image/png", ".jpg": "image/jpeg",
                ".pdf": "application/pdf", ".xhtml": "application/xhtml+xml", ".xml": "text/xml",
                ".txt": "text/plain"}
_NOFOLLOW = frozenset({"nofollow", "ugc", "sponsored"})
_NOT_FOUND = (b"<!DOCTYPE html>\n<html><head><title>404 Not Found</title></head><body><h1>Not Found</h1>"
              b'<p><a href="/">Home</a></p></body></html>\n')


def _token(user_agent: str) -> str:
    """The robots.txt product token of a User-Agent, lower-case (``skitter/1.0`` -> ``skitter``)."""
    return user_agent.split("/", 1)[0].strip().lower()


def _robots_match(pattern: str, pq: str) -> bool:
    """RFC 9309 2.2.3: a prefix match, ``*`` any run of characters, a final ``$`` the end."""
    anchored = pattern.endswith("$")
    body = pattern[:-1] if anchored else pattern
    rx = ".*".join(re.escape(part) for part in body.split("*"))
    return re.match(rx + ("$" if anchored else ""), pq) is not None


def _path_start(ref: str) -> int:
    """Where the path of a reference starts (after ``scheme://host:port`` or ``//host:port``)."""
    if ref.startswith(("http://", "https://", "//")):
        slash = ref.find("/", ref.find("//") + 2)
        return len(ref) if slash < 0 else slash
    return 0


def _spell(ref: str, rng: random.Random, utf8: bool) -> str:
    """An odd spelling of the canonical reference ``ref`` that a WHATWG parser, then skitter's
    canonical form, turns back into the same URL; ``ref`` itself 60 % of the time."""
    c = rng.random()
    start = _path_start(ref)
    if c < 0.60:
        return ref
    if c < 0.67:
        return rng.choice((" ", "\n", "\n\t  ")) + ref + rng.choice(("", " ", "\n"))
    if c < 0.74:
        return ref + "#" + rng.choice(("top", "comments", "section-2", ""))
    if c < 0.79 and start > 0:
        return ref[:start].upper() + ref[start:]
    if c < 0.84 and "%" in ref:
        if utf8 and rng.random() < 0.5 and all(int(x, 16) >= 0x80 for x in _ESCAPE.findall(ref)):
            return unquote(ref)
        return _ESCAPE.sub(lambda m: "%" + m.group(1).lower(), ref)
    if c < 0.89:
        inside = {m.start() + k for m in _ESCAPE.finditer(ref) for k in (1, 2)}
        letters = [i for i in range(start, len(ref)) if ref[i].isascii() and ref[i].isalpha() and i not in inside]
        if letters:
            i = rng.choice(letters)
            return f"{ref[:i]}%{ord(ref[i]):02X}{ref[i + 1:]}"
        return ref
    if c < 0.94 and ref.startswith("/") and not ref.startswith("//"):
        return rng.choice(("/.", "/x/..", "/./x/..")) + ref
    if c < 0.97 and len(ref) > start + 1:
        i = rng.randrange(start + 1, len(ref))
        return ref[:i] + rng.choice(("\t", "\n")) + ref[i:]
    return ref


def _item_variants(seed: int, pq: str) -> tuple[str, str]:
    """The two other URLs of a shop item that links name: its parameters reordered, a referrer,
    tracking parameters (canonicalisation keeps them all distinct; the server answers each)."""
    rng = _rng(seed, "variants", pq)
    ident = pq.partition("=")[2]
    ref = rng.choice(("home", "cat", "related"))
    shapes = (f"/item?id={ident}&ref={ref}", f"/item?ref={ref}&id={ident}",
              f"/item?id={ident}&utm_source={rng.choice(('newsletter', 'feed'))}&utm_medium=email",
              f"/item?utm_campaign={rng.choice(('spring', 'sale'))}&id={ident}")
    a, b = rng.sample(shapes, 2)
    return a, b


def _a(href: str, ref: _Ref, raw_amp: bool) -> str:
    """``<a href=...>``: ``&`` as ``&amp;``, or raw (HTML5 leaves ``&id=`` in an attribute alone)."""
    value = href.replace('"', "&quot;") if raw_amp else html.escape(href, quote=True)
    rel = f' rel="{ref.rel}"' if ref.rel else ""
    return f'<a href="{value}"{rel}>{html.escape(ref.anchor)}</a>'
