"""The demo's hidden site (skitter.demo.hidden): records behind a search form, capped and paginated
results, the forms never to submit, robots.txt, and ground truth."""

from __future__ import annotations

import math
from urllib.parse import urlencode, urljoin, urlsplit

import pytest
from selectolax.lexbor import LexborHTMLParser

from skitter.demo.hidden import HiddenConfig, HiddenSite
from skitter.robots.rules import RobotsRules

BASE = "http://127.0.0.10:8123"


@pytest.fixture(scope="module")
def site() -> HiddenSite:
    return HiddenSite(HiddenConfig(), BASE)


def get(site: HiddenSite, url: str):
    p = urlsplit(urljoin(BASE + "/", url))
    return site.respond(p.path + (f"?{p.query}" if p.query else ""))


def links(url: str, body: bytes) -> list[str]:
    tree = LexborHTMLParser(body.decode())
    return [urljoin(url, a.attributes["href"]) for a in tree.css("a[href]")]


def forms(body: bytes) -> list[dict]:
    tree = LexborHTMLParser(body.decode())
    return [{"action": f.attributes.get("action"), "method": (f.attributes.get("method") or "get"),
             "names": [i.attributes.get("name") for i in f.css("input, select, textarea")]}
            for f in tree.css("form")]


def results_url(q: str, category: str = "", page: int = 1) -> str:
    params = {"q": q, "category": category, "lang": "en"} | ({"page": str(page)} if page != 1 else {})
    return f"{BASE}/search?{urlencode(params)}"


def record_links(url: str, body: bytes) -> list[str]:
    return [u for u in links(url, body) if "/record/" in u]


# ---------------------------------------------------------------------------------------------


def test_deterministic_and_seeded() -> None:
    a, b = HiddenSite(HiddenConfig(records=400), BASE), HiddenSite(HiddenConfig(records=400), BASE)
    c = HiddenSite(HiddenConfig(records=400, seed=2), BASE)
    for path in ("/", "/search", "/record/7.html", "/search?q=the&category=&lang=en&page=3"):
        assert a.respond(path).body == b.respond(path).body
    assert a.records == b.records and a.records != c.records


def test_config_is_checked() -> None:
    for bad in (dict(records=0), dict(per_page=0), dict(per_page=20, cap=10), dict(categories=0),
                dict(categories=11)):
        with pytest.raises(ValueError):
            HiddenConfig(**bad)


def test_records_and_ground_truth(site: HiddenSite) -> None:
    urls = site.record_urls()
    assert len(urls) == len(set(urls)) == 3000
    assert {r.category for r in site.records} == set(site.categories) and len(site.categories) == 10
    assert all(1950 <= r.year <= 2024 and 16 <= len(r.description.split()) <= 30 for r in site.records)
    assert len({r.maker for r in site.records}) > 300
    r = site.records[42]
    page = get(site, urls[42])
    assert page.status == 200 and r.title in page.body.decode() and r.description in page.body.decode()
    assert get(site, "/record/3000.html").status == 404
    assert get(site, "/record/1.html?x=1").status == 404


def test_home_links_to_the_search_page_only(site: HiddenSite) -> None:
    home = get(site, "/")
    assert home.status == 200 and links(BASE + "/", home.body) == [BASE + "/", BASE + "/search"]


def test_records_are_linked_from_result_pages_only(site: HiddenSite) -> None:
    for url in (BASE + "/", BASE + "/search", site.record_url(5), BASE + "/search/advanced"):
        assert record_links(url, get(site, url).body) == []
    assert record_links(results_url("telescope"), get(site, results_url("telescope")).body)


def test_forms_of_the_site(site: HiddenSite) -> None:
    page = forms(get(site, "/search").body)
    by_action = {f["action"]: f for f in page}
    search = by_action[None]   # no action attribute: it submits to /search itself
    assert search["method"] == "get" and search["names"] == ["q", "category", "lang", None]
    assert by_action["/search/advanced"]["method"] == "get"
    assert by_action["/account/login"]["method"] == "post"
    assert "password" in by_action["/account/login"]["names"]
    assert by_action["/newsletter"]["method"] == "get"
    comment = {f["action"]: f for f in forms(get(site, "/record/9.html").body)}["/record/9/comment"]
    assert comment["method"] == "get" and "comment" in comment["names"]
    for url in ("/newsletter?address=a%40b.c", "/record/9/comment?author=x&comment=y"):
        assert get(site, url).status == 200 and site.never_submit(BASE + url)   # what would harm
    assert get(site, "/account/login").status == 405 and site.never_submit(BASE + "/account/login")
    assert not site.never_submit(results_url("x")) and not site.never_submit(site.record_url(1))


def test_search_semantics(site: HiddenSite) -> None:
    hits = site.search("telescope")
    assert hits and all("telescope" in site.records[i].words() for i in hits)
    assert hits == sorted(hits, key=lambda i: (-site.records[i].year, i))   # newest first
    both = site.search("Telescope  NEBULA")   # case-insensitive, every word
    assert set(both) == {i for i in hits if "nebula" in site.records[i].words()}
    cooking = site.search("the", "cooking")
    assert cooking and all(site.records[i].category == "cooking" for i in cooking)
    assert site.search("", "") == site.search("") and len(site.search("")) == 3000
    assert site.search("the", "no-such-category") == [] and site.search("zzzqqq") == []


def test_results_are_paginated_and_capped(site: HiddenSite) -> None:
    q = "the"
    hits = site.search(q)
    assert len(hits) > site.config.cap
    seen: list[str] = []
    url, pages = results_url(q), 0
    while url:
        resp = get(site, url)
        assert resp.status == 200
        seen += record_links(url, resp.body)
        nxt = [u for u in links(url, resp.body) if "page=" in u and u != url and
               int(u.rsplit("page=", 1)[1]) == pages + 2]
        pages += 1
        url = nxt[0] if nxt else ""
    assert pages == math.ceil(site.config.cap / site.config.per_page)
    assert seen == [site.record_url(i) for i in hits[:site.config.cap]]
    assert "only the first 100 are shown" in get(site, results_url(q)).body.decode()
    # page 2 links back to the submission itself (same parameter order), page 1 has no "Previous"
    assert results_url(q) in links(results_url(q, page=2), get(site, results_url(q, page=2)).body)
    assert 'rel="prev"' not in get(site, results_url(q)).body.decode()


def test_empty_results_and_bad_requests(site: HiddenSite) -> None:
    for url in (results_url("zzzqqq"), results_url("the", "no-such-category"), results_url("the", page=11),
                results_url("the", page=0)):
        resp = get(site, url)
        assert resp.status == 200 and "No records match" in resp.body.decode()
        assert record_links(url, resp.body) == []
    assert get(site, "/search?q=the&category=").status == 400   # the hidden lang=en is required
    assert get(site, "/nothing").status == 404


def test_robots_txt(site: HiddenSite) -> None:
    body = get(site, "/robots.txt")
    rules = RobotsRules.parse(body.body, "skitter")
    for url in (BASE + "/search/advanced?q=x&lang=en", BASE + "/search/advanced", results_url("x"),
                BASE + "/", site.record_url(3)):
        assert rules.allowed(url) == site.robots_allowed(url)
    assert not site.robots_allowed(BASE + "/search/advanced?q=x") and site.robots_allowed(results_url("x"))
    advanced = get(site, "/search/advanced?q=the&from=1990&to=1999&lang=en")
    assert advanced.status == 200   # it works: robots.txt is what keeps crawlers out
    years = {site.records[int(u.rsplit("/", 1)[1].split(".")[0])].year
             for u in record_links(BASE + "/search/advanced", advanced.body)}
    assert years and all(1990 <= y <= 1999 for y in years)


def test_every_record_is_reachable_by_some_query(site: HiddenSite) -> None:
    """The fixture is solvable: each record is among the first ``cap`` results of one word of its own."""
    cap = site.config.cap
    first = {}
    for r in site.records:
        assert any(r.number in first.setdefault(w, set(site.search(w)[:cap])) for w in sorted(r.words()))
