"""The wild web generator (skitter.demo.wild): determinism, shape statistics, ground truth, traps.

The ground truth is checked against ``respond`` alone by a breadth-first crawl in this process
made of skitter's own parts: ``parse.parse_html``, ``urls.resolve``/``canonicalize``,
``RobotsRules`` and ``LinkFilter``.
"""

from __future__ import annotations

import gzip
import json
import math
import re
import statistics
from collections import Counter
from dataclasses import replace
from urllib.parse import unquote, urljoin, urlsplit

import pytest

from skitter.analyse import is_html
from skitter.config import CrawlConfig
from skitter.demo.wild import WildConfig, WildWeb
from skitter.linkfilter import LinkFilter
from skitter.models import FetchResult
from skitter.parse import parse_html
from skitter.robots.rules import RobotsRules
from skitter.urls import canonicalize, resolve

UA = "skitter/1.0"
CONFIG = WildConfig(seed=3, hosts=12, pages=1000)


def make(config: WildConfig = CONFIG, names: bool = False) -> WildWeb:
    hosts = [f"h{g}.wild.test" if names else f"127.0.10.{g + 1}" for g in range(config.hosts)]
    return WildWeb(config, [f"http://{h}:8080" for h in hosts])


@pytest.fixture(scope="module")
def web() -> WildWeb:
    return make()


@pytest.fixture(scope="module")
def truth(web: WildWeb) -> dict[str, int]:
    return web.reachable()


@pytest.fixture(scope="module")
def everything(web: WildWeb) -> dict[str, int]:
    return web.reachable(obey_robots=False)


def get(web: WildWeb, url: str, headers: dict | None = None):
    p = urlsplit(url)
    return web.respond(f"{p.scheme}://{p.netloc}", p.path + (f"?{p.query}" if p.query else ""), headers)


def by_kind(web: WildWeb, urls) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for u in urls:
        out.setdefault(web.kind(u), []).append(u)
    return out


# ---------------------------------------------------------------------------------------------
# a crawl made of skitter's parts, over respond() only


def robots_for(web: WildWeb, base: str) -> RobotsRules:
    """RFC 9309 2.3.1 as skitter's RobotsCache applies it: redirects followed, 4xx allow all,
    5xx disallow all."""
    url = base + "/robots.txt"
    for _ in range(6):
        resp = get(web, url)
        if resp.status in (301, 302, 303, 307, 308):
            url = urljoin(url, resp.header("Location"))
            continue
        if resp.status == 200:
            return RobotsRules.parse(resp.body, UA)
        return RobotsRules.allow_all() if 400 <= resp.status < 500 else RobotsRules.disallow_all()
    return RobotsRules.allow_all()


def crawl_in_process(web: WildWeb, links_seen: dict[str, list] | None = None) -> dict[str, int]:
    config = CrawlConfig(seeds=tuple(web.seeds()))
    link_filter = LinkFilter(config, list(config.seeds))
    rules = {b: robots_for(web, b) for b in web.base_urls}
    fetched: dict[str, int] = {}
    seen: set[str] = set()
    levels: list[list[tuple[str, int]]] = [[] for _ in range(config.max_depth + 1)]

    def admit(url: str, depth: int, hops: int) -> None:
        if url not in seen:
            seen.add(url)
            if rules[f"http://{urlsplit(url).netloc}"].allowed(url):
                levels[depth].append((url, hops))

    for seed in config.seeds:
        if link_filter.admit(canonicalize(seed), 0):
            admit(canonicalize(seed), 0, 0)
    for depth, level in enumerate(levels):
        for url, hops in level:
            resp = get(web, url)
            fetched[url] = resp.status
            location = resp.header("Location")
            if resp.status in (301, 302, 303, 307, 308) and location:
                target = canonicalize(resolve(url, location))
                if hops < config.max_redirects and target != url:
                    admit(target, depth, hops + 1)
                continue
            result = FetchResult(url=url, status=resp.status, headers=resp.headers, body=resp.body)
            if resp.status != 200 or not is_html(result):
                continue
            page = parse_html(resp.body, url, resp.header("Content-Type"), user_agent_token="skitter")
            if links_seen is not None:
                links_seen[url] = [(link.url, link.nofollow) for link in page.links]
            if depth < config.max_depth:
                for link in page.links:
                    if not link.nofollow and link_filter.admit(link.url, depth + 1):
                        admit(link.url, depth + 1, 0)
    return fetched


@pytest.mark.parametrize("seed", [3, 8])
def test_ground_truth_is_what_skitters_parts_find_over_respond(seed: int) -> None:
    web = make(replace(CONFIG, seed=seed), names=seed == 8)
    links: dict[str, list] = {}
    assert crawl_in_process(web, links) == web.reachable()
    for url, found in links.items():   # every spelling resolves where the model says
        assert found == web.outlinks(url), url


def test_robots_rules_agree_with_skitters_parser(web: WildWeb, everything: dict[str, int]) -> None:
    rules = {b: robots_for(web, b) for b in web.base_urls}
    for url in everything:
        assert rules[f"http://{urlsplit(url).netloc}"].allowed(url) == web.robots_allowed(url), url
    for base in web.base_urls:
        assert rules[base].crawl_delay == web.crawl_delay(base + "/")


# ---------------------------------------------------------------------------------------------
# determinism and configuration


def test_deterministic(web: WildWeb, truth: dict[str, int]) -> None:
    again = make()
    assert again.reachable() == truth
    for url in list(truth)[::37]:
        a, b = get(web, url), get(again, url)
        assert (a.status, a.headers, a.body) == (b.status, b.headers, b.body)
    other = make(replace(CONFIG, seed=4))
    assert set(other.reachable()) != set(truth)


def test_page_count_is_exact_and_every_host_has_a_seed() -> None:
    for cfg in (CONFIG, WildConfig(seed=1, hosts=1, pages=5), WildConfig(seed=2, hosts=3, pages=40),
                WildConfig(seed=5, hosts=32, pages=4000, host_zipf=0.5)):
        web = make(cfg)
        pages = web.pages()
        assert len(pages) == len(set(pages)) == cfg.pages
        assert [urlsplit(s).path for s in web.seeds()] == ["/"] * cfg.hosts
        assert all(get(web, p).status == 200 for p in pages[::max(1, len(pages) // 50)])


@pytest.mark.parametrize("bad", [dict(hosts=0), dict(pages=5), dict(page_kb=(0, 4)), dict(facets=()),
                                 dict(crawl_delay_hosts=(12,)), dict(transient_share=2.0)])
def test_bad_configs_are_refused(bad: dict) -> None:
    with pytest.raises(ValueError):
        WildConfig(**{**dict(hosts=12, pages=1000), **bad})


def test_explicit_roles_from_the_config() -> None:
    web = make(replace(CONFIG, crawl_delay_hosts=(1, 2), crawl_delay=(0.2, 0.3), transient_hosts=(5,),
                       slow_hosts=(6,), latency=(0.01, 0.01)))
    info = web.info()
    delayed = [g for g, h in enumerate(info) if h["crawl_delay"]]
    assert delayed == [1, 2] and all(0.2 <= info[g]["crawl_delay"] <= 0.3 for g in delayed)
    assert [g for g, h in enumerate(info) if h["transient"]] == [5]
    assert web.latency(web.base_urls[6]) == 0.01 and web.latency(web.base_urls[7]) == 0.0
    r500 = next(g for g, h in enumerate(info) if h["robots"] == "500")
    with pytest.raises(ValueError):
        make(replace(CONFIG, crawl_delay_hosts=(r500,)))


# ---------------------------------------------------------------------------------------------
# shape


def test_host_sizes_are_zipf_like(web: WildWeb) -> None:
    sizes = sorted((h["documents"] for h in web.info()), reverse=True)
    assert sum(sizes) == CONFIG.pages
    assert sizes[0] >= 3 * statistics.median(sizes)
    # log(size) against log(rank): slope close to -host_zipf
    xs = [math.log(r + 1) for r in range(len(sizes))]
    ys = [math.log(s) for s in sizes]
    mx, my = statistics.mean(xs), statistics.mean(ys)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)
    assert -1.3 < slope < -0.7
    flat = sorted((h["documents"] for h in make(replace(CONFIG, host_zipf=0.3)).info()), reverse=True)
    assert flat[0] < sizes[0]


def test_out_degree_is_heavy_tailed_and_in_links_concentrated(web: WildWeb, everything: dict) -> None:
    degree = {u: len(web.outlinks(u)) for u in everything if web.kind(u) == "content"}
    values = sorted(degree.values())
    assert 8 <= statistics.median(values) <= 45
    hubs = [d for d in values if d >= 100]
    assert hubs and len(hubs) < 0.05 * len(values)
    indegree: Counter[str] = Counter()
    for u in degree:
        indegree.update(t for t, _ in web.outlinks(u) if web.kind(t) == "content")
    counts = sorted(indegree.values(), reverse=True)
    top = counts[:max(1, len(counts) // 20)]
    assert sum(top) > 0.3 * sum(counts)      # 5 % of the pages hold over 30 % of the links (6x uniform)


def test_cross_host_links_at_per_host_rates(web: WildWeb) -> None:
    rates = [h["cross_host"] for h in web.info()]
    assert min(rates) >= CONFIG.cross_host[0] and max(rates) <= CONFIG.cross_host[1]
    assert max(rates) - min(rates) > 0.1
    for g, base in enumerate(web.base_urls[:4]):
        host = urlsplit(base).netloc
        links = [t for u in web.pages() if urlsplit(u).netloc == host and web.kind(u) == "content"
                 for t, _ in web.outlinks(u)]
        share = sum(urlsplit(t).netloc != host for t in links) / len(links)
        assert abs(share - rates[g]) < 0.12, (g, share, rates[g])


def test_page_sizes_are_log_uniform(web: WildWeb) -> None:
    sizes = [len(get(web, u).body) for u in web.pages() if web.kind(u) == "content"][:400]
    lo, hi = CONFIG.page_kb
    assert min(sizes) >= lo * 1024 * 0.9 and max(sizes) >= hi * 1024 * 0.5
    assert statistics.median(sizes) < (lo + hi) / 2 * 1024   # log-uniform: the median is low


def test_url_shapes_of_real_sites(web: WildWeb, everything: dict[str, int]) -> None:
    urls = list(everything)
    shapes = {
        "dated blog path": r"/20\d\d/\d\d/[a-z-]+/$",
        "wiki title": r"/wiki/[^?]+$",
        "percent-encoded non-ASCII": r"/wiki/[^?]*%[0-9A-F]{2}",
        "query page": r"\?(id|t)=\d+$",
        "reordered parameters": r"\?ref=\w+&id=\d+$",
        "tracking parameters": r"utm_\w+=",
        "session id": r";jsessionid=[0-9A-F]{16}",
        "query listing": r"[?&](start|from|page)=",
        "directory without slash": r"//[^/]+/(docs/[a-z-]+|about|20\d\d/\d\d/[a-z-]+)$",
    }
    for name, pattern in shapes.items():
        assert any(re.search(pattern, u) for u in urls), name
    html = b"".join(get(web, u).body for u in urls if everything[u] == 200)
    for name, needle in {"relative ../": b'href="../', "relative ./": b'href="./', "fragment": b'#',
                         "protocol-relative": b'href="//', "upper-case scheme": b'href="HTTP://',
                         "whitespace": b'href=" ', "base href": b"<base href=", "mailto": b"mailto:",
                         "javascript": b"javascript:", "tel": b"tel:", "escaped &": b"&amp;",
                         "lower-case escape": b"%c", "raw non-ASCII": b"href=\"/wiki/",
                         "nofollow": b'rel="nofollow'}.items():
        assert needle in html, name
    assert re.search(rb'href="[^"]*%[46][0-9A-F][^"]*"', html), "an escaped unreserved letter"
    named = make(names=True)
    assert b"HTTP://H" in b"".join(get(named, u).body for u in named.pages()[:400])   # upper-case hosts


def test_equivalent_urls_answer_the_same_bytes(web: WildWeb, everything: dict[str, int]) -> None:
    variants = [u for u in everything if web.kind(u) == "variant"]
    assert variants
    for url in variants:
        p = urlsplit(url)
        if p.path == "/item":
            doc = f"{p.scheme}://{p.netloc}/item?id={dict(x.split('=') for x in p.query.split('&'))['id']}"
        elif p.query:
            doc = url.split("?")[0]
        else:
            doc = url.removesuffix("index.html") if url.endswith("index.html") else url + "/"
        assert get(web, url).body == get(web, doc).body, url


# ---------------------------------------------------------------------------------------------
# robots.txt, failures, content types


def test_robots_kinds_and_crawl_delay(web: WildWeb) -> None:
    info = web.info()
    assert {h["robots"] for h in info} == {"404", "rules", "agent", "redirect", "500"}
    assert sum(1 for h in info if h["crawl_delay"]) == 3
    texts = [web.robots_txt(g) or "" for g in range(len(info))]
    assert any("User-agent: skitter" in t or "user-agent: skitter" in t.lower() for t in texts)
    assert any(re.search(r"(?im)^disallow: \S*\*", t) for t in texts) and any("$" in t for t in texts)
    assert all("Sitemap: " in t for t in texts if t)
    r500 = next(g for g, h in enumerate(info) if h["robots"] == "500")
    assert get(web, web.base_urls[r500] + "/robots.txt").status == 500
    redirect = next(g for g, h in enumerate(info) if h["robots"] == "redirect")
    assert get(web, web.base_urls[redirect] + "/robots.txt").status == 301


def test_failures_are_in_the_ground_truth(web: WildWeb, truth: dict[str, int]) -> None:
    statuses = Counter(truth.values())
    for status in (200, 301, 302, 303, 307, 308, 404, 410, 500):
        assert statuses[status], status
    kinds = by_kind(web, truth)
    for kind in ("binary", "octet", "untyped-html", "xhtml", "latin1", "plain-html", "nofollow", "feed",
                 "utility", "gone", "error", "no-location", "print"):
        assert kind in kinds, kind
    r500 = next(h["base"] for h in web.info() if h["robots"] == "500")
    assert not any(u.startswith(r500) for u in truth)


def test_redirect_chains_loops_and_the_five_hop_limit(web: WildWeb, everything: dict[str, int]) -> None:
    chains: dict[str, list[str]] = {}
    for url in everything:
        m = re.search(r"/r/([a-z]+-\d+)(?:/\d+)?$", url)
        if m:
            chains.setdefault(m.group(1), []).append(url)
    long = [c for c in chains.values() if len(c) == 6]
    assert len(long) == 1   # 7 hops: the first six fetched, the seventh never requested
    end = long[0][-1]
    assert web.redirect_target(end) is not None and web.redirect_target(end) not in everything
    assert any(len(c) == 1 for c in chains.values())
    locations = [get(web, u).header("Location") for c in chains.values() for u in c]
    assert any(x.startswith("http://") for x in locations) and any(not x.startswith(("/", "http")) for x in locations)
    loop = [u for u in everything if "/loop/" in u]
    assert len(loop) == 2 and {web.redirect_target(u) for u in loop} == set(loop)
    here = next(u for u in everything if "/here/" in u)
    assert web.redirect_target(here) == here
    out = [u for u in everything if re.search(r"/out/\d$", u)]
    assert len(out) == 3 and all(urlsplit(web.redirect_target(u)).netloc != urlsplit(u).netloc for u in out)


def test_content_types_decide_what_is_parsed(web: WildWeb, truth: dict[str, int]) -> None:
    kinds = by_kind(web, truth)
    plain, untyped = kinds["plain-html"][0], kinds["untyped-html"][0]
    assert get(web, plain).header("Content-Type").startswith("text/plain") and web.outlinks(plain) == []
    assert get(web, untyped).header("Content-Type") is None and web.outlinks(untyped)
    # each odd page links a page nothing else links: fetched behind the parsed ones (no type,
    # XHTML, windows-1252), not behind text/plain or meta nofollow, nor at the end of the 7-hop chain
    fetched = {u for u in truth if web.kind(u) == "orphan"}
    parsed = {t for kind in ("untyped-html", "xhtml", "latin1") for t, _ in web.outlinks(kinds[kind][0])}
    assert len(fetched) == 3 and fetched <= parsed
    hidden = [link.url for link in parse_html(get(web, plain).body, plain, "text/html").links]
    hidden += [t for t, _ in web.outlinks(kinds["nofollow"][0])]
    hidden = [u for u in hidden if web.kind(u) == "orphan"]
    assert len(hidden) == 2 and all(get(web, u).status == 200 and u not in truth for u in hidden)
    latin = get(web, kinds["latin1"][0])
    assert latin.header("Content-Type") == "text/html" and b'<meta charset="windows-1252"' in latin.body
    assert parse_html(latin.body, kinds["latin1"][0], "text/html").encoding == "cp1252"
    nofollow = kinds["nofollow"][0]
    assert web.outlinks(nofollow) and all(nf for _, nf in web.outlinks(nofollow))


def test_gzip_when_accepted(web: WildWeb) -> None:
    g = next(g for g, h in enumerate(web.info()) if h["gzip"] and h["robots"] != "500")
    url = web.seeds()[g]
    plain = get(web, url)
    packed = get(web, url, {"Accept-Encoding": "gzip, br"})
    assert packed.header("Content-Encoding") == "gzip" and gzip.decompress(packed.body) == plain.body
    assert plain.header("Content-Encoding") is None


def test_transient_failures_are_the_models_choice(web: WildWeb, everything: dict[str, int]) -> None:
    hosts = {h["base"] for h in web.info() if h["transient"]}
    assert len(hosts) == 2
    failing = {u: web.first_failure(u) for u in everything}
    failing = {u: f for u, f in failing.items() if f}
    assert {f"http://{urlsplit(u).netloc}" for u in failing} <= hosts
    assert {f[0] for f in failing.values()} == {503, 429}
    docs = [u for u in everything if f"http://{urlsplit(u).netloc}" in hosts
            and web.kind(u) in ("home", "listing", "content", "extra")]
    assert 0.02 < len(failing) / len(docs) < 0.1
    assert all(get(web, u).status == 200 for u in failing)   # the model itself always answers


def test_huge_pages_near_the_cap() -> None:
    web = make(replace(CONFIG, huge_pages=1, huge_kb=(900, 1000)))
    (big,) = [u for u in web.reachable() if web.kind(u) == "huge"]
    assert 900 * 1024 <= len(get(web, big).body) <= 1000 * 1024 + 4096


# ---------------------------------------------------------------------------------------------
# traps


def trap_urls(web: WildWeb, kind: str, **kw) -> list[str]:
    return [u for u in web.reachable(obey_robots=False, **kw) if web.kind(u) == kind]


def test_faceted_search_is_finite(web: WildWeb) -> None:
    # ordered partial choices of (3, 3, 2) values: 1 + 8 + 2(9 + 6 + 6) + 6 * 18
    assert len(trap_urls(web, "trap-facets")) == 1 + 8 + 42 + 108 == 159
    small = make(replace(CONFIG, facets=(2, 2)))
    assert len(trap_urls(small, "trap-facets")) == 1 + 4 + 2 * 4
    assert len(trap_urls(web, "trap-facets", max_depth=30)) == 159


def test_calendar_is_infinite_and_bounded_by_depth(web: WildWeb) -> None:
    for depth in (10, 6):
        assert len(trap_urls(web, "trap-calendar", max_depth=depth)) == 2 * depth - 1
    day = trap_urls(web, "trap-calendar")[0]
    far = re.sub(r"date=\d{4}", "date=3000", day)
    assert get(web, far).status == 200 and web.outlinks(far)


def test_relative_trap_is_bounded_by_repeated_segments(web: WildWeb) -> None:
    assert len(trap_urls(web, "trap-relative")) == 3
    assert len(trap_urls(web, "trap-relative", max_repeated_segments=0)) == 10   # depth 1 .. 10
    deep = max(trap_urls(web, "trap-relative"), key=len)
    segment = deep.rstrip("/").rsplit("/", 1)[1]
    assert get(web, deep + f"{segment}/" * 20).status == 200


def test_session_ids_double_their_host(web: WildWeb, everything: dict[str, int]) -> None:
    (base,) = [h["base"] for h in web.info() if h["session_ids"]]
    urls = [u for u in everything if u.startswith(base)]
    sids = Counter(m.group(1) for u in urls for m in [re.search(r";jsessionid=(\w+)", u)] if m)
    assert len(sids) == 2   # the seed's session and the shared one from other hosts' links
    docs = [u for u in web.pages() if u.startswith(base)]
    for sid in sids:
        with_sid = {re.sub(r";jsessionid=\w+", "", u) for u in urls if sid in u}
        assert set(docs) <= with_sid


def test_slashless_directories_and_what_only_a_duplicate_links(web: WildWeb, truth: dict[str, int]) -> None:
    (base,) = [h["base"] for h in web.info() if h["slashless_200"]]
    prints = [u for u in truth if web.kind(u) == "print"]
    assert prints
    for url in prints:
        section = url.removesuffix("print.html")
        slashless = section.rstrip("/")
        assert url.startswith(base) and truth[slashless] == 200
        assert get(web, slashless).body == get(web, section).body
        assert (url, False) in web.outlinks(section) and (url, False) not in web.outlinks(slashless)
        assert slashless.rsplit("/", 1)[0] + "/print.html" in truth   # one level up: a 404
    other = [h["base"] for h in web.info() if not h["slashless_200"] and h["robots"] != "500"]
    redirects = [u for u in truth if any(u.startswith(b) for b in other) and truth[u] == 301
                 and web.redirect_target(u) == u + "/"]
    assert redirects


# ---------------------------------------------------------------------------------------------
# static export


def test_write_static(tmp_path, web: WildWeb, everything: dict[str, int]) -> None:
    manifest = web.write_static(tmp_path)
    assert json.loads((tmp_path / "manifest.json").read_text()) == json.loads(json.dumps(manifest))
    for url, status in everything.items():
        g = web.base_urls.index(f"http://{urlsplit(url).netloc}")
        p = urlsplit(url)
        path = unquote(p.path)
        if status == 200 and not any(path in manifest[k][str(g)] for k in ("aliases",)):
            if p.query:
                file = tmp_path / str(g) / "_q" / path.strip("/") / f"{p.query}.html"
            else:
                file = tmp_path / str(g) / (path.lstrip("/") + ("index.html" if path.endswith("/") else ""))
            assert file.read_bytes() == get(web, url).body, url
        elif status in (301, 302, 303, 307, 308) and web.kind(url) != "no-location":
            assert manifest["redirects"][str(g)][path] == [status, get(web, url).header("Location")]
        elif status in (410, 500):
            assert manifest["statuses"][str(g)][path] == status
    r500 = next(g for g, h in enumerate(web.info()) if h["robots"] == "500")
    assert manifest["statuses"][str(r500)]["/robots.txt"] == 500
    untyped = by_kind(web, everything)["untyped-html"][0]
    g = web.base_urls.index(f"http://{urlsplit(untyped).netloc}")
    assert manifest["headers"][str(g)][urlsplit(untyped).path] == [["Content-Type", ""]]
