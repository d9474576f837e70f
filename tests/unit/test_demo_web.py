"""The demo web generator (skitter.demo.web): determinism, structure and ground truth."""

from __future__ import annotations

import gzip
import json
import urllib.robotparser
from collections import Counter
from urllib.parse import urljoin, urlsplit

import pytest
from selectolax.lexbor import LexborHTMLParser

from skitter.demo.web import _COMMON, DemoConfig, DemoWeb

BASES = [f"http://127.0.0.{i + 2}:8123" for i in range(8)]


def make(config: DemoConfig = DemoConfig(), bases: list[str] | None = None) -> DemoWeb:
    return DemoWeb(config, bases or [f"http://127.0.0.{i + 2}:8123" for i in range(config.hosts)])


@pytest.fixture(scope="module")
def web() -> DemoWeb:
    return make()


@pytest.fixture(scope="module")
def pages(web: DemoWeb) -> list[str]:
    return web.pages()


@pytest.fixture(scope="module")
def reach6(web: DemoWeb) -> dict[str, int]:
    return web.reachable(max_depth=6, obey_robots=False)


def get(web: DemoWeb, url: str, **kw):
    p = urlsplit(url)
    return web.respond(f"{p.scheme}://{p.netloc}", p.path + (f"?{p.query}" if p.query else ""), **kw)


def by_kind(web: DemoWeb, urls: list[str]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for u in urls:
        out.setdefault(web.kind(u), []).append(u)
    return out


def html_links(url: str, body: bytes, encoding: str = "utf-8") -> list[str]:
    tree = LexborHTMLParser(body.decode(encoding, "replace"))
    return [urljoin(url, a.attributes["href"]) for a in tree.css("a[href]")]


# ---------------------------------------------------------------------------------------------


def test_page_count_is_exact() -> None:
    for cfg in (DemoConfig(), DemoConfig(pages=500, hosts=3), DemoConfig(pages=1234, hosts=1),
                DemoConfig(pages=700, hosts=5, topics=12)):
        w = make(cfg)
        ps = w.pages()
        assert len(ps) == cfg.pages
        assert len(set(ps)) == len(ps)
    with pytest.raises(ValueError):
        make(DemoConfig(pages=20))


def test_determinism() -> None:
    a, b = make(), make()
    c = make(DemoConfig(seed=2))
    urls = a.pages()[::97] + [BASES[0] + "/old/0.html", BASES[4] + "/calendar/2024/05/",
                              BASES[3] + "/robots.txt", BASES[0] + "/sitemap.xml"]
    differ = 0
    for u in urls:
        ra, rb = get(a, u), get(b, u)
        assert (ra.status, ra.headers, ra.body) == (rb.status, rb.headers, rb.body), u
        assert a.outlinks(u) == b.outlinks(u)
        differ += get(c, u).body != ra.body
    assert differ > len(urls) // 2
    assert a.reachable(max_depth=2) == b.reachable(max_depth=2)


def test_kinds_present(web: DemoWeb, pages: list[str]) -> None:
    kinds = Counter(web.kind(u) for u in pages)
    for k in ("home", "category", "page", "duplicate", "private", "binary", "noindex", "nofollow",
              "xrobots", "cp1252", "sjis", "broken", "gzip", "no-skitter"):
        assert kinds[k] >= 1, k
    assert kinds["home"] == 8
    assert "trap" not in kinds and "redirect" not in kinds and "notfound" not in kinds
    assert web.kind(BASES[0] + "/nothing-here") == "notfound"
    assert web.kind(BASES[0] + "/a/5.html?x=1") == "notfound"
    assert web.kind("http://example.com/") == "offsite"
    assert web.seeds() == [b + "/" for b in BASES]


def test_every_finite_page_reachable_within_depth_6(web: DemoWeb, pages: list[str],
                                                     reach6: dict[str, int]) -> None:
    assert set(pages) <= set(reach6)
    assert max(reach6[u] for u in pages) <= 6
    # obeying robots.txt: everything robots allows is still reached
    polite = web.reachable(max_depth=6)
    allowed = [u for u in pages if web.robots_allowed(u)]
    assert set(allowed) <= set(polite)
    assert all(web.robots_allowed(u) for u in polite)
    assert not any(web.kind(u) == "trap" for u in polite)
    kinds = Counter(web.kind(u) for u in polite)
    assert kinds["redirect"] > 0 and kinds["notfound"] > 0 and kinds["binary"] > 0
    # /private/ is disallowed except on the host whose robots.txt is a 404
    assert {urlsplit(u).netloc for u in polite if web.kind(u) == "private"} == {"127.0.0.5:8123"}
    # the redirect chain and loop are followed at the same depth
    chain = [BASES[0] + f"/chain/{i}.html" for i in (1, 2, 3)]
    assert len({polite[u] for u in chain}) == 1
    assert polite[web.redirect_target(chain[2])] <= polite[chain[0]]
    assert polite[BASES[0] + "/loop/a.html"] == polite[BASES[0] + "/loop/b.html"]
    # following nofollow links reaches a superset
    assert set(polite) <= set(web.reachable(max_depth=6, follow_nofollow=True))


def test_reachable_depth_limit(web: DemoWeb) -> None:
    r1 = web.reachable(max_depth=1)
    assert set(r1.values()) == {0, 1}
    assert all(web.kind(u) == "home" for u, d in r1.items() if d == 0)


def test_traps_are_infinite(web: DemoWeb, reach6: dict[str, int]) -> None:
    home4 = web.seeds()[4]
    url = next(u for u in web.outlinks(home4) if "/calendar/" in u)
    seen = set()
    for _ in range(60):   # five years of "next month"
        assert web.kind(url) == "trap" and url not in seen
        seen.add(url)
        r = get(web, url)
        assert r.status == 200
        nxt = [u for u in html_links(url, r.body) if "/calendar/" in u]
        assert nxt == [u for u in web.outlinks(url) if "/calendar/" in u]
        url = nxt[-1]   # previous, next
    assert url.endswith("/calendar/2029/01/")
    shop = next(u for u in web.outlinks(web.seeds()[5]) if "/shop/" in u)
    sids = set()
    for _ in range(50):
        assert web.kind(shop) == "trap" and get(web, shop).status == 200
        sids.add(shop)
        shop = next(u for u in web.outlinks(shop) if "/shop/" in u)
    assert len(sids) == 50
    assert shop not in reach6


def test_duplicates_are_byte_identical(web: DemoWeb, pages: list[str]) -> None:
    copies = by_kind(web, pages)["duplicate"]
    assert len(copies) >= 8
    for u in copies:
        orig = web.duplicate_of(u)
        assert orig is not None and web.kind(orig) == "page"
        assert get(web, u).body == get(web, orig).body
        assert get(web, u).header("ETag") == get(web, orig).header("ETag")
        assert web.outlinks(u) == web.outlinks(orig)
        assert web.topic_of(u) == web.topic_of(orig)
        group = web.duplicate_group(u)
        assert group[0] == orig and u in group and web.duplicate_group(orig) == group
    assert web.duplicate_of(pages[100]) is None
    # no two other status-200 pages have the same bytes
    same: dict[bytes, list[str]] = {}
    for u in pages[:400] + copies:
        same.setdefault(get(web, u).body, []).append(u)
    for urls in same.values():
        assert set(urls) <= set(web.duplicate_group(urls[0])) or len(urls) == 1


def test_redirects(web: DemoWeb) -> None:
    old = BASES[1] + "/old/0.html"
    r = get(web, old)
    assert r.status == 301 and web.kind(old) == "redirect"
    assert urljoin(old, r.header("Location")) == web.redirect_target(old)
    assert web.kind(web.redirect_target(old)) == "page"
    url, hops = BASES[0] + "/chain/1.html", 0
    while web.kind(url) == "redirect":
        r = get(web, url)
        assert r.status == 302
        url = urljoin(url, r.header("Location"))
        hops += 1
    assert hops == 3 and web.kind(url) == "page"
    a = BASES[0] + "/loop/a.html"
    assert web.redirect_target(web.redirect_target(a)) == a
    away = web.redirect_target(BASES[0] + "/away.html")
    assert away.startswith(BASES[1] + "/a/")
    assert web.redirect_target(BASES[0] + "/a/1.html") is None


def test_robots_ground_truth_matches_robots_txt(web: DemoWeb, pages: list[str],
                                                reach6: dict[str, int]) -> None:
    sample = pages[::7] + [u for u in reach6 if web.kind(u) in ("private", "no-skitter")]
    for base in BASES:
        r = web.respond(base, "/robots.txt")
        rp = urllib.robotparser.RobotFileParser(base + "/robots.txt")
        if r.status == 404:
            rp.allow_all = True
            rp.modified()
        else:
            assert r.status == 200 and r.header("Content-Type").startswith("text/plain")
            text = r.body.decode()
            rp.parse(text.splitlines())
            assert rp.site_maps() == [base + "/sitemap.xml"]
        for u in (x for x in sample if x.startswith(base + "/")):
            for agent in ("skitter", "googlebot", "BadBot"):
                assert rp.can_fetch(agent, u) == web.robots_allowed(u, agent), (agent, u)
    skitter_host = BASES[2]
    assert not web.robots_allowed(skitter_host + "/no-skitter/0.html")
    assert web.robots_allowed(skitter_host + "/no-skitter/0.html", agent="otherbot")
    assert web.robots_allowed(skitter_host + "/no-skitter/welcome.html")
    assert not web.robots_allowed(BASES[0] + "/private/0.html")
    assert web.robots_allowed(BASES[3] + "/private/0.html")          # robots.txt is a 404
    assert web.respond(BASES[3], "/robots.txt").status == 404
    assert "Crawl-delay: 0.5" in web.robots_txt(1)
    assert web.crawl_delay_of(BASES[1]) == 0.5 and web.crawl_delay_of(BASES[0]) is None
    # an integer delay, which urllib.robotparser understands, cross-checks the group choice
    w2 = make(DemoConfig(crawl_delay=2))
    rp = urllib.robotparser.RobotFileParser()
    rp.parse(w2.robots_txt(1).splitlines())
    assert rp.crawl_delay("skitter") == 2 == w2.crawl_delay_of(BASES[1])


def test_outlinks_match_the_html(web: DemoWeb, pages: list[str]) -> None:
    kinds = by_kind(web, pages)
    sample = pages[::41] + [us[0] for k, us in kinds.items()]
    sample += [BASES[4] + "/calendar/2024/01/"]
    for u in sample:
        r = get(web, u)
        ctype = r.header("Content-Type")
        if not ctype.startswith("text/html"):
            assert web.outlinks(u) == []
            continue
        enc = {"sjis": "shift_jis", "cp1252": "cp1252"}.get(web.kind(u), "utf-8")
        assert html_links(u, r.body, enc) == web.outlinks(u), u


def test_link_structure(web: DemoWeb, pages: list[str]) -> None:
    arts = by_kind(web, pages)["page"]
    counts, cross, same_topic, total, nofollow = [], 0, 0, 0, 0
    for i, u in enumerate(arts[::8]):
        out = web.outlinks(u)
        counts.append(len(out))
        host = urlsplit(u).netloc
        topic = web.topic_of(u)
        for v in out:
            total += 1
            cross += urlsplit(v).netloc != host
            if i % 4 == 0:
                nofollow += web.is_nofollow_link(u, v)
            if web.kind(v) == "page":
                same_topic += web.topic_of(v) == topic
    assert min(counts) >= 5 and max(counts) <= 30
    assert 0.10 < cross / total < 0.25   # cross_host_links 0.15, plus most popular links (~0.06)
    assert same_topic / total > 0.5
    assert 0.02 < 4 * nofollow / total < 0.15
    body = get(web, arts[0]).body.decode()
    assert '<meta name="description"' in body and '<meta name="keywords"' in body
    assert "<h1>" in body and "<h2>" in body
    styled = [get(web, u).body for u in arts[:40]]
    assert sum(b"<b><a" in b or b"<i><a" in b for b in styled) > 10
    # a page-level nofollow makes every link nofollow
    for name in ("nofollow", "xrobots"):
        u = by_kind(web, pages)[name][0]
        assert web.outlinks(u) and all(web.is_nofollow_link(u, v) for v in web.outlinks(u))
    noindex = by_kind(web, pages)["noindex"][0]
    assert b'<meta name="robots" content="noindex">' in get(web, noindex).body
    assert not any(web.is_nofollow_link(noindex, v) for v in web.outlinks(noindex))


def test_page_sizes(web: DemoWeb, pages: list[str]) -> None:
    for cfg, w in ((DemoConfig(), web), (DemoConfig(page_kb=(5, 50), pages=600), None)):
        w = w or make(cfg)
        lo, hi = cfg.page_kb
        ps = w.pages()
        for u in ps[::7] + ps[:40]:
            if w.kind(u) in ("page", "home", "category", "duplicate", "private", "noindex",
                             "nofollow", "xrobots", "gzip", "cp1252", "no-skitter", "about"):
                n = len(get(w, u).body)
                assert lo * 1024 <= n <= hi * 1024, (u, n)


def test_headers_and_special_responses(web: DemoWeb, pages: list[str]) -> None:
    kinds = by_kind(web, pages)
    art = get(web, kinds["page"][0])
    assert art.header("Content-Type") == "text/html; charset=utf-8"
    etag, lm = art.header("ETag"), art.header("Last-Modified")
    assert etag.startswith('"') and lm.endswith("GMT")
    u = kinds["page"][0]
    assert get(web, u, if_none_match=etag).status == 304
    assert get(web, u, if_modified_since=lm).status == 304
    assert get(web, u, if_none_match='"other"').status == 200

    pdf = get(web, kinds["binary"][0])
    assert pdf.header("Content-Type") == "application/pdf" and pdf.body.startswith(b"%PDF-")
    assert 2048 <= len(pdf.body) <= 8192

    x = get(web, kinds["xrobots"][0])
    assert x.header("X-Robots-Tag") == "noindex, nofollow"

    cp = get(web, kinds["cp1252"][0])
    assert cp.header("Content-Type") == "text/html; charset=windows-1252"
    assert b"charset" not in cp.body
    with pytest.raises(UnicodeDecodeError):
        cp.body.decode("utf-8")
    assert "€" in cp.body.decode("cp1252") and "“special”" in cp.body.decode("cp1252")

    sj = get(web, kinds["sjis"][0])
    assert sj.header("Content-Type") == "text/html"
    assert b'<meta charset="Shift_JIS">' in sj.body
    assert "日本語" in sj.body.decode("shift_jis")

    br = get(web, kinds["broken"][0])
    with pytest.raises(UnicodeDecodeError):
        br.body.decode("utf-8")
    assert b"</html>" not in br.body

    gz_url = kinds["gzip"][0]
    plain, packed = get(web, gz_url), get(web, gz_url, accept_gzip=True)
    assert plain.header("Content-Encoding") is None
    assert packed.header("Content-Encoding") == "gzip"
    assert gzip.decompress(packed.body) == plain.body
    assert packed.body != plain.body and packed.header("ETag") != plain.header("ETag")
    assert get(web, kinds["page"][0], accept_gzip=True).header("Content-Encoding") is None

    nf = get(web, BASES[0] + "/missing/0.html")
    assert nf.status == 404 and web.kind(BASES[0] + "/missing/0.html") == "notfound"
    sm = web.respond(BASES[0], "/sitemap.xml")
    assert sm.status == 200 and (BASES[0] + "/a/0.html").encode() in sm.body


def test_topics(web: DemoWeb, pages: list[str]) -> None:
    topics = Counter(web.topic_of(u) for u in pages if web.kind(u) == "page")
    assert set(topics) == set(range(10))
    assert min(topics.values()) > 0.5 * max(topics.values())
    assert web.topic_of(web.seeds()[0]) is None
    # the vocabularies are distinctive
    from skitter.demo.web import _TOPIC_WORDS_SPLIT
    allw = [w for ws in _TOPIC_WORDS_SPLIT for w in ws]
    assert len(allw) == len(set(allw)) and not set(allw) & set(_COMMON)
    assert all(len(ws) >= 58 for ws in _TOPIC_WORDS_SPLIT)
    # an article's text uses its topic's words
    u = next(u for u in pages if web.kind(u) == "page" and web.topic_of(u) == 3)
    text = get(web, u).body.decode().lower()
    assert sum(text.count(f" {w} ") for w in _TOPIC_WORDS_SPLIT[3]) > \
        5 * sum(text.count(f" {w} ") for w in _TOPIC_WORDS_SPLIT[4])
    # more topics than built-in vocabularies
    w12 = make(DemoConfig(pages=700, hosts=2, topics=12))
    assert {w12.topic_of(u) for u in w12.pages() if w12.kind(u) == "page"} == set(range(12))


def test_small_host_counts() -> None:
    for hosts in (1, 2):
        w = make(DemoConfig(pages=400, hosts=hosts))
        r = w.reachable(max_depth=6, obey_robots=False)
        assert set(w.pages()) <= set(r)


def test_write_static(tmp_path) -> None:
    cfg = DemoConfig(pages=300, hosts=4)
    w = make(cfg)
    w.write_static(tmp_path)
    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    # every page + robots.txt (3 hosts, one is a 404) + 4 sitemaps + manifest.json
    assert len(files) == cfg.pages + 3 + 4 + 1
    for u in w.pages()[::11]:
        p = urlsplit(u)
        g = w.base_urls.index(f"{p.scheme}://{p.netloc}")
        rel = p.path.lstrip("/") + ("index.html" if p.path.endswith("/") else "")
        assert (tmp_path / str(g) / rel).read_bytes() == get(w, u).body
    assert not (tmp_path / "3" / "robots.txt").exists()
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    assert manifest["pages"] == cfg.pages and manifest["base_urls"] == w.base_urls
    assert manifest["redirects"]["0"]["/loop/a.html"] == [302, "/loop/b.html"]


# --------------------------------------------------------------------------------------------- near duplicates


def test_near_duplicate_families(web: DemoWeb, pages: list[str]) -> None:
    labels = Counter(web.near_duplicate_label(u) for u in pages)
    for name in ("original", "edit", "boilerplate", "reorder", "mirror", "quote"):
        assert labels[name] >= 8, (name, labels)
    pairs = web.near_duplicate_pairs()
    assert pairs and all(len(p) == 2 for p in pairs)
    page_set = set(pages)
    hosts = Counter(len({urlsplit(u).netloc for u in p}) for p in pairs)
    assert hosts[1] >= 50 and hosts[2] >= 200          # same-host and cross-host (the mirror) pairs
    for p in pairs:
        a, b = sorted(p)
        assert a in page_set and b in page_set
        assert web.kind(a) == web.kind(b) == "page"        # exact copies are in no pair
        assert get(web, a).body != get(web, b).body
        assert web.topic_of(a) == web.topic_of(b)
        assert b in web.near_duplicate_family(a) and a in web.near_duplicate_family(b)
    # families: the original first, every member's family is the same list
    fam = max((web.near_duplicate_family(u) for u in pages
               if web.near_duplicate_label(u) == "boilerplate" and u.startswith(BASES[1])), key=len)
    assert web.near_duplicate_label(fam[0]) == "original"
    assert {web.near_duplicate_label(u) for u in fam} >= {"original", "edit", "boilerplate", "reorder"}
    assert all(web.near_duplicate_family(u) == fam for u in fam)
    plain = next(u for u in pages if web.kind(u) == "page" and web.near_duplicate_label(u) is None)
    assert web.near_duplicate_family(plain) == [plain]
    assert web.near_duplicate_family(web.seeds()[0]) == []
    copy = next(u for u in pages if web.kind(u) == "duplicate")
    assert web.near_duplicate_family(copy) == web.near_duplicate_family(web.duplicate_of(copy))
    # the mirror host: most of its articles are near-copies of host 0's
    mirror = [u for u in pages if u.startswith(BASES[7] + "/a/")]
    assert sum(web.near_duplicate_label(u) == "mirror" for u in mirror) > 0.8 * len(mirror)
    assert all(urlsplit(v).netloc == urlsplit(BASES[0]).netloc or v.startswith(BASES[7])
               for u in mirror for v in web.near_duplicate_family(u))
    # quotes are hard negatives: no pair with what they quote
    for u in (u for u in pages if web.near_duplicate_label(u) == "quote"):
        src = web.quoted_from(u)
        assert src in page_set and frozenset((u, src)) not in pairs


def _text_of(body: bytes) -> str:
    tree = LexborHTMLParser(body.decode())
    return " ".join(n.text() for n in tree.css("main p, main h1"))


def test_near_duplicate_variants_are_what_they_say(web: DemoWeb, pages: list[str]) -> None:
    checked = Counter()
    for u in pages:
        label = web.near_duplicate_label(u)
        if label not in ("edit", "boilerplate", "reorder", "mirror"):
            continue
        orig = web.near_duplicate_family(u)[0]
        a, b = get(web, orig).body.decode(), get(web, u).body.decode()
        ta, tb = _text_of(a.encode()).split(), _text_of(b.encode()).split()
        if label == "edit":          # the same number of words, a few of them changed
            assert len(ta) == len(tb) and 1 <= sum(x != y for x, y in zip(ta, tb)) <= 10
        elif label == "boilerplate":  # the same text, other chrome, more links
            assert ta == tb and '<aside class="popular">' in b and "<aside" not in a
            assert set(web.outlinks(orig)) < set(web.outlinks(u))
        elif label == "reorder":      # the same words, paragraphs in another order
            assert sorted(ta) == sorted(tb) and ta != tb
            assert set(web.outlinks(orig)) == set(web.outlinks(u))
        checked[label] += 1
    assert min(checked.values()) >= 8 and len(checked) == 4


def test_near_duplicate_pages_keep_the_contract(web: DemoWeb, pages: list[str]) -> None:
    special = [u for u in pages if web.near_duplicate_label(u) is not None]
    lo, hi = web.config.page_kb
    for u in special:
        r = get(web, u)
        assert r.status == 200 and lo * 1024 <= len(r.body) <= hi * 1024, (u, len(r.body))
        assert html_links(u, r.body) == web.outlinks(u), u
        assert 5 <= len(web.outlinks(u)) <= 30
    # switched off: no family, no mirror, no quote; the same page count
    w = make(DemoConfig(near_duplicates=False))
    assert len(w.pages()) == 3000 and w.near_duplicate_pairs() == set()
    assert {w.near_duplicate_label(u) for u in w.pages()} == {None}


def test_near_duplicates_on_small_webs() -> None:
    for cfg in (DemoConfig(pages=400, hosts=4, seed=7), DemoConfig(pages=300, hosts=2),
                DemoConfig(pages=1234, hosts=1), DemoConfig(page_kb=(5, 50), pages=600)):
        w = make(cfg)
        ps = w.pages()
        assert len(ps) == cfg.pages
        pairs = w.near_duplicate_pairs()
        assert pairs
        assert set().union(*pairs) <= set(ps)
        assert set(ps) <= set(w.reachable(max_depth=6, obey_robots=False))
        lo, hi = cfg.page_kb
        for u in {x for p in pairs for x in p}:
            assert lo * 1024 <= len(get(w, u).body) <= hi * 1024
            assert html_links(u, get(w, u).body) == w.outlinks(u)
        assert make(cfg).near_duplicate_pairs() == pairs


def test_popular_articles_are_deep_and_linked_from_everywhere() -> None:
    """The web's important pages after the home pages (issue 4): N/100 popular articles per host,
    deep in their own host's listings, never featured there, linked from the other hosts' home pages
    and from ~popular_links of all content links (most of them from other hosts)."""
    from skitter.demo.labels import labels

    w = make(DemoConfig(pages=2000, hosts=4))
    popular = {w._url(g, f"/a/{n}.html") for g, n in w._popular}
    assert len(popular) == sum(max(1, h.N // 100) for h in w.hosts)
    reach = w.reachable()
    for u in popular:
        g = w._host_of[u.rsplit("/a/", 1)[0]]
        homes = [s for s in w.seeds() if u in w.outlinks(s)]
        assert homes and w.seeds()[g] not in homes and len(homes) == w.config.hosts - 1
        assert reach[u] == 1
    arts = [u for u in w.pages() if w.kind(u) == "page"]
    links = [v for u in arts for v in w.outlinks(u) if w.kind(v) == "page"]
    share = sum(v in popular for v in links) / len(links)
    assert 0.06 < share < 0.14
    top = sorted(labels(w), key=lambda r: -r["pagerank"])[:20]
    assert {r["url"] for r in top[:4]} == set(w.seeds())
    assert sum(r["url"] in popular for r in top) >= 14
