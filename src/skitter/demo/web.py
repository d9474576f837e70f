"""The bundled demo web: a generated, deterministic multi-host website with ground truth.

Pure: no I/O except :meth:`DemoWeb.write_static`. ``server.py`` serves it over HTTP on loopback.

Everything is derived from ``DemoConfig.seed`` with ``random.Random(f"{seed}:...")`` streams keyed
by host and URL, lazily per URL: nothing but a few small per-host tables is built up front, and
``respond`` for any URL costs O(size of that response). Same config + same base URLs → same bytes
(the base URLs matter: cross-host links are absolute).

Layout of host ``g`` (``base_urls[g]``); ``kind()`` in brackets::

    /                      [home] topics, featured articles, the previous/next host's home page,
                           the trap entry on trap hosts, /about.html where there is one, and
                           "Around the web": the other hosts' popular articles
    /t/<topic>/            [category] topic root listing (depth 1); /t/<topic>/<k>.html
                           sub-listings form a 10-ary tree of 25 articles each: articles are at
                           depth <= 5 up to ~27 k per topic and host, <= 6 up to ~270 k
    /a/<n>.html            [page] articles: title, meta description + keywords, h1/h2, 5-30 links
                           (~15 % to other hosts, ~70 % of same-host links to the same topic, some
                           bold/italic, ~6 % rel=nofollow), one topic each (topic_of);
                           ``popular_links`` (~10 %) of the content links go to the web's popular
                           articles: N/100 per host, each the last-listed (deepest) article of a
                           topic, never featured on its own home page, picked with Zipf weights
                           (1/sqrt(rank)); with the home pages' links to them they are the
                           important pages (PageRank) after the home pages
    /copy/<j>.html         [duplicate] the exact bytes of an article (duplicate_of)
    /old/<j>.html          [redirect] 301 → an article (relative Location)
    /private/<j>.html      [private] disallowed by robots.txt (except on the no-robots host), linked
    /files/<j>.pdf         [binary] application/pdf, 2-6 KiB
    /missing/<j>.html      [notfound] linked, 404 (as is every unknown path or unexpected query)
    /p/<name>.html         [<name>] one each, spread over hosts 0..6: noindex (meta robots),
                           nofollow (meta robots: every link is nofollow), xrobots (header
                           X-Robots-Tag: noindex, nofollow), cp1252 (charset in the header only),
                           sjis (Shift_JIS, <meta charset> only, no header charset), broken
                           (unclosed tags, invalid UTF-8, NUL bytes), gzip (Content-Encoding: gzip
                           when the request accepts gzip)
    /about.html            [about] on a host whose page budget needs one more page
    /robots.txt            [robots] not linked; /sitemap.xml [sitemap]: home + articles (≤ 50,000)

    host 0:             /chain/1.html → /chain/2.html → /chain/3.html → article (three 302 hops,
                        absolute Locations), /loop/a.html ⇄ /loop/b.html (302 loop),
                        /away.html → 301 to an article on host 1            [redirect]
    host 1 % hosts:     robots.txt ``Crawl-delay: <config.crawl_delay>`` (omitted if 0)
    host 2 % hosts:     robots.txt group ``User-agent: skitter``: Allow /no-skitter/welcome.html,
                        Disallow /no-skitter/ and /private/ (the ``*`` group allows /no-skitter/),
                        and ``User-agent: BadBot`` Disallow: /; pages /no-skitter/... [no-skitter]
    host 3 (hosts ≥ 4): robots.txt is a 404: everything allowed
    host 4 % hosts:     spider trap /calendar/<yyyy>/<mm>/ → previous and next month, forever
    host 5 % hosts:     spider trap /shop/?sid=<hex> → itself with a new sid, forever   [trap]
    every robots.txt (but the 404) has ``Disallow: /private/`` for ``*`` and a ``Sitemap:`` line.

Near duplicates (``near_duplicates=True``, the default; ground truth: ``near_duplicate_pairs()``,
``near_duplicate_family(url)``, ``near_duplicate_label(url)``). Some articles (never one that
carries a forced link to a special page) are replaced, keeping their URL, listing and topic, so the
page count does not change:

    families            on every host but the mirror, ~N/40 families: an original and 1 or 3
                        variants of it in the same topic, each with the original's title, text
                        and links: "edit" (2-8 words changed), "boilerplate" (other header,
                        navigation with 3 more sections, a "Popular" side bar with 3 more links,
                        a long footer), "reorder" (paragraphs shuffled; outlinks() follows)
    mirror host         host ``hosts - 1`` (hosts >= 3) mirrors host 0: its article of rank m (in
                        topic order) shows host 0's article of rank m — a variant stays a variant
                        — with its own chrome and its links mapped to its own pages, and a last
                        line "This article first appeared in …". Ranks below both hosts' special
                        pages keep their own articles.
    quotes              hard negatives, ~N/40 per host: an article that quotes (<blockquote>) the
                        longest link-free paragraph of another article, on the same host or
                        another one (``quoted_from``): shared text, but no near-duplicate.

``near_duplicate_pairs()`` holds the pairs within each family, including the mirror's copies;
exact duplicates (the /copy/ pages) are in no pair.

Articles, listings, the home page and the article-like specials are HTML of ``page_kb`` KiB; all
status-200 non-trap responses carry a deterministic ETag (a body hash) and Last-Modified, and
answer If-None-Match / If-Modified-Since with 304.

``len(pages()) == config.pages`` exactly: every finite status-200 URL (redirects, 404s, traps,
robots.txt and sitemap.xml are not counted). ``reachable()`` is the crawl ground truth.

The changing mode (``DemoConfig(changing=ChangeConfig(...))``, ``start_epoch=``; off by default,
and then nothing above changes by a byte): articles, copies, home pages and listings change as
Poisson processes (``changing.py``) with an "Update" paragraph in the main text, some pages carry
per-request noise in their boilerplate, ETags follow versions, Last-Modified is true, absent or
"now" by host, new articles appear and are announced on their home page, and the sitemaps give
lastmod and changefreq (host 1: a sitemap index with a gzip child). ``respond(..., now=t)`` serves
time ``t``; ``change_log``, ``version``, ``change_times``, ``last_changed`` and ``new_articles``
are its ground truth. docs/recrawl.md describes it.
"""

from __future__ import annotations

import bisect
import functools
import gzip
import hashlib
import itertools
import html
import json
import math
import os
import random
import re
import sys
from array import array
from collections import deque
from dataclasses import asdict, dataclass, field
from datetime import datetime, UTC
from email.utils import formatdate, parsedate_to_datetime
from pathlib import Path
from typing import Any, NamedTuple
from urllib.parse import urlsplit

from .changing import ChangeConfig, ChangeModel, changefreq

__all__ = ["Change", "ChangeConfig", "DemoConfig", "DemoWeb", "Response", "TOPIC_NAMES"]


# ----------------------------------------------------------------------------------------------
# configuration and records


@dataclass(frozen=True)
class DemoConfig:
    seed: int = 1
    hosts: int = 8
    pages: int = 3000                 # total finite (status 200) pages over all hosts, exactly
    page_kb: tuple[int, int] = (2, 12)  # size range of an HTML page body, in KiB
    topics: int = 10
    cross_host_links: float = 0.15    # share of an article's content links that go to another host
    popular_links: float = 0.1        # share of an article's content links to the web's popular articles
    crawl_delay: float = 0.5          # the Crawl-delay of the one host that has one (0: none)
    near_duplicates: bool = True      # near-duplicate families and the mirror host (see the module doc)
    changing: ChangeConfig | None = None  # the changing mode (see the module doc); None: a static web

    def __post_init__(self) -> None:
        if self.hosts < 1:
            raise ValueError("hosts must be >= 1")
        if self.topics < 1:
            raise ValueError("topics must be >= 1")
        lo, hi = self.page_kb
        if not (0 < lo <= hi):
            raise ValueError("page_kb must be (lo, hi) with 0 < lo <= hi")
        if not (0.0 <= self.cross_host_links <= 1.0):
            raise ValueError("cross_host_links must be within [0, 1]")
        if not (0.0 <= self.popular_links < 1.0):
            raise ValueError("popular_links must be within [0, 1)")
        if self.crawl_delay < 0:
            raise ValueError("crawl_delay must be >= 0")


class Change(NamedTuple):
    """One entry of the changing web's ground-truth log: at wall-clock ``time``, ``url`` changed
    (``kind`` "change") or appeared (``kind`` "new": a new article, linked from then on)."""

    time: float
    url: str
    kind: str


@dataclass(frozen=True)
class Response:
    status: int
    headers: list[tuple[str, str]]
    body: bytes

    def header(self, name: str) -> str | None:
        name = name.lower()
        for k, v in self.headers:
            if k.lower() == name:
                return v
        return None


# ----------------------------------------------------------------------------------------------
# vocabularies

TOPIC_NAMES = ["astronomy", "cooking", "gardening", "sailing", "music",
               "chess", "geology", "medicine", "programming", "finance"]

_TOPIC_WORDS: list[str] = [
    # astronomy
    """telescope nebula galaxy quasar pulsar comet asteroid meteor orbit eclipse supernova
    constellation parallax redshift spectroscopy exoplanet perihelion aphelion zenith azimuth
    declination luminosity photometry observatory astrolabe cosmology gravitational interstellar
    galactic solstice equinox meridian ecliptic protostar accretion corona chromosphere sunspot
    heliosphere magnetar neutrino planetarium astronomer satellite lunar solar nebulae celestial
    astrophysics spectrograph wavelength infrared ultraviolet aurora stargazing cosmic dwarf
    blackhole moonrise starlight orbital""",
    # cooking
    """braise saute simmer marinade roux broth dough knead caramelize whisk skillet saucepan
    oregano basil thyme rosemary cumin paprika saffron garlic shallot scallion vinaigrette
    emulsion souffle risotto gnocchi ravioli lasagna focaccia brioche sourdough yeast ferment
    poach blanch julienne mince zest custard meringue ganache praline glaze brine stew casserole
    chutney pesto aioli bechamel tempura dumpling noodle griddle ladle colander spatula recipe
    oven""",
    # gardening
    """compost mulch seedling perennial trellis pruning shears fertilizer loam humus aphid
    pollinator germinate cultivar rootstock grafting hedge shrub tuber bulb rhizome foliage
    blossom petal stamen greenhouse cloche orchard seedbed tomato zucchini lettuce cabbage kale
    marigold lavender hydrangea peony tulip daffodil irrigation sprinkler weeding topsoil subsoil
    earthworm manure allotment potting propagation mildew blight wheelbarrow spade trowel sapling
    espalier deadheading herbaceous""",
    # sailing
    """hull keel rudder tiller mast jib mainsail spinnaker halyard winch cleat stern starboard
    leeward windward tacking gybe mooring anchorage buoy regatta catamaran trimaran dinghy
    schooner ketch sloop knots nautical helm helmsman bosun galley berth bilge transom forestay
    backstay shroud reefing heeling capsize ballast sextant lighthouse harbour marina tide swell
    gust squall doldrums headsail furling outboard yacht skipper crew deck portside seamanship""",
    # music
    """melody harmony rhythm chord octave sonata symphony concerto orchestra conductor violin
    cello viola oboe clarinet bassoon trumpet trombone timpani piano harpsichord arpeggio
    crescendo staccato legato fortissimo pianissimo cadenza overture fugue counterpoint motif
    improvisation syncopation chorus soprano tenor baritone contralto aria opera libretto
    metronome tuning fret guitar banjo mandolin saxophone drummer percussion ensemble quartet
    recital rehearsal encore treble allegro adagio minuet nocturne etude""",
    # chess
    """gambit checkmate stalemate castling bishop knight rook pawn queenside kingside endgame
    middlegame fianchetto zugzwang blunder grandmaster tournament sicilian najdorf catalan
    gruenfeld chessboard blitz arbiter simul centipawn transposition prophylaxis counterattack
    fortress underpromotion perpetual resignation fischer kasparov capablanca alekhine botvinnik
    carlsen nimzowitsch philidor petrov pirc alapin scotch vienna benoni dutch slav isolani
    outpost zwischenzug checkmating elo opposition kibitzer patzer stalemated zeitnot""",
    # geology
    """basalt granite obsidian quartz feldspar mica sediment sedimentary igneous metamorphic
    magma lava tectonic subduction erosion glacier moraine stratum strata fossil limestone
    sandstone shale slate marble gneiss schist mineral geode volcano caldera geyser aquifer
    bedrock outcrop escarpment canyon alluvial silt lithosphere mantle crust seismic earthquake
    tsunami epicenter stalactite stalagmite karst dolomite pumice tuff rhyolite andesite
    paleontology radiometric geologist mineralogy petrology""",
    # medicine
    """diagnosis symptom vaccine antibody antigen pathogen bacteria virus antibiotic dosage
    prescription pharmacist surgeon anesthesia cardiology neurology oncology pediatric clinic
    hospital patient nurse stethoscope syringe insulin diabetes hypertension cholesterol
    inflammation immune immunity fever infection chronic acute therapy physiotherapy radiology
    biopsy tumor lesion fracture ligament tendon cartilage artery vein capillary hemoglobin
    platelet allergy asthma migraine epidemic pandemic placebo clinical physician""",
    # programming
    """compiler interpreter function variable pointer recursion algorithm iterator closure lambda
    bytecode runtime debugger breakpoint refactor repository codebase syntax parser tokenizer
    polymorphism inheritance encapsulation framework dependency concurrency thread mutex deadlock
    coroutine asynchronous callback exception stacktrace allocator hashmap array linkedlist
    integer boolean unicode endpoint serialization json kernel linux terminal shell script python
    javascript typescript rust golang linker opcode assembler virtualenv unittest""",
    # finance
    """dividend equity bond portfolio stock shareholder investor inflation mortgage loan credit
    debit ledger accountant audit revenue profit liquidity solvency bankruptcy derivative futures
    hedging arbitrage volatility valuation asset liability depreciation amortization collateral
    escrow broker brokerage nasdaq treasury fiscal monetary recession tariff currency forex
    bullish bearish mutual pension annuity insurance premium underwriting capital venture ipo
    earnings quarterly taxation deduction invoice payroll cashflow bookkeeping""",
]
_TOPIC_WORDS_SPLIT: list[list[str]] = [w.split() for w in _TOPIC_WORDS]

_COMMON = """the of and to in is that it was for on are as with his they at be this from have or by
one had not but what all were when we there can an your which their said if do will each about how
up out them then she many some so these would other into has more her two like him see time could
no make than first been its who now people my made over did down only way find use may water long
little very after words called just where most know get through back much before go good new write
our used me man too any day same right look think also around another came come work three word must
because does part even place well such here take why things help put years different away again off
went old number great tell men say small every found still between name should home big give air
line set own under read last never us left end along while might next sound below saw something
thought both few those always looked show large often together asked house world going want school
important until form food keep children feet land side without once animals life enough took
sometimes four head above kind began almost live page got earth need far hand high year mother light
parts country father let night following picture being study second eyes soon times story since
white days ever paper hard near sentence better best across during today others however sure means
knew try told young miles sun ways thing whole hear example heard several change answer room sea
against top turned learn point city play toward five using himself usually""".split()

_TITLE_NOUNS = ("guide notes story history basics secrets lessons questions answers tips mistakes "
                "myths science art craft season journey field world future primer handbook review "
                "diary letters sketches case").split()
_TITLE_ADJS = ("quiet modern practical forgotten hidden simple complete early late curious small "
               "great honest patient unexpected everyday").split()
_TITLE_FORMS = ("{a} and {b}", "the {j} {a}", "{n} of {a}", "why {a} matters", "a {j} guide to {a}",
                "{a}, {b} and {c}", "{j} {a} {n}", "on {a} and {b}", "the {a} {n}",
                "how {a} shapes {b}", "{a} for beginners", "notes on {j} {a}", "{a} in {j} times",
                "what {a} teaches about {b}", "the {n} of {j} {a}", "{a} after {b}")

_SMALL = {"of", "the", "and", "to", "in", "a", "an", "on", "for", "at", "by", "or", "with", "from",
          "about", "after"}

_SITE_NAMES = ["Northwind Journal", "Copper Kettle Review", "Blue Heron Notes", "Quarry Lane Gazette",
               "Harbor Light Digest", "Maple and Vine", "Foxglove Press", "Iron Bridge Weekly",
               "Silver Birch Chronicle", "Lantern Street Post", "Tidewater Almanac",
               "Granite Peak Bulletin"]

_SYLLABLES = ("ka to ri mu ne sa lo vi de pa zu qui bor tem lan fis gor wen dra pel "
              "mon tri sel var kun").split()

_JA_SENTENCES = [
    "今日は天気がとても良いので、公園を散歩しました。",
    "この記事では、日本の伝統的な文化について説明します。",
    "東京の街は夜になると、たくさんの明かりで輝きます。",
    "図書館で新しい本を借りて、週末に読むつもりです。",
    "春になると、桜の花が咲いて多くの人が花見を楽しみます。",
    "富士山は日本で一番高い山として知られています。",
    "駅の近くに新しい喫茶店が開店しました。",
    "私たちは毎朝、七時に朝ごはんを食べます。",
    "この町の歴史は千年以上前にさかのぼります。",
    "夏祭りでは花火大会が開かれ、とても賑やかです。",
    "秋の紅葉は山を赤と黄色に染めます。",
    "冬には雪が降り、子供たちは雪だるまを作ります。",
]

_CP1252_PHRASES = ["the café’s “special” menu", "a naïve façade", "costs €12 — or so",
                   "Müller’s résumé", "the ‘quoted’ word", "™ and © notices", "an élite señor",
                   "dash – en dash — em dash", "…and so on"]

SINGLES = ("noindex", "nofollow", "xrobots", "cp1252", "sjis", "broken", "gzip")

# near-duplicate families (DemoWeb._plan_near_duplicates): the variants of one original, by family
_FAMILY_TYPES = (("edit",), ("boilerplate",), ("reorder",), ("edit", "boilerplate", "reorder"))
_BOILER_LINKS = 6      # links the "boilerplate" variant adds: 3 more sections in the nav, 3 in a side bar
_BOILER_BYTES = 2600   # bytes it adds, at most (the original is chosen small enough to stay in page_kb)
_TAGLINES = ["independent writing since 1998", "the weekly digest for curious readers",
             "long reads, short summaries", "stories worth a second look"]

P = 25   # articles per listing page
B = 10   # sub-listings per listing page
_EPOCH = 1704067200  # 2024-01-01T00:00:00Z
_POOL = 4096


def _build_pool(topic_words: list[str], share: float = 0.3) -> list[str]:
    """A 4096-slot word pool: ``share`` of it topic words, the rest common words (Zipf weights)."""
    def counts(words: list[str], total: float, offset: float) -> list[int]:
        w = [1.0 / (r + offset) for r in range(len(words))]
        s = sum(w)
        return [max(1, round(total * x / s)) for x in w]

    tc = counts(topic_words, share * _POOL, 4.0)
    cc = counts(_COMMON, _POOL - sum(tc), 3.0)
    pool: list[str] = []
    for word, c in zip(topic_words, tc):
        pool += [word] * c
    for word, c in zip(_COMMON, cc):
        pool += [word] * c
    if len(pool) > _POOL:
        # trim the most frequent common words (they are at the front of the common part)
        excess = len(pool) - _POOL
        start = sum(tc)
        del pool[start:start + excess]
    while len(pool) < _POOL:
        pool.append(_COMMON[len(pool) % 20])
    out = _Pool(pool)
    out.avg = sum(map(len, pool)) / len(pool) + 1.0
    return out


def _synthetic_words(seed: int, t: int, n: int = 60) -> list[str]:
    rng = random.Random(f"{seed}:vocab:{t}")
    out: list[str] = []
    seen = set(_COMMON)
    for words in _TOPIC_WORDS_SPLIT:
        seen.update(words)
    while len(out) < n:
        w = "".join(rng.choice(_SYLLABLES) for _ in range(rng.randint(2, 4)))
        if w not in seen:
            seen.add(w)
            out.append(w)
    return out


def _words(rng: random.Random, pool: list[str], k: int) -> list[str]:
    """k words from a 4096-slot pool; fast (randbytes), platform-independent."""
    a = array("H", rng.randbytes(2 * k))
    if sys.byteorder == "big":
        a.byteswap()
    return [pool[i & (_POOL - 1)] for i in a]


def _avg_len(pool: list[str]) -> float:
    """Mean length of a pool word plus its space (cached on the pool)."""
    v = getattr(pool, "avg", None)
    if v is None:
        v = sum(map(len, pool)) / len(pool) + 1.0
    return v


class _Pool(list):
    avg: float


def _hash64(text: str) -> int:
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little")


def _title_case(words: list[str]) -> str:
    return " ".join(w if (i and w in _SMALL) else w[:1].upper() + w[1:] for i, w in enumerate(words))


# ----------------------------------------------------------------------------------------------
# links


@dataclass(slots=True)
class _Link:
    url: str                  # absolute
    href: str                 # as written in the HTML
    anchor: str = ""
    title_ref: tuple[int, int] | None = None   # (host, article) whose title is the anchor
    rel: str = ""
    style: int = 0            # 1 bold, 2 italic, 3 both
    u: float = 0.0            # position in the text (inline links)
    html: str | None = None   # rendered <a> (memo)
    g: int = -1               # the target's host and path (url == base_urls[g] + path)
    path: str = ""

    @property
    def nofollow(self) -> bool:
        return "nofollow" in self.rel.split()


@dataclass(slots=True)
class _Links:
    nav: list[_Link] = field(default_factory=list)
    inline: list[_Link] = field(default_factory=list)           # sorted by u
    lists: list[tuple[str, list[_Link]]] = field(default_factory=list)
    all_nofollow: bool = False
    foot: list[_Link] = field(default_factory=list)             # after the lists (side bar)

    def flat(self) -> list[_Link]:
        out = list(self.nav) + list(self.inline)
        for _, links in self.lists:
            out += links
        return out + list(self.foot)


# ----------------------------------------------------------------------------------------------
# hosts


class _Host:
    """The small per-host tables: article count, topic permutation, the special pages."""

    def __init__(self, web: DemoWeb, g: int, budget: int) -> None:
        cfg = web.config
        n_hosts, T = cfg.hosts, cfg.topics
        self.T = T
        self.g = g
        self.base = web.base_urls[g]
        self.name = _SITE_NAMES[g % len(_SITE_NAMES)] + (f" {g // len(_SITE_NAMES) + 1}"
                                                          if g >= len(_SITE_NAMES) else "")
        self.is_delay = g == 1 % n_hosts and cfg.crawl_delay > 0
        self.is_skitter = g == 2 % n_hosts
        self.no_robots = n_hosts >= 4 and g == 3
        self.calendar = g == 4 % n_hosts
        self.shop = g == 5 % n_hosts
        self.redirects = g == 0
        self.singles = [s for i, s in enumerate(SINGLES) if i % n_hosts == g]

        self.n_copies = max(1, budget // 100)
        self.n_old = max(1, budget // 100)
        self.n_private = max(1, budget // 200)
        self.n_files = max(1, budget // 250)
        self.n_missing = max(1, budget // 250)
        self.n_noskitter = max(1, budget // 250) if self.is_skitter else 0
        fixed = 1 + self.n_copies + self.n_private + self.n_files + len(self.singles)
        if self.is_skitter:
            fixed += self.n_noskitter + 1   # + /no-skitter/welcome.html
        rest = budget - fixed

        def f(n: int) -> int:  # pages used by n articles and their listings
            return n + sum(max(1, math.ceil(self._count(n, t, T) / P)) for t in range(T))

        lo, hi = 0, max(0, rest)
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if f(mid) <= rest:
                lo = mid
            else:
                hi = mid - 1
        n = lo
        if n < 1:
            raise ValueError(f"DemoConfig.pages={cfg.pages} is too small for {n_hosts} hosts "
                             f"and {T} topics")
        self.N = n
        self.has_about = f(n) == rest - 1
        self.topic_counts = [self._count(n, t, T) for t in range(T)]
        self.listing_counts = [max(1, math.ceil(c / P)) for c in self.topic_counts]

        rng = random.Random(f"{cfg.seed}:host:{g}")
        if n == 1:
            self.a, self.b = 1, 0
        else:
            while True:
                a = rng.randrange(1, n)
                if math.gcd(a, n) == 1:
                    break
            self.a, self.b = a, rng.randrange(n)
        self.a_inv = pow(self.a, -1, n) if n > 1 else 0
        self.copies = [rng.randrange(n) for _ in range(self.n_copies)]
        self.old = [rng.randrange(n) for _ in range(self.n_old)]

        # every special page is linked (followably) from a shallow article: special j from
        # article m = j % N (m in topic order, so small m sits in the first listings)
        sp: list[tuple[str, str, tuple[int, int] | None]] = []   # (path, anchor, title_ref)
        for j in range(self.n_copies):
            sp.append((f"/copy/{j}.html", "", (g, self.copies[j])))
        for j in range(self.n_old):
            sp.append((f"/old/{j}.html", "", (g, self.old[j])))
        for j in range(self.n_private):
            sp.append((f"/private/{j}.html", "Members area", None))
        for j in range(self.n_files):
            sp.append((f"/files/{j}.pdf", "Download the PDF report", None))
        for j in range(self.n_missing):
            sp.append((f"/missing/{j}.html", "An older page", None))
        if self.is_skitter:
            sp.append(("/no-skitter/welcome.html", "Staff welcome", None))
            for j in range(self.n_noskitter):
                sp.append((f"/no-skitter/{j}.html", "Staff notes", None))
        for s in self.singles:
            sp.append((f"/p/{s}.html", f"Special: {s}", None))
        if self.redirects:
            sp.append(("/chain/1.html", "The archive", None))
            sp.append(("/loop/a.html", "Circular reference", None))
            sp.append(("/away.html", "Our partner's article", None))
        self.specials = sp
        # popular articles: N/100, the last (deepest-listed) article of a topic each, topics spread
        # over the hosts; linked from ~popular_links of all content links and from the other hosts'
        # home pages (DemoWeb._links), never featured on their own home page
        self.popular: list[int] = []
        for j in range(max(1, n // 100)):
            t = (j + g) % T
            i = self.topic_counts[t] - 1 - j // T
            if i >= 0 and t + T * i >= len(sp):
                self.popular.append(self.article(t, i))
        # near duplicates (DemoWeb._plan_near_duplicates): article -> (original, variant type)
        self.variant_of: dict[int, tuple[int, str]] = {}
        self.families: list[list[int]] = []     # [original, variant, ...] per family
        self.mirror_of: int | None = None       # the host whose articles this one mirrors
        self.mirror_from = 0                    # articles of rank >= this (and < origin's N) are mirrored
        self.quote_of: dict[int, tuple[int, int, str]] = {}   # article -> (host, article, paragraph)
        # targets that articles may link to at random (besides the forced links)
        self.random_specials = [s for s in sp if s[0].startswith(("/copy/", "/old/", "/private/",
                                                                  "/files/", "/missing/"))]

    @staticmethod
    def _count(n: int, t: int, T: int) -> int:
        return (n - t + T - 1) // T if n > t else 0

    # article n <-> m (its rank in topic order) <-> (topic t, index i within the topic)
    def article(self, t: int, i: int) -> int:
        return (self.a * (t + self.T * i) + self.b) % self.N

    def rank(self, n: int) -> int:
        return (self.a_inv * (n - self.b)) % self.N

    def topic_index(self, n: int) -> tuple[int, int]:
        m = self.rank(n)
        return m % self.T, m // self.T

    def random_article(self, rng: random.Random, topic: int | None) -> int:
        if topic is not None and self.topic_counts[topic]:
            return self.article(topic, rng.randrange(self.topic_counts[topic]))
        return rng.randrange(self.N)


# ----------------------------------------------------------------------------------------------
# the web

_RE_ART = re.compile(r"/a/(0|[1-9][0-9]*)\.html")
_RE_TOPIC = re.compile(r"/t/([a-z0-9]+)/(?:([1-9][0-9]*)\.html)?")
_RE_NUM = re.compile(r"/(copy|old|private|files|missing|no-skitter)/(0|[1-9][0-9]*)\.(html|pdf)")
_RE_P = re.compile(r"/p/([a-z0-9]+)\.html")
_RE_CHAIN = re.compile(r"/chain/([123])\.html")
_RE_LOOP = re.compile(r"/loop/([ab])\.html")
_RE_CAL = re.compile(r"/calendar/([0-9]{4,12})/(0[1-9]|1[0-2])/")
_RE_SID = re.compile(r"sid=([0-9a-f]{1,32})")

_HTML = "text/html; charset=utf-8"


class DemoWeb:
    """The demo web for one config and one set of base URLs (one per host)."""

    def __init__(self, config: DemoConfig, base_urls: list[str], *,
                 start_epoch: float | None = None) -> None:
        """``start_epoch``: when the changing web's clock starts (the server's start time; default
        2024-01-01); ignored by a static web."""
        if len(base_urls) != config.hosts:
            raise ValueError(f"need {config.hosts} base URLs, got {len(base_urls)}")
        self.config = config
        self.base_urls = [u.rstrip("/") for u in base_urls]
        self._host_of = {u: g for g, u in enumerate(self.base_urls)}
        if len(self._host_of) != len(self.base_urls):
            raise ValueError("base URLs must be distinct")
        T = config.topics
        self._topic_words = [(_TOPIC_WORDS_SPLIT[t] if t < len(_TOPIC_WORDS_SPLIT)
                              else _synthetic_words(config.seed, t)) for t in range(T)]
        self.topic_names = [(TOPIC_NAMES[t] if t < len(TOPIC_NAMES) else f"topic{t}")
                            for t in range(T)]
        self._topic_by_slug = {s: t for t, s in enumerate(self.topic_names)}
        self._pools = [_build_pool(w) for w in self._topic_words]
        self._common_pool = _build_pool(["the"], share=0.0)
        # titles are anchors of the links to an article: memoised (bounded)
        self._title = functools.lru_cache(maxsize=200_000)(self._title_uncached)
        per, extra = divmod(config.pages, config.hosts)
        self.hosts = [_Host(self, g, per + (1 if g < extra else 0)) for g in range(config.hosts)]
        # the web's popular articles, the j-th of every host before the (j+1)-th of any, and their
        # cumulative Zipf weights (1/sqrt(rank)): the targets of the popular content links
        most = max((len(h.popular) for h in self.hosts), default=0)
        self._popular = [(h.g, h.popular[j]) for j in range(most) for h in self.hosts if j < len(h.popular)]
        self._popular_set = set(self._popular)
        self._popular_cum = list(itertools.accumulate(1.0 / math.sqrt(r + 1)
                                                      for r in range(len(self._popular))))
        self._cal_start = (2024, 1)
        self._page_links_cache = functools.lru_cache(maxsize=4096)(self._page_links_uncached)
        self._families_memo: dict[str, list[str]] | None = None
        if config.near_duplicates:
            self._plan_near_duplicates()
        self.start_epoch = float(_EPOCH if start_epoch is None else start_epoch)
        self.changes = (ChangeModel(config.changing, self.start_epoch, seed=config.seed)
                        if config.changing is not None else None)
        self._index_host = 1 % config.hosts   # the host with a sitemap index (changing mode)

    # ------------------------------------------------------------------ near duplicates (plan)

    def _plan_near_duplicates(self) -> None:
        """Choose the near-duplicate families of every host and the mirror host.

        Only articles of rank >= len(specials) take part (they carry no forced link to a special
        page, so a variant that shows its original's links loses no path to any page)."""
        cfg = self.config
        T = cfg.topics
        mirror = cfg.hosts - 1 if cfg.hosts >= 3 else None
        hi = cfg.page_kb[1] * 1024
        for h in self.hosts:
            if h.g == mirror:
                continue
            S = len(h.specials)
            if h.N - S < 8:
                continue
            rng = random.Random(f"{cfg.seed}:near:{h.g}")
            used: set[int] = set()

            def target(n: int, g: int = h.g) -> int:
                return self._target_size(random.Random(f"{cfg.seed}:text:{g}:{n}"))

            for j in range(max(1, h.N // 40)):
                types = _FAMILY_TYPES[j % len(_FAMILY_TYPES)]
                for _ in range(40):
                    m = rng.randrange(S, h.N)
                    t = m % T
                    o = h.article(t, m // T)
                    if o in used:
                        continue
                    size = target(o)
                    if "boilerplate" in types and (
                            size + _BOILER_BYTES > hi or
                            len(self._base_links(h.g, o).flat()) + _BOILER_LINKS > 30):
                        continue
                    if "reorder" in types and size < 3000:
                        continue
                    members = [o]
                    for _ in range(4 * len(types)):
                        if len(members) > len(types):
                            break
                        i = rng.randrange(h.topic_counts[t])
                        v = h.article(t, i)
                        if t + T * i >= S and v not in used and v not in members:
                            members.append(v)
                    if len(members) <= len(types):
                        continue
                    used.update(members)
                    for v, vt in zip(members[1:], types):
                        h.variant_of[v] = (o, vt)
                    h.families.append(members)
                    break
        if mirror is not None:
            hm, ho = self.hosts[mirror], self.hosts[0]
            hm.mirror_of = 0
            hm.mirror_from = max(len(hm.specials), len(ho.specials))
        # hard negatives: articles that quote a paragraph of another article (same host or not)
        for h in self.hosts:
            if h.g == mirror:
                continue
            S = len(h.specials)
            if h.N - S < 8:
                continue
            rng = random.Random(f"{cfg.seed}:quote:{h.g}")
            taken = {n for fam in h.families for n in fam}
            for j in range(max(1, h.N // 40)):
                for _ in range(40):
                    m = rng.randrange(S, h.N)
                    q = h.article(m % T, m // T)
                    gp = h.g if j % 2 == 0 or cfg.hosts == 1 else rng.randrange(cfg.hosts)
                    hp = self.hosts[gp]
                    m2 = rng.randrange(len(hp.specials), hp.N) if hp.N > len(hp.specials) else 0
                    p = hp.article(m2 % T, m2 // T)
                    if q in taken or q in h.quote_of or (gp, p) == (h.g, q):
                        continue
                    para = self._quote_paragraph(gp, p)
                    size = self._target_size(random.Random(f"{cfg.seed}:text:{h.g}:{q}"))
                    if not para or size + len(para) + 40 > hi or len(para) > 0.3 * size:
                        continue
                    h.quote_of[q] = (gp, p, para)
                    taken.add(q)
                    break

    def _quote_paragraph(self, g: int, n: int) -> str | None:
        """The longest paragraph without links of article ``n`` of host ``g`` (as HTML)."""
        body = self._article_html(g, n, quote=False)
        paras = [p for p in re.findall(r"<p>.*?</p>", body) if "<a " not in p]
        return max(paras, key=len) if paras else None

    def _mirrored(self, h: _Host, n: int) -> bool:
        if h.mirror_of is None:
            return False
        m = h.rank(n)
        return h.mirror_from <= m < self.hosts[h.mirror_of].N

    def _source(self, g: int, n: int) -> tuple[int, int, str | None, tuple[int, int]]:
        """Where the text of article ``n`` of host ``g`` comes from: ``(host, article, variant type,
        variant key)``; the article itself with type None for an ordinary article. A mirrored
        article shows the origin's article of the same rank (a variant there stays a variant)."""
        h = self.hosts[g]
        if h.mirror_of is not None and self._mirrored(h, n):
            go = h.mirror_of
            m = h.rank(n)
            return self._source(go, self.hosts[go].article(m % self.config.topics, m // self.config.topics))
        v = h.variant_of.get(n)
        if v is not None:
            return g, v[0], v[1], (g, n)
        return g, n, None, (g, n)

    # ------------------------------------------------------------------ URL helpers

    def _split(self, url: str) -> tuple[int, str] | None:
        parts = urlsplit(url)
        g = self._host_of.get(f"{parts.scheme}://{parts.netloc}")
        if g is None:
            return None
        path = parts.path or "/"
        return g, path + ("?" + parts.query if parts.query else "")

    def _url(self, g: int, path: str) -> str:
        return self.base_urls[g] + path

    def _classify(self, g: int, path_qs: str) -> tuple[str, Any]:
        """(kind, ident): the ident's shape depends on the kind: an article number (page), (topic,
        listing page) (category), (what, number) (duplicate, private, binary, notfound), ("shop",
        sid) or ("calendar", year, month) (trap), ("chain", n), ("loop", "a"/"b"), ("away", 0)
        (redirect), ("no-skitter", "welcome"), or None."""
        h = self.hosts[g]
        path, _, query = path_qs.partition("?")
        if query or "?" in path_qs:
            if h.shop and path == "/shop/":
                m = _RE_SID.fullmatch(query)
                return "trap", ("shop", m.group(1) if m else "")
            return "notfound", None
        if path == "/":
            return "home", None
        m = _RE_ART.fullmatch(path)
        if m:
            n = int(m.group(1))
            return ("page", n) if n < h.N else ("notfound", None)
        m = _RE_TOPIC.fullmatch(path)
        if m:
            t = self._topic_by_slug.get(m.group(1))
            if t is None:
                return "notfound", None
            k = int(m.group(2)) if m.group(2) else 0
            return ("category", (t, k)) if k < h.listing_counts[t] else ("notfound", None)
        m = _RE_NUM.fullmatch(path)
        if m:
            what, j, ext = m.group(1), int(m.group(2)), m.group(3)
            if (what == "files") != (ext == "pdf"):
                return "notfound", None
            limit = {"copy": h.n_copies, "old": h.n_old, "private": h.n_private,
                     "files": h.n_files, "missing": h.n_missing, "no-skitter": h.n_noskitter}[what]
            if j >= limit:
                return "notfound", None
            kind = {"copy": "duplicate", "old": "redirect", "private": "private", "files": "binary",
                    "missing": "notfound", "no-skitter": "no-skitter"}[what]
            return kind, (what, j)
        m = _RE_P.fullmatch(path)
        if m:
            return (m.group(1), None) if m.group(1) in h.singles else ("notfound", None)
        if path == "/robots.txt":
            return ("notfound", None) if h.no_robots else ("robots", None)
        if path == "/sitemap.xml":
            return "sitemap", None
        if path == "/about.html" and h.has_about:
            return "about", None
        if path == "/no-skitter/welcome.html" and h.is_skitter:
            return "no-skitter", ("no-skitter", "welcome")
        if h.redirects:
            m = _RE_CHAIN.fullmatch(path)
            if m:
                return "redirect", ("chain", int(m.group(1)))
            m = _RE_LOOP.fullmatch(path)
            if m:
                return "redirect", ("loop", m.group(1))
            if path == "/away.html":
                return "redirect", ("away", 0)
        if h.calendar:
            m = _RE_CAL.fullmatch(path)
            if m:
                y, mo = int(m.group(1)), int(m.group(2))
                if y >= 1 and m.group(1) == f"{y:04d}":
                    return "trap", ("calendar", y, mo)
        return "notfound", None

    # ------------------------------------------------------------------ public ground truth

    def seeds(self) -> list[str]:
        return [b + "/" for b in self.base_urls]

    def pages(self) -> list[str]:
        out: list[str] = []
        for h in self.hosts:
            g = h.g
            out.append(self._url(g, "/"))
            for t in range(self.config.topics):
                for k in range(h.listing_counts[t]):
                    out.append(self._url(g, self._listing_path(t, k)))
            out += [self._url(g, f"/a/{n}.html") for n in range(h.N)]
            out += [self._url(g, f"/copy/{j}.html") for j in range(h.n_copies)]
            out += [self._url(g, f"/private/{j}.html") for j in range(h.n_private)]
            out += [self._url(g, f"/files/{j}.pdf") for j in range(h.n_files)]
            if h.is_skitter:
                out.append(self._url(g, "/no-skitter/welcome.html"))
                out += [self._url(g, f"/no-skitter/{j}.html") for j in range(h.n_noskitter)]
            out += [self._url(g, f"/p/{s}.html") for s in h.singles]
            if h.has_about:
                out.append(self._url(g, "/about.html"))
        return out

    def kind(self, url: str) -> str:
        s = self._split(url)
        if s is None:
            return "offsite"
        return self._classify(*s)[0]

    def topic_of(self, url: str) -> int | None:
        s = self._split(url)
        if s is None:
            return None
        g, path = s
        kind, ident = self._classify(g, path)
        if kind == "page":
            return self.hosts[g].topic_index(ident)[0]
        if kind == "duplicate":
            return self.hosts[g].topic_index(self.hosts[g].copies[ident[1]])[0]
        if kind == "category":
            return ident[0]
        if kind in ("private", "no-skitter", "about", "noindex", "nofollow", "xrobots", "cp1252",
                    "gzip"):
            return self._special_topic(g, path)
        return None

    def duplicate_of(self, url: str) -> str | None:
        s = self._split(url)
        if s is None:
            return None
        g, path = s
        kind, ident = self._classify(g, path)
        if kind == "duplicate":
            return self._url(g, f"/a/{self.hosts[g].copies[ident[1]]}.html")
        return None

    def duplicate_group(self, url: str) -> list[str]:
        """Every URL serving exactly the same 200 body as ``url``: the article first, then its
        copies ([url] if it has none; [] if ``url`` is no article or copy)."""
        s = self._split(url)
        if s is None:
            return []
        g, path = s
        kind, ident = self._classify(g, path)
        h = self.hosts[g]
        if kind == "duplicate":
            n = h.copies[ident[1]]
        elif kind == "page":
            n = ident
        else:
            return []
        return [self._url(g, f"/a/{n}.html")] + [self._url(g, f"/copy/{j}.html")
                                                 for j, m in enumerate(h.copies) if m == n]

    def _families(self) -> dict[str, list[str]]:
        if self._families_memo is None:
            groups: dict[tuple[int, int], list[str]] = {}
            for h in self.hosts:
                for fam in h.families:
                    groups[(h.g, fam[0])] = [self._url(h.g, f"/a/{n}.html") for n in fam]
            for h in self.hosts:
                if h.mirror_of is None:
                    continue
                for n in range(h.N):
                    if self._mirrored(h, n):
                        gb, nb, _, _ = self._source(h.g, n)
                        groups.setdefault((gb, nb), [self._url(gb, f"/a/{nb}.html")]).append(
                            self._url(h.g, f"/a/{n}.html"))
            self._families_memo = {u: fam for fam in groups.values() for u in fam}
        return self._families_memo

    def near_duplicate_family(self, url: str) -> list[str]:
        """The URLs whose content is a near-duplicate of ``url``'s, ``url`` included: the family's
        original first, then its variants on the same host, then the mirror host's copies.
        ``[url]`` for an article with no near-duplicate; for an exact copy (/copy/), the family of
        the article it copies (the copy itself is left out, as it is of every family: it is an exact
        duplicate, see ``duplicate_group``); [] for any other URL."""
        s = self._split(url)
        if s is None:
            return []
        kind, ident = self._classify(*s)
        if kind == "duplicate":
            url = self._url(s[0], f"/a/{self.hosts[s[0]].copies[ident[1]]}.html")
        elif kind != "page":
            return []
        return list(self._families().get(url, [url]))

    def near_duplicate_pairs(self) -> set[frozenset[str]]:
        """Ground truth of near-duplicate detection: every pair of status-200 URLs that serve
        different bytes with near-duplicate content (the pairs within each family of
        ``near_duplicate_family``). Exact duplicates are excluded: the /copy/ URLs are in no pair
        (the content-seen test finds them first)."""
        out: set[frozenset[str]] = set()
        seen: set[int] = set()
        for fam in self._families().values():
            if id(fam) in seen:
                continue
            seen.add(id(fam))
            for i, u in enumerate(fam):
                for v in fam[i + 1:]:
                    out.add(frozenset((u, v)))
        return out

    def near_duplicate_label(self, url: str) -> str | None:
        """How article ``url`` came about: "original" (of a family), "edit", "boilerplate",
        "reorder" (same-host variants), "mirror" (on the mirror host, of any of these), "quote" (a
        hard negative: quotes a paragraph of ``quoted_from(url)``; a mirrored quote article is still
        the original of its mirror copy), or None."""
        s = self._split(url)
        if s is None or self._classify(*s)[0] != "page":
            return None
        g, path = s
        n = int(path[3:-5])
        if self._mirrored(self.hosts[g], n):
            return "mirror"
        v = self.hosts[g].variant_of.get(n)
        if v is not None:
            return v[1]
        if n in self.hosts[g].quote_of:
            return "quote"
        return "original" if url in self._families() else None

    def quoted_from(self, url: str) -> str | None:
        """The article a "quote" article (a hard negative: it shares one paragraph with it, and is
        no near-duplicate) quotes, or None. Mirrored copies of a quote article quote it too."""
        s = self._split(url)
        if s is None or self._classify(*s)[0] != "page":
            return None
        g, path = s
        gb, nb, _, _ = self._source(g, int(path[3:-5]))
        q = self.hosts[gb].quote_of.get(nb)
        return self._url(q[0], f"/a/{q[1]}.html") if q else None

    def redirect_target(self, url: str) -> str | None:
        s = self._split(url)
        if s is None:
            return None
        r = self._redirect(*s)
        return r[1] if r else None

    def _redirect(self, g: int, path: str) -> tuple[int, str, str] | None:
        """(status, absolute target, Location header as sent) for a redirect URL."""
        kind, ident = self._classify(g, path)
        if kind != "redirect":
            return None
        h = self.hosts[g]
        what, x = ident
        if what == "old":
            p = f"/a/{h.old[x]}.html"
            return 301, self._url(g, p), p
        if what == "chain":
            if x < 3:
                p = f"/chain/{x + 1}.html"
            else:
                p = f"/a/{random.Random(f'{self.config.seed}:chain').randrange(h.N)}.html"
            return 302, self._url(g, p), self._url(g, p)
        if what == "loop":
            p = "/loop/b.html" if x == "a" else "/loop/a.html"
            return 302, self._url(g, p), p
        # away: to an article on the next host
        g2 = (g + 1) % self.config.hosts
        n2 = random.Random(f"{self.config.seed}:away").randrange(self.hosts[g2].N)
        u = self._url(g2, f"/a/{n2}.html")
        return 301, u, u

    def outlinks(self, url: str) -> list[str]:
        s = self._split(url)
        if s is None:
            return []
        links = self._links(*s)
        return [l.url for l in links.flat()] if links else []

    def is_nofollow_link(self, src: str, dst: str) -> bool:
        """True if every link src → dst is nofollow (rel=nofollow, or the page says nofollow)."""
        s = self._split(src)
        if s is None:
            return False
        links = self._links(*s)
        if not links:
            return False
        found = [l for l in links.flat() if l.url == dst]
        if not found:
            return False
        return links.all_nofollow or all(l.nofollow for l in found)

    # robots ----------------------------------------------------------------

    def _robots_groups(self, g: int) -> list[tuple[list[str], list[tuple[bool, str]], float]]:
        h = self.hosts[g]
        delay = self.config.crawl_delay if h.is_delay else 0.0
        groups = [(["*"], [(False, "/private/")], delay)]
        if h.is_skitter:
            groups.append((["skitter"], [(True, "/no-skitter/welcome.html"), (False, "/no-skitter/"),
                                         (False, "/private/")], delay))
            groups.append((["badbot"], [(False, "/")], 0.0))
        return groups

    def robots_txt(self, g: int) -> str | None:
        h = self.hosts[g]
        if h.no_robots:
            return None
        lines = [f"# robots.txt for {h.name}"]
        for agents, rules, delay in self._robots_groups(g):
            lines += [f"User-agent: {'BadBot' if a == 'badbot' else a}" for a in agents]
            lines += [f"{'Allow' if allow else 'Disallow'}: {p}" for allow, p in rules]
            if delay:
                lines.append(f"Crawl-delay: {delay:g}")
            lines.append("")
        index = self.changes is not None and g == self._index_host
        lines.append(f"Sitemap: {h.base}/{'sitemap-index.xml' if index else 'sitemap.xml'}")
        return "\n".join(lines) + "\n"

    def crawl_delay_of(self, url_or_base: str, agent: str = "skitter") -> float | None:
        s = self._split(url_or_base)
        if s is None or self.hosts[s[0]].no_robots:
            return None
        group = self._select_group(s[0], agent)
        return group[2] if group and group[2] else None

    def _select_group(self, g: int, agent: str):
        token = agent.split("/")[0].strip().lower()
        groups = self._robots_groups(g)
        for gr in groups:
            if token in gr[0]:
                return gr
        for gr in groups:
            if "*" in gr[0]:
                return gr
        return None

    def robots_allowed(self, url: str, agent: str = "skitter") -> bool:
        s = self._split(url)
        if s is None:
            return True
        return self._allowed(s[0], s[1], agent)

    def _allowed(self, g: int, path: str, agent: str = "skitter") -> bool:
        if path == "/robots.txt" or self.hosts[g].no_robots:
            return True
        group = self._select_group(g, agent)
        if group is None:
            return True
        best: tuple[int, bool] | None = None
        for allow, pattern in group[1]:
            if _robots_match(pattern, path):
                cand = (len(pattern), allow)
                if best is None or cand > best:   # longer wins; on a tie allow (True) wins
                    best = cand
        return True if best is None else best[1]

    # reachability ------------------------------------------------------------

    def reachable(self, max_depth: int = 10, obey_robots: bool = True,
                  follow_nofollow: bool = False) -> dict[str, int]:
        """Ground truth of a correct breadth-first crawl from the seeds: ``{url: depth}``.

        Every URL fetched: status-200 pages, duplicates, binaries, 404s and redirect sources
        (a redirect's target gets the same depth as its source; loops end where a URL repeats).
        Trap pages are left out, as are (``obey_robots``) URLs the robots.txt disallows to
        ``skitter``. Links are followed unless nofollow (rel=nofollow, or a page-level nofollow
        by meta robots or X-Robots-Tag), unless ``follow_nofollow``; a URL is followed if at
        least one link to it on the page is followable. URLs at ``max_depth`` are fetched but
        not expanded. Not included: robots.txt and sitemap.xml (not linked).
        """
        result: dict[str, int] = {}
        queue: deque[tuple[str, int, str]] = deque()

        def visit(url: str, g: int, path: str, depth: int) -> None:
            for _ in range(50):
                if url in result:
                    return
                kind = self._classify(g, path)[0]
                if kind == "trap" or (obey_robots and not self._allowed(g, path)):
                    return
                result[url] = depth
                if kind != "redirect":
                    queue.append((url, g, path))
                    return
                url = self._redirect(g, path)[1]  # type: ignore[index]
                s = self._split(url)
                if s is None:
                    return
                g, path = s

        for g, seed in enumerate(self.seeds()):
            visit(seed, g, "/", 0)
        while queue:
            u, g, path = queue.popleft()
            d = result[u]
            if d >= max_depth:
                continue
            links = self._links(g, path)
            if not links or (links.all_nofollow and not follow_nofollow):
                continue
            for link in links.flat():
                if follow_nofollow or not link.nofollow:
                    visit(link.url, link.g, link.path, d + 1)
        return result

    # ------------------------------------------------------------------ structure (links)

    def _listing_path(self, t: int, k: int) -> str:
        slug = self.topic_names[t]
        return f"/t/{slug}/" if k == 0 else f"/t/{slug}/{k}.html"

    def _art(self, g_from: int, g: int, n: int, rng: random.Random | None = None, *,
             rel: str = "", style: int = 0, u: float = 0.0) -> _Link:
        path = f"/a/{n}.html"
        url = self._url(g, path)
        if g != g_from or (rng is not None and rng.random() < 0.2):
            href = url
        else:
            href = path
        return _Link(url, href, title_ref=(g, n), rel=rel, style=style, u=u, g=g, path=path)

    def _local(self, g: int, path: str, anchor: str, *, title_ref=None, u: float = 0.0) -> _Link:
        return _Link(self._url(g, path), path, anchor=anchor, title_ref=title_ref, u=u, g=g,
                     path=path)

    def _special_topic(self, g: int, path: str) -> int:
        return random.Random(f"{self.config.seed}:stopic:{g}:{path}").randrange(self.config.topics)

    def _links(self, g: int, path: str) -> _Links | None:
        kind, ident = self._classify(g, path)
        h = self.hosts[g]
        seed = self.config.seed
        T = self.config.topics
        home = self._local(g, "/", h.name)
        if kind == "home":
            rng = random.Random(f"{seed}:home:{g}")
            topics = [self._local(g, self._listing_path(t, 0), self.topic_names[t].capitalize())
                      for t in range(T)]
            featured = []
            seen = set()
            for _ in range(6):
                n = rng.randrange(h.N)
                if n not in seen and (g, n) not in self._popular_set:
                    seen.add(n)
                    featured.append(self._art(g, g, n, rng))
            more = []
            if h.has_about:
                more.append(self._local(g, "/about.html", "About us"))
            if h.calendar:
                y, mo = self._cal_start
                more.append(self._local(g, f"/calendar/{y:04d}/{mo:02d}/", "Events calendar"))
            if h.shop:
                sid = hashlib.blake2b(f"{seed}:{g}:shop".encode(), digest_size=8).hexdigest()
                more.append(self._local(g, f"/shop/?sid={sid}", "Shop"))
            n_hosts = self.config.hosts
            for g2 in sorted({(g + 1) % n_hosts, (g - 1) % n_hosts} - {g}):
                u = self.base_urls[g2] + "/"
                more.append(_Link(u, u, anchor=self.hosts[g2].name, g=g2, path="/"))
            lists = [("Topics", topics), ("Featured", featured), ("Elsewhere", more)]
            around = [self._art(g, g2, n2) for g2, n2 in self._popular if g2 != g]
            if around:
                lists.append(("Around the web", around))
            return _Links(nav=[home], lists=lists)
        if kind == "category":
            t: int
            k: int
            t, k = ident  # (topic, listing page)
            nav = [home]
            if k:
                nav.append(self._local(g, self._listing_path(t, 0), self.topic_names[t].capitalize()))
                if (k - 1) // B:
                    nav.append(self._local(g, self._listing_path(t, (k - 1) // B), "Up"))
            lo, hi = k * P, min((k + 1) * P, h.topic_counts[t])
            arts = [self._art(g, g, h.article(t, i)) for i in range(lo, hi)]
            subs = [self._local(g, self._listing_path(t, c), f"More {self.topic_names[t]}, page {c + 1}")
                    for c in range(B * k + 1, min(B * k + B + 1, h.listing_counts[t]))]
            lists = [("Articles", arts)]
            if subs:
                lists.append(("More", subs))
            return _Links(nav=nav, lists=lists)
        if kind == "page":
            return self._page_links_cache(g, ident)
        if kind == "duplicate":
            return self._page_links_cache(g, h.copies[ident[1]])
        if kind in ("private", "no-skitter", "about") or kind in SINGLES:
            rng = random.Random(f"{seed}:slinks:{g}:{path}")
            topic = self._special_topic(g, path)
            inline = []
            seen = set()
            for _ in range(rng.randint(4, 10)):
                n = h.random_article(rng, topic if rng.random() < 0.7 else None)
                if n not in seen:
                    seen.add(n)
                    inline.append(self._art(g, g, n, rng, u=rng.random()))
            inline.sort(key=lambda l: l.u)
            return _Links(nav=[home], inline=inline, all_nofollow=kind in ("nofollow", "xrobots"))
        if kind == "trap":
            if ident[0] == "calendar":
                _, y, mo = ident  # ("calendar", year, month)
                rng = random.Random(f"{seed}:cal:{g}:{y}:{mo}")
                nav = []
                if (y, mo) > (1, 1):
                    py, pm = (y, mo - 1) if mo > 1 else (y - 1, 12)
                    nav.append(self._local(g, f"/calendar/{py:04d}/{pm:02d}/", "Previous month"))
                ny, nm = (y, mo + 1) if mo < 12 else (y + 1, 1)
                nav.append(self._local(g, f"/calendar/{ny:04d}/{nm:02d}/", "Next month"))
                events = [self._art(g, g, rng.randrange(h.N)) for _ in range(3)]
                return _Links(nav=[home] + nav, lists=[("Events", events)])
            sid = ident[1]
            nxt = hashlib.blake2b(f"{seed}:{g}:{sid}".encode(), digest_size=8).hexdigest()
            rng = random.Random(f"{seed}:shop:{g}:{sid}")
            items = [self._art(g, g, rng.randrange(h.N)) for _ in range(3)]
            return _Links(nav=[home, self._local(g, f"/shop/?sid={nxt}", "Continue shopping")],
                          lists=[("Products", items)])
        return None

    def _article_links(self, g: int, n: int) -> _Links:
        """The links article ``n`` of host ``g`` is rendered with (inline links in ``u`` order)."""
        gb, nb, vtype, vkey = self._source(g, n)
        if vtype is None and gb == g:
            return self._base_links(g, n)
        links = self._base_links(gb, nb)
        if gb != g:
            links = self._mirror_links(links, gb, g)
        if vtype == "boilerplate":
            links = self._boilerplate_links(g, links, vkey)
        return links

    def _page_links_uncached(self, g: int, n: int) -> _Links:
        """The links of article ``n`` in document order (what ``outlinks`` reports)."""
        links = self._article_links(g, n)
        if self._source(g, n)[2] != "reorder":
            return links
        body = self._article_html(g, n)   # paragraphs moved: the inline links moved with them
        inline = sorted(links.inline, key=lambda l: body.index(self._link_html(l)))
        return _Links(nav=links.nav, inline=inline, lists=links.lists, foot=links.foot)

    def _mirror_links(self, links: _Links, gs: int, g: int) -> _Links:
        """``links`` of an article of host ``gs`` as the mirror host ``g`` shows them: same-host
        links go to ``g``'s page of the same kind (articles: the same topic and index), other hosts'
        links stay."""
        h, hs = self.hosts[g], self.hosts[gs]
        limits = {"copy": h.n_copies, "old": h.n_old, "private": h.n_private, "files": h.n_files,
                  "missing": h.n_missing, "no-skitter": h.n_noskitter}

        def mp(l: _Link) -> _Link:
            if l.g != gs:
                return l
            path, anchor, ref = l.path, l.anchor, None
            m = _RE_ART.fullmatch(path)
            m2 = _RE_NUM.fullmatch(path)
            kind, ident = self._classify(gs, path)
            if m:
                t2, i2 = hs.topic_index(int(m.group(1)))
                cnt = h.topic_counts[t2]
                n2 = h.article(t2, i2 % cnt) if cnt else int(m.group(1)) % h.N
                path, ref = f"/a/{n2}.html", (g, n2)
            elif kind == "category":
                k2: int
                t2, k2 = ident  # (topic, listing page)
                path = self._listing_path(t2, k2 if k2 < h.listing_counts[t2] else 0)
            elif m2 and limits[m2.group(1)]:
                what, j = m2.group(1), int(m2.group(2)) % limits[m2.group(1)]
                path = f"/{what}/{j}.{m2.group(3)}"
                ref = (g, h.copies[j]) if what == "copy" else (g, h.old[j]) if what == "old" else None
            else:
                path, anchor = "/", h.name
            url = self._url(g, path)
            return _Link(url, url if l.href != l.path else path, anchor=anchor, title_ref=ref,
                         rel=l.rel, style=l.style, u=l.u, g=g, path=path)

        return _Links(nav=[mp(l) for l in links.nav], inline=[mp(l) for l in links.inline],
                      lists=[(hd, [mp(l) for l in ls]) for hd, ls in links.lists],
                      all_nofollow=links.all_nofollow, foot=[mp(l) for l in links.foot])

    def _boilerplate_links(self, g: int, links: _Links, vkey: tuple[int, int]) -> _Links:
        """The "boilerplate" variant's chrome: three more sections in the navigation and three
        popular articles in a side bar (links the original lacks)."""
        h = self.hosts[g]
        T = self.config.topics
        rng = random.Random(f"{self.config.seed}:boiler:{vkey[0]}:{vkey[1]}")
        own = {l.path for l in links.nav}
        sections = [t for t in range(T) if self._listing_path(t, 0) not in own]
        rng.shuffle(sections)
        nav = list(links.nav) + [self._local(g, self._listing_path(t, 0), self.topic_names[t].capitalize())
                                 for t in sorted(sections[:3])]
        foot: list[_Link] = []
        seen = {l.path for l in links.flat() if l.g == g}
        for _ in range(12):
            if len(foot) == 3:
                break
            n = rng.randrange(h.N)
            if f"/a/{n}.html" not in seen:
                seen.add(f"/a/{n}.html")
                foot.append(self._art(g, g, n))
        return _Links(nav=nav, inline=links.inline, lists=links.lists, all_nofollow=links.all_nofollow,
                      foot=foot)

    def _base_links(self, g: int, n: int) -> _Links:
        cfg = self.config
        h = self.hosts[g]
        t, _ = h.topic_index(n)
        rng = random.Random(f"{cfg.seed}:links:{g}:{n}")
        nav = [self._local(g, "/", h.name),
               self._local(g, self._listing_path(t, 0), self.topic_names[t].capitalize())]
        m = h.rank(n)
        forced = [h.specials[j] for j in range(m, len(h.specials), h.N)]
        total = rng.randint(5, 30)
        n_content = max(0, total - len(nav) - len(forced))
        inline: list[_Link] = []
        seen: set[tuple[int, int | str]] = {(g, n)}   # articles (g, n) and special pages (g, path)
        attempts = 0
        # the links to popular articles have a stream of their own (the other links stay as they are)
        prng = random.Random(f"{cfg.seed}:popular:{g}:{n}")
        while len(inline) < n_content and attempts < 3 * n_content:
            attempts += 1
            if self._popular and prng.random() < cfg.popular_links:
                g2, n2 = self._popular[bisect.bisect(self._popular_cum, prng.random() * self._popular_cum[-1])
                                       if len(self._popular) > 1 else 0]
                if (g2, n2) not in seen:
                    seen.add((g2, n2))
                    inline.append(self._art(g, g2, n2, prng, u=prng.random()))
                continue
            x = rng.random()
            rel = ""
            r2 = rng.random()
            style = 3 if r2 < 0.04 else 1 if r2 < 0.14 else 2 if r2 < 0.22 else 0
            if x < cfg.cross_host_links and cfg.hosts > 1:
                g2 = rng.randrange(cfg.hosts - 1)
                g2 += g2 >= g
                n2 = self.hosts[g2].random_article(rng, t if rng.random() < 0.7 else None)
                if rng.random() < 0.15:
                    rel = rng.choice(["nofollow", "nofollow noopener", "ugc nofollow"])
                if (g2, n2) in seen:
                    continue
                seen.add((g2, n2))
                inline.append(self._art(g, g2, n2, rel=rel, style=style, u=rng.random()))
                continue
            if x < cfg.cross_host_links + 0.04 and h.random_specials:
                path, anchor, ref = h.random_specials[rng.randrange(len(h.random_specials))]
                if (g, path) in seen:
                    continue
                seen.add((g, path))
                inline.append(self._local(g, path, anchor, title_ref=ref, u=rng.random()))
                continue
            n2 = h.random_article(rng, t if rng.random() < 0.7 else None)
            if rng.random() < 0.06:
                rel = "nofollow"
            if (g, n2) in seen:
                continue
            seen.add((g, n2))
            inline.append(self._art(g, g, n2, rng, rel=rel, style=style, u=rng.random()))
        for path, anchor, ref in forced:
            if (g, path) in seen:
                continue
            seen.add((g, path))
            inline.append(self._local(g, path, anchor, title_ref=ref, u=rng.random()))
        inline.sort(key=lambda l: l.u)
        return _Links(nav=nav, inline=inline)

    # ------------------------------------------------------------------ text

    def _title_uncached(self, g: int, n: int) -> str:
        g, n, _, _ = self._source(g, n)   # a near-duplicate has its original's title
        h = self.hosts[g]
        t, _ = h.topic_index(n)
        return self._make_title(random.Random(f"{self.config.seed}:title:{g}:{n}"), t)

    def _make_title(self, rng: random.Random, t: int) -> str:
        tw = self._topic_words[t]
        a, b, c = (tw[rng.randrange(len(tw))] for _ in range(3))
        noun = _TITLE_NOUNS[rng.randrange(len(_TITLE_NOUNS))]
        adj = _TITLE_ADJS[rng.randrange(len(_TITLE_ADJS))]
        form = _TITLE_FORMS[rng.randrange(len(_TITLE_FORMS))]
        return _title_case(form.format(a=a, b=b, c=c, n=noun, j=adj).split())

    def _anchor(self, link: _Link) -> str:
        if link.title_ref is not None:
            title = self._title(*link.title_ref)
            return title if not link.anchor else f"{link.anchor}: {title}"
        return link.anchor

    def _link_html(self, link: _Link) -> str:
        if link.html is not None:
            return link.html
        rel = f' rel="{link.rel}"' if link.rel else ""
        a = f'<a href="{html.escape(link.href)}"{rel}>{html.escape(self._anchor(link))}</a>'
        if link.style == 1:
            a = f"<b>{a}</b>"
        elif link.style == 2:
            a = f"<i>{a}</i>"
        elif link.style == 3:
            a = f"<b><i>{a}</i></b>"
        link.html = a
        return a

    @staticmethod
    def _sentences(rng: random.Random, pool: list[str], budget: int) -> list[str]:
        """Sentences (capitalised, with a final period) of about ``budget`` chars in all."""
        avg = _avg_len(pool)
        words = _words(rng, pool, int(budget / avg * 1.05) + 32)
        ctl = rng.randbytes(len(words) // 4 + 16)
        out: list[str] = []
        acc = i = ci = 0
        while acc < budget:
            if ci >= len(ctl):
                ctl += rng.randbytes(64)
            b = ctl[ci]
            ci += 1
            k = 5 + b % 14
            if i + k > len(words):
                words += _words(rng, pool, 256)
            ws = words[i:i + k]
            i += k
            if k > 9 and b & 0x80:
                ws[4] += ","
            sent = " ".join(ws)
            sent = sent[:1].upper() + sent[1:] + "."
            out.append(sent)
            acc += len(sent) + 1
        return out

    def _body_text(self, rng: random.Random, topic: int | None, budget: int,
                   inline: list[_Link], extra: list[str] | None = None,
                   variant: tuple[str | None, tuple[int, int]] | None = None,
                   quote: str | None = None) -> str:
        """Paragraphs (with h2 headings) of about ``budget`` chars, inline links placed by u.

        ``variant`` (type, key) of a near-duplicate: "edit" changes a few words (never the number
        of words: the links stay where they were), "reorder" shuffles the paragraphs."""
        pool = self._pools[topic] if topic is not None else self._common_pool
        sentences = self._sentences(rng, pool, max(budget, 1))
        n_s = len(sentences)
        if extra:
            for phrase in extra:
                j = rng.randrange(n_s)
                sentences[j] = sentences[j][:-1] + ", " + phrase + "."
        vtype, vkey = variant if variant is not None else (None, (0, 0))
        if vtype == "edit":
            self._edit(sentences, pool, random.Random(f"{self.config.seed}:edit:{vkey[0]}:{vkey[1]}"))
        # links: sentence floor(u * n_s), at the word boundary given by the fractional part
        by_sentence: dict[int, list[tuple[float, _Link]]] = {}
        for link in inline:
            x = link.u * n_s
            j = min(int(x), n_s - 1)
            by_sentence.setdefault(j, []).append((x - j, link))
        for j, items in by_sentence.items():
            toks = sentences[j].split(" ")
            last = toks[-1]
            toks[-1] = last[:-1]          # the period goes after an anchor placed at the end
            n_t = len(toks)
            # insert from the last to the first: positions on the original tokens stay valid, and
            # links at the same position end up in u order (= the order outlinks() reports)
            for frac, link in reversed(items):
                toks.insert(min(int(frac * (n_t + 1)), n_t), self._link_html(link))
            sentences[j] = " ".join(toks) + "."
        tw = self._topic_words[topic] if topic is not None else _COMMON
        ctl = rng.randbytes(n_s + 8)
        parts: list[str] = []
        i = pi = 0
        while i < n_s:
            k = 3 + ctl[pi] % 5
            parts.append("<p>" + " ".join(sentences[i:i + k]) + "</p>")
            i += k
            pi += 1
            if pi % 3 == 0 and i < n_s:
                hw = [tw[rng.randrange(len(tw))] for _ in range(1 + ctl[pi] % 2)]
                hw += [w for w in _words(rng, pool, 6) if len(w) > 3][:1 + ctl[pi] % 3]
                parts.append("<h2>" + html.escape(_title_case(hw)) + "</h2>")
        if vtype == "reorder":
            vrng = random.Random(f"{self.config.seed}:reorder:{vkey[0]}:{vkey[1]}")
            slots = [i for i, p in enumerate(parts) if p.startswith("<p>")]
            moved = slots[:]
            vrng.shuffle(moved)
            if moved == slots and len(slots) > 1:
                moved = slots[1:] + slots[:1]
            paras = [parts[i] for i in moved]
            for i, p in zip(slots, paras):
                parts[i] = p
        if quote:
            parts.insert(len(parts) // 2, "<blockquote>" + quote + "</blockquote>")
        return "\n".join(parts)

    @staticmethod
    def _edit(sentences: list[str], pool: list[str], rng: random.Random) -> None:
        """Replace a few words (about one in every twelve sentences, 2 to 8) by other words."""
        n_s = len(sentences)
        for _ in range(max(2, min(8, n_s // 12))):
            j = rng.randrange(n_s)
            toks = sentences[j].split(" ")
            i = rng.randrange(len(toks))
            tok = toks[i]
            core = tok.rstrip(".,")
            punct = tok[len(core):]
            new = core.lower()
            while new == core.lower():
                new = pool[rng.randrange(len(pool))]
            if i == 0:
                new = new[:1].upper() + new[1:]
            toks[i] = new + punct
            sentences[j] = " ".join(toks)

    def _target_size(self, rng: random.Random) -> int:
        lo, hi = self.config.page_kb
        a, b = int(lo * 1024 * 1.06) + 64, int(hi * 1024 * 0.95) - 64
        if a >= b:
            return (lo + hi) * 512
        return rng.randint(a, b)

    def _page_html(self, *, g: int, rng: random.Random, title: str, topic: int | None,
                   links: _Links, canonical: str | None = None, meta_robots: str | None = None,
                   charset_meta: str | None = "utf-8", lang: str = "en",
                   extra_phrases: list[str] | None = None, description: str | None = None,
                   h1: str | None = None, text_budget: int | None = None,
                   variant: tuple[str | None, tuple[int, int]] | None = None,
                   note: str | None = None, quote: str | None = None) -> str:
        """One HTML page. Near-duplicates: ``text_budget`` imposes a text budget (the original's,
        from :meth:`_text_budget`, so the text is the same), ``variant`` (type, key) edits the text
        or, for "boilerplate", changes the chrome, ``note`` is a last paragraph of the article,
        ``quote`` a paragraph quoted in the middle of the text."""
        head_s, lists_s, tail_s, budget = self._page_frame(
            g=g, rng=rng, title=title, topic=topic, links=links, canonical=canonical,
            meta_robots=meta_robots, charset_meta=charset_meta, lang=lang, description=description,
            h1=h1, variant=variant, note=note)
        if text_budget is not None:
            budget = text_budget
        # the text budget is in characters; tags add ~3 %, the paragraph wrapper ~2 %
        text = self._body_text(rng, topic, int(budget * 0.96), links.inline, extra_phrases,
                               variant=variant, quote=quote)
        return "\n".join([head_s, text, lists_s, tail_s])

    def _text_budget(self, *, g: int, rng: random.Random, title: str, topic: int | None,
                     links: _Links, canonical: str | None = None) -> int:
        """The text budget :meth:`_page_html` gives the page of these arguments (a near-duplicate
        takes its original's)."""
        return self._page_frame(g=g, rng=rng, title=title, topic=topic, links=links,
                                canonical=canonical)[3]

    def _page_frame(self, *, g: int, rng: random.Random, title: str, topic: int | None,
                    links: _Links, canonical: str | None = None, meta_robots: str | None = None,
                    charset_meta: str | None = "utf-8", lang: str = "en",
                    description: str | None = None, h1: str | None = None,
                    variant: tuple[str | None, tuple[int, int]] | None = None,
                    note: str | None = None) -> tuple[str, str, str, int]:
        """A page's HTML around its text, (head, lists, tail), and its text budget in characters
        (what is left of its target size); draws from ``rng`` what the page draws before its text."""
        h = self.hosts[g]
        tw = self._topic_words[topic] if topic is not None else _COMMON
        pool = self._pools[topic] if topic is not None else self._common_pool
        target = self._target_size(rng)
        if description is None:
            d = _words(rng, pool, rng.randint(12, 22))
            description = (d[0].capitalize() + " " + " ".join(d[1:]) + ".")
        kws: list[str] = []
        if topic is None:
            kws = self.topic_names[:8]
        for _ in range(6 if topic is not None else 0):
            w = tw[rng.randrange(len(tw))]
            if w not in kws:
                kws.append(w)
        head = ["<!DOCTYPE html>", f'<html lang="{lang}">', "<head>"]
        if charset_meta:
            head.append(f'<meta charset="{charset_meta}">')
        head.append(f"<title>{html.escape(title)} | {html.escape(h.name)}</title>")
        head.append(f'<meta name="description" content="{html.escape(description)}">')
        head.append(f'<meta name="keywords" content="{", ".join(kws)}">')
        if meta_robots:
            head.append(f'<meta name="robots" content="{meta_robots}">')
        head.append('<meta name="viewport" content="width=device-width, initial-scale=1">')
        if canonical:
            head.append(f'<link rel="canonical" href="{canonical}">')
        head.append("</head>")
        boiler = variant is not None and variant[0] == "boilerplate"
        name = html.escape(h.name)
        if boiler:
            vkey = variant[1]  # type: ignore[index]
            tagline = _TAGLINES[_hash64(f"{self.config.seed}:tagline:{vkey}") % len(_TAGLINES)]
            head += ["<body>", '<header class="masthead">',
                     f'<div class="brand"><b>{name}</b> &middot; {tagline}</div>',
                     '<nav class="sections">' + " &middot; ".join(self._link_html(l) for l in links.nav)
                     + "</nav>", "</header>"]
        else:
            head += ["<body>", '<header class="site">']
            head.append("<nav>" + " | ".join(self._link_html(l) for l in links.nav) + "</nav>")
            head.append("</header>")
        head += ["<main>", "<article>", f"<h1>{html.escape(h1 or title)}</h1>"]
        lists = []
        for heading, ls in links.lists:
            lists.append(f"<h2>{html.escape(heading)}</h2>")
            lists.append("<ul>\n" + "\n".join(f"<li>{self._link_html(l)}</li>" for l in ls)
                         + "\n</ul>")
        if note:
            lists.append(f'<p class="source"><i>{html.escape(note)}</i></p>')
        if boiler:
            tail = ["</article>", '<aside class="popular">', "<h3>Popular this week</h3>", "<ul>"]
            tail += [f"<li>{self._link_html(l)}</li>" for l in links.foot]
            tail += ["</ul>", "</aside>", "</main>", '<footer class="site-footer">',
                     f"<p>{name} is an independent publication. We publish long reads, short "
                     "summaries and everything in between, written by our staff and by guest "
                     "authors from around the world. Opinions expressed are those of the authors. "
                     "Corrections and letters to the editor are welcome; we answer every message "
                     "within a week.</p>",
                     "<p>Subscribe to the newsletter &middot; Advertise with us &middot; Privacy "
                     "policy &middot; Terms of use &middot; Cookie settings &middot; Accessibility "
                     "&middot; Contact &middot; Careers</p>",
                     f"<p>&copy; 2024 {name}. All rights reserved. Generated by the skitter demo "
                     "web.</p></footer>", "</body>", "</html>", ""]
        else:
            tail = ["</article>", "</main>",
                    f'<footer><p>&copy; 2024 {name}. All rights reserved. '
                    f'Generated by the skitter demo web.</p></footer>', "</body>", "</html>", ""]
        head_s, lists_s, tail_s = "\n".join(head), "\n".join(lists), "\n".join(tail)
        inline_len = sum(len(self._link_html(l)) + 1 for l in links.inline)
        skeleton = len(head_s) + len(lists_s) + len(tail_s) + 4
        return head_s, lists_s, tail_s, target - skeleton - inline_len

    # ------------------------------------------------------------------ responses

    def _created(self, key: str) -> int:
        """When the page ``key`` (``"<host>:<path>"``) was last modified in the static web."""
        return _EPOCH - _hash64(f"{self.config.seed}:lm:{key}") % (3 * 365 * 86400)

    def _last_modified(self, key: str) -> str:
        return formatdate(self._created(key), usegmt=True)

    def respond(self, base_url: str, path_qs: str, *, accept_gzip: bool = False,
                if_none_match: str | None = None, if_modified_since: str | None = None,
                now: float | None = None) -> Response:
        """The response to GET ``path_qs`` on the host at ``base_url`` (no I/O, deterministic).

        ``accept_gzip``: the request accepts gzip (only /p/gzip.html is then gzip-encoded).
        ``if_none_match`` / ``if_modified_since``: conditional request headers (→ 304).
        ``now``: the wall-clock time of the request, in the changing mode (default: its start).
        """
        g = self._host_of.get(base_url.rstrip("/"))
        if g is None:
            raise KeyError(f"unknown base URL {base_url!r}")
        if not path_qs.startswith("/"):
            path_qs = "/" + path_qs
        kind, ident = self._classify(g, path_qs)
        h = self.hosts[g]
        seed = self.config.seed
        if self.changes is not None:
            t = self.start_epoch if now is None else now
            live = self._respond_changing(g, path_qs, kind, ident, t, if_none_match, if_modified_since)
            if live is not None:
                return live

        if kind == "notfound":
            return _not_found()
        if kind == "redirect":
            redirect = self._redirect(g, path_qs)
            assert redirect is not None   # the kind says so
            status, _, location = redirect
            reason = "Moved Permanently" if status == 301 else "Found"
            body = (f"<!DOCTYPE html>\n<html><head><title>{status} {reason}</title></head>"
                    f"<body><h1>{reason}</h1></body></html>\n").encode()
            return Response(status, [("Content-Type", _HTML), ("Location", location)], body)
        if kind == "robots":
            robots = self.robots_txt(g)
            assert robots is not None   # the kind says so (the host has a robots.txt)
            return Response(200, [("Content-Type", "text/plain; charset=utf-8")], robots.encode())
        if kind == "sitemap":
            # the home page and the articles, up to the protocol's limit of 50,000 URLs
            urls = [f"{h.base}/"] + [f"{h.base}/a/{n}.html" for n in range(min(h.N, 49_999))]
            xml = ('<?xml version="1.0" encoding="UTF-8"?>\n'
                   '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n'
                   + "".join(f"<url><loc>{u}</loc></url>\n" for u in urls) + "</urlset>\n")
            return Response(200, [("Content-Type", "application/xml; charset=utf-8")], xml.encode())

        headers: list[tuple[str, str]] = []
        ctype = _HTML
        lm_key = f"{g}:{path_qs}"
        if kind == "binary":
            rng = random.Random(f"{seed}:pdf:{g}:{ident[1]}")
            size = rng.randint(2048, 6144)
            body = (b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n1 0 obj\n<< /Type /Catalog >>\nendobj\nstream\n"
                    + rng.randbytes(size) + b"\nendstream\n%%EOF\n")
            ctype = "application/pdf"
        elif kind == "trap":
            links = self._links(g, path_qs)
            assert links is not None
            if ident[0] == "calendar":
                y: int
                mo: int
                _, y, mo = ident  # ("calendar", year, month)
                title = f"Events in {_MONTHS[mo - 1]} {y:04d}"
            else:
                title = "Shop"
            body = self._small_page(h, title, links).encode()
            return Response(200, [("Content-Type", _HTML)], body)
        elif kind in ("page", "duplicate"):
            n = ident if kind == "page" else h.copies[ident[1]]
            lm_key = f"{g}:/a/{n}.html"
            body = self._changeable_html(g, kind, ident, path_qs).encode()
        elif kind in ("home", "category"):
            body = self._changeable_html(g, kind, ident, path_qs).encode()
        elif kind == "sjis":
            body = self._sjis_html(g, path_qs)
            ctype = "text/html"
        elif kind == "broken":
            body = self._broken_html(g, path_qs)
        else:  # article-like specials
            links = self._links(g, path_qs)
            assert links is not None
            topic = self._special_topic(g, path_qs)
            rng = random.Random(f"{seed}:stext:{g}:{path_qs}")
            title = self._special_title(rng, topic, kind)
            meta = {"noindex": "noindex", "nofollow": "nofollow"}.get(kind)
            if kind == "cp1252":
                text = self._page_html(g=g, rng=rng, title=title, topic=topic, links=links,
                                       charset_meta=None, extra_phrases=_CP1252_PHRASES,
                                       description="The café’s “special” page — in Windows-1252.")
                body = text.encode("cp1252")
                ctype = "text/html; charset=windows-1252"
            else:
                body = self._page_html(g=g, rng=rng, title=title, topic=topic, links=links,
                                       meta_robots=meta).encode()
            if kind == "xrobots":
                headers.append(("X-Robots-Tag", "noindex, nofollow"))
        etag = '"' + hashlib.blake2b(body, digest_size=8).hexdigest() + '"'
        lm = self._last_modified(lm_key)
        if kind == "gzip" and accept_gzip:
            body = gzip.compress(body, compresslevel=6, mtime=0)
            etag = etag[:-1] + '-gz"'
            headers += [("Content-Encoding", "gzip"), ("Vary", "Accept-Encoding")]
        elif kind == "gzip":
            headers.append(("Vary", "Accept-Encoding"))
        headers = [("Content-Type", ctype), ("ETag", etag), ("Last-Modified", lm)] + headers
        if if_none_match is not None:
            if etag in [x.strip() for x in if_none_match.split(",")] or if_none_match.strip() == "*":
                return Response(304, [("ETag", etag), ("Last-Modified", lm)], b"")
        elif if_modified_since is not None:
            try:
                since = parsedate_to_datetime(if_modified_since).timestamp()
                if parsedate_to_datetime(lm).timestamp() <= since:
                    return Response(304, [("ETag", etag), ("Last-Modified", lm)], b"")
            except (TypeError, ValueError):
                pass
        return Response(200, headers, body)

    def _changeable_html(self, g: int, kind: str, ident: Any, path_qs: str) -> str:
        """The HTML of an article, a copy of one, a home page or a listing: the kinds of page that
        change in the changing mode (this is their version 0)."""
        h = self.hosts[g]
        if kind in ("page", "duplicate"):
            n = ident if kind == "page" else h.copies[ident[1]]
            return self._article_html(g, n)
        if kind == "home":
            rng = random.Random(f"{self.config.seed}:hometext:{g}")
            links = self._links(g, "/")
            assert links is not None
            desc = (f"{h.name}: articles about " + ", ".join(self.topic_names[:-1])
                    + (" and " if len(self.topic_names) > 1 else "") + self.topic_names[-1] + ".")
            return self._page_html(g=g, rng=rng, title="Home", topic=None, links=links,
                                   canonical=h.base + "/", h1=f"Welcome to {h.name}",
                                   description=desc)
        t: int
        k: int
        t, k = ident  # (topic, listing page)
        rng = random.Random(f"{self.config.seed}:cattext:{g}:{t}:{k}")
        links = self._links(g, path_qs)
        assert links is not None
        name = self.topic_names[t].capitalize()
        title = name if k == 0 else f"{name}, page {k + 1}"
        return self._page_html(g=g, rng=rng, title=title, topic=t, links=links,
                               canonical=h.base + path_qs)

    def _special_title(self, rng: random.Random, topic: int, kind: str) -> str:
        words = _words(rng, self._pools[topic], rng.randint(3, 6))
        tw = self._topic_words[topic]
        words[0] = tw[rng.randrange(len(tw))]
        label = {"private": "Members only", "no-skitter": "Staff notes", "about": "About us"}.get(
            kind, kind.capitalize())
        return f"{label}: {_title_case(words)}"

    def _article_html(self, g: int, n: int, quote: bool = True) -> str:
        h = self.hosts[g]
        gb, nb, vtype, vkey = self._source(g, n)
        qt = self.hosts[gb].quote_of.get(nb) if quote else None
        if vtype is None and gb == g and qt is None:
            t, _ = h.topic_index(n)
            rng = random.Random(f"{self.config.seed}:text:{g}:{n}")
            links = self._article_links(g, n)
            return self._page_html(g=g, rng=rng, title=self._title(g, n), topic=t, links=links,
                                   canonical=f"{h.base}/a/{n}.html")
        # a near-duplicate: the original's text stream and text budget, its own chrome
        hb = self.hosts[gb]
        t, _ = hb.topic_index(nb)
        key = f"{self.config.seed}:text:{gb}:{nb}"
        budget = self._text_budget(g=gb, rng=random.Random(key), title=self._title(gb, nb), topic=t,
                                   links=self._base_links(gb, nb), canonical=f"{hb.base}/a/{nb}.html")
        return self._page_html(g=g, rng=random.Random(key), title=self._title(g, n), topic=t,
                               links=self._article_links(g, n), canonical=f"{h.base}/a/{n}.html",
                               text_budget=budget, variant=(vtype, vkey), quote=qt[2] if qt else None,
                               note=f"This article first appeared in {hb.name}." if gb != g else None)

    def _small_page(self, h: _Host, title: str, links: _Links) -> str:
        lis = []
        for heading, ls in links.lists:
            lis.append(f"<h2>{heading}</h2>\n<ul>\n" + "\n".join(
                f"<li>{self._link_html(l)}</li>" for l in ls) + "\n</ul>")
        return ("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
                f"<title>{html.escape(title)} | {html.escape(h.name)}</title>\n</head>\n<body>\n"
                "<nav>" + " | ".join(self._link_html(l) for l in links.nav) + "</nav>\n"
                f"<h1>{html.escape(title)}</h1>\n" + "\n".join(lis) + "\n</body>\n</html>\n")

    def _sjis_html(self, g: int, path: str) -> bytes:
        h = self.hosts[g]
        links = self._links(g, path)
        assert links is not None
        rng = random.Random(f"{self.config.seed}:sjis:{g}")
        target = self._target_size(rng)
        paras: list[str] = []
        size = 600
        inline = list(links.inline)
        while size < target:
            sents = [_JA_SENTENCES[rng.randrange(len(_JA_SENTENCES))] for _ in range(rng.randint(3, 6))]
            p = "".join(sents)
            if inline and rng.random() < 0.5:
                p += "詳しくは" + self._link_html(inline.pop(0)) + "をご覧ください。"
            paras.append(f"<p>{p}</p>")
            size += len(p.encode("shift_jis")) + 8
        for l in inline:
            paras.append(f"<p>関連記事：{self._link_html(l)}</p>")
        nav = " | ".join(self._link_html(l) for l in links.nav)
        text = ("<!DOCTYPE html>\n<html lang=\"ja\">\n<head>\n<meta charset=\"Shift_JIS\">\n"
                f"<title>日本語のページ | {html.escape(h.name)}</title>\n"
                "<meta name=\"description\" content=\"シフトJISで書かれた日本語のページです。\">\n"
                "</head>\n<body>\n<nav>" + nav + "</nav>\n<h1>日本語のページ</h1>\n"
                + "\n".join(paras) + "\n</body>\n</html>\n")
        return text.encode("shift_jis")

    def _broken_html(self, g: int, path: str) -> bytes:
        h = self.hosts[g]
        links = self._links(g, path)
        assert links is not None
        rng = random.Random(f"{self.config.seed}:broken:{g}")
        pool = self._common_pool
        out = [b"<html><head><title>Broken page | " + h.name.encode() + b"</title>\n<body>\n<div class=main>\n"]
        out.append(b"<NAV>" + self._link_html(links.nav[0]).encode() + b"\n")
        for i, l in enumerate(links.inline):
            words = " ".join(_words(rng, pool, rng.randint(20, 60))).encode()
            garbage = bytes([0xFF, 0xFE, 0x80, 0x00, 0xC3, 0x28, 0x9D])
            anchor = html.escape(self._anchor(l)).encode()
            if i % 3 == 0:   # unquoted attribute, upper-case tag, unclosed <p> and <b>
                a = b"<A HREF=" + l.href.encode() + b">" + anchor + b"</A>"
            elif i % 3 == 1:  # single quotes, unclosed <a> (closed implicitly by the next <p>)
                a = b"<a href='" + l.href.encode() + b"'>" + anchor + b"</a"
                a += b">"
            else:
                a = b'<a href="' + l.href.encode() + b'">' + anchor + b"</a></span></td>"
            out.append(b"<p><b>" + words[:len(words) // 2] + garbage + words[len(words) // 2:]
                       + b" " + a + b"\n")
        out.append(b"<table><tr><td>cell<td>cell<tr><td>" + bytes(range(0x80, 0x90)) + b"\n")
        out.append(b"</div></div></body>\n<!-- an unclosed comment at the very end\n")
        return b"".join(out)

    # ------------------------------------------------------------------ the changing mode

    def _lm_policy(self, g: int) -> str:
        """What host ``g`` sends as Last-Modified in the changing mode: "true" (the time of the
        page's last real change), "none" (no header: hosts 3, 7, 11, ...) or "now" (the time of
        the request, newer than every change: host ``hosts - 2`` when there are 3 hosts or more)."""
        n = self.config.hosts
        if n >= 3 and g == n - 2:
            return "now"
        return "none" if g % 4 == 3 else "true"

    def _live(self, g: int, path: str) -> _Live | None:
        """The changing page at ``path`` of host ``g`` (None for a page that never changes). A copy
        (/copy/) is its article's page: it shows the article's current version."""
        kind, ident = self._classify(g, path)
        h = self.hosts[g]
        if kind in ("home", "category"):
            return _Live(f"{g}:{path}", g, kind == "home", None)
        if kind in ("page", "duplicate"):
            n = ident if kind == "page" else h.copies[ident[1]]
            return _Live(f"{g}:/a/{n}.html", g, False, None)
        m = _RE_ART.fullmatch(path)
        if m is None or int(m.group(1)) < h.N:
            return None
        born = self._model().birth_time(g, int(m.group(1)) - h.N)
        return _Live(f"{g}:{path}", g, False, born) if born is not None else None

    def _model(self) -> ChangeModel:
        if self.changes is None:
            raise ValueError("not a changing web: DemoConfig(changing=ChangeConfig(...))")
        return self.changes

    def _live_times(self, lv: _Live, t0: float, t1: float) -> list[float]:
        ch = self._model()
        if lv.born is not None:
            t0 = max(t0, lv.born)
        times = ch.change_times(lv.key, t0, t1)
        return sorted(times + ch.births(lv.g, t0, t1)) if lv.home else times

    def _live_version(self, lv: _Live, t: float) -> int:
        ch = self._model()
        if lv.born is not None:
            return ch.version(lv.key, t) - ch.version(lv.key, lv.born) if t >= lv.born else 0
        return ch.version(lv.key, t) + (ch.born(lv.g, t) if lv.home else 0)

    def _live_last(self, lv: _Live, t: float) -> tuple[float, int | None]:
        """When page ``lv`` last changed at or before ``t``, and the index of the new article
        that change announced (a home page's change at a birth), else None. A page with no change
        found: a new article's birth, or its static Last-Modified."""
        ch = self._model()
        own = ch.last_changed(lv.key, t)
        if lv.born is not None and (own is None or own <= lv.born):
            own = lv.born
        if lv.home:
            n = ch.born(lv.g, t)
            if n:
                b = ch.birth_time(lv.g, n - 1)
                if b is not None and (own is None or b > own):
                    return b, n - 1
        return (own if own is not None else float(self._created(lv.key))), None

    def _live_rate(self, lv: _Live) -> float:
        ch = self._model()
        births = ch.config.new_per_hour / 3600.0 * ch.config.speed if lv.home else 0.0
        return ch.rate(lv.key) + births

    def _lm_time(self, lv: _Live, now: float) -> float | None:
        policy = self._lm_policy(lv.g)
        if policy == "none":
            return None
        return now if policy == "now" else self._live_last(lv, now)[0]

    def _respond_changing(self, g: int, path: str, kind: str, ident: Any, now: float,
                          if_none_match: str | None, if_modified_since: str | None) -> Response | None:
        """The changing web's response, or None where it is the static web's (binaries, special
        pages, redirects, traps, robots.txt, 404s)."""
        if kind == "sitemap" or (g == self._index_host and path in _INDEX_PATHS):
            return self._sitemap_response(g, path, now)
        lv = self._live(g, path)
        if lv is None:
            return None
        if lv.born is not None and lv.born > now:
            return _not_found()
        v = self._live_version(lv, now)
        when, announced = self._live_last(lv, now)
        page = (self._new_article_html(g, int(path[3:-5])) if lv.born is not None
                else self._changeable_html(g, kind, ident, path))
        if v:
            page = self._with_update(page, lv, v, when, announced)
        if lv.home:
            page = self._with_latest(page, g, now)
        noisy = self._model().noisy(lv.key)
        if noisy:
            page = self._with_noise(page, lv.key, now)
        digest = hashlib.blake2b(f"{self.config.seed}:{lv.key}:{v}".encode(), digest_size=8).hexdigest()
        etag = ('W/"' if noisy else '"') + digest + '"'   # weak: the bytes differ, the page not
        lm_time = self._lm_time(lv, now)
        headers = [("ETag", etag)]
        if lm_time is not None:
            headers.append(("Last-Modified", formatdate(lm_time, usegmt=True)))
        if _not_modified(etag, lm_time, if_none_match, if_modified_since):
            return Response(304, headers, b"")
        return Response(200, [("Content-Type", _HTML)] + headers, page.encode())

    def _with_update(self, page: str, lv: _Live, v: int, when: float, announced: int | None) -> str:
        """Version ``v`` of a page: its version-0 HTML with an "Update" paragraph after the h1, in
        the main text (a main-text checksum sees every change). The paragraph announces a new
        article (home pages, at a birth), or may link another article of the host, the newest
        new one half of the time (revisits discover URLs)."""
        h = self.hosts[lv.g]
        rng = random.Random(f"{self.config.seed}:update:{lv.key}:{v}")
        text = " ".join(self._sentences(rng, self._common_pool, rng.randint(160, 480)))
        if announced is not None:
            text = f"New on {html.escape(h.name)}: {self._link_html(self._new_link(lv.g, h.N + announced))}. {text}"
        elif self._model().unit("link", lv.key, v) < self._model().config.link_share:
            newest = self._model().born(lv.g, when)
            if newest and rng.random() < 0.5:
                link = self._new_link(lv.g, h.N + newest - 1)
            else:
                link = self._art(lv.g, lv.g, rng.randrange(h.N))
            text += f" See also {self._link_html(link)}."
        return page.replace("</h1>\n", f"</h1>\n<p>Update {v}: {text}</p>\n", 1)

    def _with_latest(self, page: str, g: int, now: float) -> str:
        """A home page lists its host's five newest new articles (none at the start)."""
        h = self.hosts[g]
        born = self._model().born(g, now)
        if not born:
            return page
        items = "\n".join(f"<li>{self._link_html(self._new_link(g, h.N + j))}</li>"
                          for j in range(born - 1, max(-1, born - 6), -1))
        return page.replace("</article>", f"<h2>Latest</h2>\n<ul>\n{items}\n</ul>\n</article>", 1)

    def _with_noise(self, page: str, key: str, now: float) -> str:
        """Noise that is no change, different on every request, in the boilerplate only: a
        rotating ad, a "served at" line in the footer, or a session token in the navigation's
        links (a fragment: a new token makes no new URL). One kind a page."""
        token = hashlib.blake2b(f"{self.config.seed}:noise:{key}:{now!r}".encode(), digest_size=8).hexdigest()
        kind = int(self._model().unit("noisekind", key) * 3)
        if kind == 0:
            ad = _ADS[int(token[:4], 16) % len(_ADS)]
            return page.replace("</header>\n", f'</header>\n<aside class="ad">Sponsored: {ad} '
                                f"Offer code {token[:8].upper()}.</aside>\n", 1)
        if kind == 1:
            served = datetime.fromtimestamp(now, UTC).isoformat(timespec="microseconds")
            return page.replace("</footer>", f"<p>Served at {served} by edge {token[:6]}.</p></footer>", 1)
        a = page.index("<nav")
        b = page.index("</nav>", a)
        nav = _RE_HREF.sub(lambda m: f'href="{m.group(1)}#s={token}"', page[a:b])
        return page[:a] + nav + page[b:]

    def _new_topic(self, g: int, n: int) -> int:
        return int(self._model().unit("newtopic", g, n) * self.config.topics)

    def _new_title(self, g: int, n: int) -> str:
        return self._make_title(random.Random(f"{self.config.seed}:newtitle:{g}:{n}"), self._new_topic(g, n))

    def _new_link(self, g: int, n: int) -> _Link:
        path = f"/a/{n}.html"
        return _Link(self._url(g, path), path, anchor=self._new_title(g, n), g=g, path=path)

    def _new_article_html(self, g: int, n: int) -> str:
        """A new article (number ``n`` >= the host's N): one topic, links to that topic's articles."""
        h = self.hosts[g]
        t = self._new_topic(g, n)
        rng = random.Random(f"{self.config.seed}:newtext:{g}:{n}")
        nav = [self._local(g, "/", h.name),
               self._local(g, self._listing_path(t, 0), self.topic_names[t].capitalize())]
        inline: list[_Link] = []
        seen: set[int] = set()
        for _ in range(rng.randint(4, 12)):
            m = h.random_article(rng, t)
            if m not in seen:
                seen.add(m)
                inline.append(self._art(g, g, m, rng, u=rng.random()))
        inline.sort(key=lambda l: l.u)
        return self._page_html(g=g, rng=rng, title=self._new_title(g, n), topic=t,
                               links=_Links(nav=nav, inline=inline), canonical=f"{h.base}/a/{n}.html")

    # sitemaps of the changing web

    def _sitemap_paths(self, g: int, now: float, part: str) -> list[str]:
        """"all" (/sitemap.xml), "articles" or "front" (home and listings) of host ``g``, new
        articles included, at most 50,000."""
        h = self.hosts[g]
        front = ["/"] + [self._listing_path(t, k) for t in range(self.config.topics)
                         for k in range(h.listing_counts[t])]
        n = h.N + self._model().born(g, now)
        articles = [f"/a/{i}.html" for i in range(min(n, 50_000))]
        paths = {"all": front + articles, "articles": articles, "front": front}[part]
        return paths[:50_000]

    def _urlset(self, g: int, paths: list[str], now: float) -> bytes:
        """A urlset with lastmod (as the host's Last-Modified says: true, absent or "now") and
        changefreq (from the true rate)."""
        h = self.hosts[g]
        rows = []
        for path in paths:
            lv = self._live(g, path)
            assert lv is not None
            lm = self._lm_time(lv, now)
            row = f"<url><loc>{h.base}{path}</loc>"
            if lm is not None:
                row += f"<lastmod>{_w3c(lm)}</lastmod>"
            rows.append(row + f"<changefreq>{changefreq(self._live_rate(lv))}</changefreq></url>\n")
        return ('<?xml version="1.0" encoding="UTF-8"?>\n'
                '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n'
                + "".join(rows) + "</urlset>\n").encode()

    def _sitemap_response(self, g: int, path: str, now: float) -> Response:
        """/sitemap.xml of every host; on the index host also /sitemap-index.xml (named by its
        robots.txt) with a gzip child of the articles and a plain one of the front pages."""
        h = self.hosts[g]
        xml = [("Content-Type", "application/xml; charset=utf-8")]
        if path == "/sitemap.xml":
            return Response(200, xml, self._urlset(g, self._sitemap_paths(g, now, "all"), now))
        if path == "/sitemaps/1.xml.gz":
            body = gzip.compress(self._urlset(g, self._sitemap_paths(g, now, "articles"), now), mtime=0)
            return Response(200, [("Content-Type", "application/gzip")], body)
        if path == "/sitemaps/2.xml":
            return Response(200, xml, self._urlset(g, self._sitemap_paths(g, now, "front"), now))
        index = ('<?xml version="1.0" encoding="UTF-8"?>\n'
                 '<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n'
                 f"<sitemap><loc>{h.base}/sitemaps/1.xml.gz</loc></sitemap>\n"
                 f"<sitemap><loc>{h.base}/sitemaps/2.xml</loc></sitemap>\n</sitemapindex>\n")
        return Response(200, xml, index.encode())

    # ground truth of the changing web (wall-clock times, seconds since the epoch)

    def _live_url(self, url: str) -> _Live | None:
        self._model()
        s = self._split(url)
        return self._live(*s) if s is not None else None

    def change_rate(self, url: str) -> float:
        """Changes per wall-clock second of ``url`` (a home page's include its host's new articles);
        0 for a static page or any URL that never changes."""
        lv = self._live_url(url)
        return self._live_rate(lv) if lv is not None else 0.0

    def version(self, url: str, t: float) -> int:
        """How many times ``url`` changed in ``(start_epoch, t]`` (a new article: since it appeared);
        the ETag changes with it."""
        lv = self._live_url(url)
        return self._live_version(lv, t) if lv is not None else 0

    def change_times(self, url: str, t0: float, t1: float) -> list[float]:
        """The times of ``url``'s changes in ``(t0, t1]``, in order."""
        lv = self._live_url(url)
        return self._live_times(lv, t0, t1) if lv is not None else []

    def last_changed(self, url: str, t: float) -> float | None:
        """When ``url`` last changed at or before ``t`` (possibly before the start; a new article:
        at the latest when it appeared; a page that never changes: its static Last-Modified), as a
        truthful Last-Modified says; None for a URL that is no changing page or does not exist yet."""
        lv = self._live_url(url)
        if lv is None or (lv.born is not None and lv.born > t):
            return None
        return self._live_last(lv, t)[0]

    def last_modified_policy(self, url: str) -> str:
        """What ``url``'s host sends as Last-Modified: "true", "none" or "now" (see _lm_policy)."""
        s = self._split(url)
        if s is None:
            raise KeyError(f"not a URL of this web: {url!r}")
        return self._lm_policy(s[0])

    def new_articles(self, t0: float, t1: float) -> list[tuple[float, str]]:
        """``(time, url)`` of the new articles that appeared in ``(t0, t1]``, in time order."""
        ch = self._model()
        out = []
        for h in self.hosts:
            first = ch.born(h.g, t0)
            out += [(b, self._url(h.g, f"/a/{h.N + first + j}.html"))
                    for j, b in enumerate(ch.births(h.g, t0, t1))]
        return sorted(out)

    def pages_at(self, t: float) -> list[str]:
        """``pages()`` and the new articles that have appeared by ``t``."""
        return self.pages() + [u for _, u in self.new_articles(self.start_epoch, t)]

    def change_log(self, t0: float, t1: float) -> list[Change]:
        """The ground truth of ``(t0, t1]``: every real change of every status-200 page that exists
        by ``t1`` (noise is none) and every new article's appearance, in time order."""
        self._model()
        log = [Change(b, u, "new") for b, u in self.new_articles(t0, t1)]
        for url in self.pages_at(t1):
            log += [Change(x, url, "change") for x in self.change_times(url, t0, t1)]
        return sorted(log)

    def change_log_document(self, t0: float, t1: float) -> dict:
        """The ground truth of ``(t0, t1]`` as ``skitter eval-fresh --changes`` reads it
        (docs/recrawl.md): ``{"from": t0, "to": t1, "changes": {url: [times]}, "rates": {url:
        changes per second}}`` for every page that exists by ``t1`` (static ones with no times
        and rate 0). A new article's appearance is not a change of its own page."""
        self._model()
        urls = self.pages_at(t1)
        return {"from": t0, "to": t1, "changes": {u: self.change_times(u, t0, t1) for u in urls},
                "rates": {u: self.change_rate(u) for u in urls}}

    # ------------------------------------------------------------------ static export

    def write_static(self, root: Path) -> None:
        """Write every finite page (pages()) of host g under root/<g>/<path> (index.html for paths
        ending in "/"), plus robots.txt and sitemap.xml, and root/manifest.json.

        File mtimes are the pages' Last-Modified. Not reproducible by plain static files, and so
        skipped (manifest.json lists them so a server config can add them): redirects (old/,
        chain/, loop/, away.html → listed under "redirects"), spider traps (calendar/, shop/),
        the X-Robots-Tag header of /p/xrobots.html and the header-only charset of /p/cp1252.html
        (under "headers"), the gzip encoding of /p/gzip.html (a static server gzips as it is
        configured), the 404 of robots.txt on the no-robots host (simply no file), conditional
        requests. 404s (missing/) are simply absent files. Bodies embed the base URLs: serve the
        files on the same base URLs the DemoWeb was built with. A changing web has no static
        files (its pages change and carry per-request noise): ValueError.
        """
        if self.changes is not None:
            raise ValueError("a changing web cannot be written as static files")
        root = Path(root)
        for url in self.pages():
            g, path = self._split(url)  # type: ignore[misc]
            rel = path.lstrip("/")
            if rel == "" or rel.endswith("/"):
                rel += "index.html"
            dest = root / str(g) / rel
            dest.parent.mkdir(parents=True, exist_ok=True)
            resp = self.respond(self.base_urls[g], path)
            dest.write_bytes(resp.body)
            lm = resp.header("Last-Modified")
            if lm:
                ts = parsedate_to_datetime(lm).timestamp()
                os.utime(dest, (ts, ts))
        redirects: dict[str, dict[str, list]] = {}
        headers: dict[str, dict[str, list[list[str]]]] = {}
        for h in self.hosts:
            g = h.g
            (root / str(g)).mkdir(parents=True, exist_ok=True)
            txt = self.robots_txt(g)
            if txt is not None:
                (root / str(g) / "robots.txt").write_text(txt)
            (root / str(g) / "sitemap.xml").write_bytes(self.respond(h.base, "/sitemap.xml").body)
            red: dict[str, list] = {}
            paths = [f"/old/{j}.html" for j in range(h.n_old)]
            if h.redirects:
                paths += ["/chain/1.html", "/chain/2.html", "/chain/3.html", "/loop/a.html",
                          "/loop/b.html", "/away.html"]
            for p in paths:
                st, _, loc = self._redirect(g, p)  # type: ignore[misc]
                red[p] = [st, loc]
            redirects[str(g)] = red
            hd: dict[str, list[list[str]]] = {}
            for s in h.singles:
                p = f"/p/{s}.html"
                r = self.respond(h.base, p)
                extra = [[k, v] for k, v in r.headers if k in ("X-Robots-Tag",)
                         or (k == "Content-Type" and s in ("cp1252", "sjis"))]
                if extra:
                    hd[p] = extra
            headers[str(g)] = hd
        manifest = {
            # (without "changing": always None here, and the manifest stays as it was before it)
            "config": {k: v for k, v in asdict(self.config).items() if k != "changing"},
            "base_urls": self.base_urls,
            "pages": len(self.pages()),
            "redirects": redirects,
            "headers": headers,
            "no_robots_hosts": [h.g for h in self.hosts if h.no_robots],
            "skipped": ["redirects (see 'redirects')", "spider traps (/calendar/, /shop/)",
                        "extra headers (see 'headers')", "gzip encoding of /p/gzip.html",
                        "conditional requests"],
        }
        (root / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")


_MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August",
           "September", "October", "November", "December"]


def _not_found() -> Response:
    return Response(404, [("Content-Type", _HTML)],
                    b"<!DOCTYPE html>\n<html><head><title>404 Not Found</title></head><body>"
                    b"<h1>Not Found</h1><p>The requested URL was not found on this server.</p>"
                    b"</body></html>\n")


@dataclass(frozen=True, slots=True)
class _Live:
    """A page of the changing web: its change model key, host, whether it is the home page (it
    also changes when a new article appears), and a new article's birth time (None: there from
    the start)."""

    key: str
    g: int
    home: bool
    born: float | None


_INDEX_PATHS = ("/sitemap-index.xml", "/sitemaps/1.xml.gz", "/sitemaps/2.xml")
_RE_HREF = re.compile(r'href="([^"#]*)"')
_ADS = ["Fresh coffee delivered weekly.", "Learn a language in ten minutes a day.",
        "The mattress that sleeps cooler.", "Your next holiday, half price.",
        "Insurance that answers the phone.", "Noise-cancelling headphones, now lighter."]


def _weak(tag: str) -> str:
    return tag[2:] if tag.startswith("W/") else tag


def _not_modified(etag: str, lm_time: float | None, if_none_match: str | None,
                  if_modified_since: str | None) -> bool:
    """RFC 9110 section 13.2.2: If-None-Match (weak comparison) first; If-Modified-Since only
    without it, against Last-Modified's whole seconds (a host with none ignores it)."""
    if if_none_match is not None:
        tags = {_weak(x.strip()) for x in if_none_match.split(",")}
        return if_none_match.strip() == "*" or _weak(etag) in tags
    if if_modified_since is None or lm_time is None:
        return False
    try:
        return int(lm_time) <= parsedate_to_datetime(if_modified_since).timestamp()
    except (TypeError, ValueError):
        return False


def _w3c(t: float) -> str:
    return datetime.fromtimestamp(int(t), UTC).strftime("%Y-%m-%dT%H:%M:%S+00:00")


def _robots_match(pattern: str, path: str) -> bool:
    """RFC 9309 matching: prefix match, ``*`` any sequence, ``$`` end anchor."""
    if "*" not in pattern and not pattern.endswith("$"):
        return path.startswith(pattern)
    anchored = pattern.endswith("$")
    if anchored:
        pattern = pattern[:-1]
    rx = ".*".join(re.escape(p) for p in pattern.split("*"))
    return re.match(rx + ("$" if anchored else ""), path) is not None
