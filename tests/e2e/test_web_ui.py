"""End-to-end: `skitter serve` driven by Debian's chromium (headless, through Playwright).

A demo web is crawled (the crawl builds the index when it stops), `skitter serve` runs in a
subprocess, and the browser searches, paginates, uses the advanced form, sees a malformed
query's message; a hostile site (titles, text and URLs full of markup) is crawled and searched
and the rendered DOM is checked for injected elements; the /crawl page shows the statistics and
its four plots. Screenshots go to tests/artifacts/.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

CHROMIUM = "/usr/bin/chromium"
if not os.path.exists(CHROMIUM):
    pytest.skip(f"{CHROMIUM} is not installed (apt-get install chromium)", allow_module_level=True)
playwright_sync = pytest.importorskip("playwright.sync_api")

from skitter.demo.server import DemoServer  # noqa: E402
from skitter.demo.web import DemoConfig  # noqa: E402
from skitter.errors import QuerySyntaxError  # noqa: E402
from skitter.search import Hit, Results  # noqa: E402
from skitter.search.query import parse  # noqa: E402
from skitter.web.app import build_query, is_http_url, make_env  # noqa: E402

from sites import CHROMIUM_ARGS, Served, free_port  # noqa: E402

pytestmark = pytest.mark.slow

ARTIFACTS = Path(__file__).resolve().parents[1] / "artifacts"


def crawl(seeds: list[str], out: Path) -> None:
    res = subprocess.run([sys.executable, "-m", "skitter", "crawl", *seeds, "-o", str(out), "--delay", "0",
                          "--adaptive-delay", "0", "--max-crawl-delay", "0", "--quiet"],
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert (out / "index.db").exists(), "the crawl did not build its index"






@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    out = tmp_path_factory.mktemp("webui") / "crawl"
    with DemoServer(DemoConfig(hosts=2, pages=200, seed=7, crawl_delay=0)) as srv:
        crawl(list(srv.web.seeds()), out)
    served = Served(out)
    yield served
    served.stop()


# -- the hostile site ----------------------------------------------------------------------------
T1 = '<script>window.__pwned=1</script>zebrafish "><img src=x onerror="window.__pwned=2">'
PAGES = {
    "/": (f"<html><head><title>{T1}</title></head><body><p>zebrafish aquarium "
          "&lt;script&gt;window.__pwned=3&lt;/script&gt; &quot;&gt;&lt;img src=x onerror=window.__pwned=4&gt; "
          "zebrafish</p>"
          '<a href="/p2">zebrafish two</a> <a href="javascript:window.__pwned=5">zebrafish js</a> '
          '<a href="/q/%22%3E%3Csvg%20onload=window.__pwned=6%3E?x=%3Cscript%3Ewindow.__pwned=7%3C/script%3E">'
          "zebrafish three</a></body></html>"),
    "/p2": ('<html><head><title>"&gt;&lt;img src=x onerror=window.__pwned=8&gt; zebrafish</title>'
            '<meta name="description" content="&lt;script&gt;window.__pwned=9&lt;/script&gt; zebrafish"></head>'
            "<body><h1>&lt;svg onload=window.__pwned=10&gt;</h1><p>zebrafish tank "
            "&lt;/mark&gt;&lt;script&gt;window.__pwned=11&lt;/script&gt; zebrafish</p>"
            '<a href="/">home</a></body></html>'),
}
QPAGE = ("<html><head><title>&lt;iframe src=javascript:window.__pwned=12&gt; zebrafish</title></head>"
         "<body><p>zebrafish &lt;b onmouseover=window.__pwned=13&gt;bold&lt;/b&gt; zebrafish</p></body></html>")


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    from aiohttp import web

    async def handler(request):
        body = PAGES.get(request.path, QPAGE if request.path.startswith("/q/") else None)
        if body is None:
            return web.Response(status=404, text="not found")
        return web.Response(text=body, content_type="text/html")

    port = free_port()
    loop = asyncio.new_event_loop()
    started = threading.Event()
    runner_box = {}

    def run():
        asyncio.set_event_loop(loop)
        app = web.Application()
        app.router.add_route("GET", "/{tail:.*}", handler)
        runner = web.AppRunner(app)
        loop.run_until_complete(runner.setup())
        loop.run_until_complete(web.TCPSite(runner, "127.0.0.1", port).start())
        runner_box["r"] = runner
        started.set()
        loop.run_forever()

    t = threading.Thread(target=run, daemon=True)
    t.start()
    assert started.wait(10)
    out = tmp_path_factory.mktemp("hostile") / "crawl"
    try:
        crawl([f"http://127.0.0.1:{port}/"], out)
    finally:
        asyncio.run_coroutine_threadsafe(runner_box["r"].cleanup(), loop).result(10)
        loop.call_soon_threadsafe(loop.stop)
        t.join(10)
    served = Served(out)
    yield served
    served.stop()


# -- the browser ---------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def browser():
    with playwright_sync.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        yield b
        b.close()


@pytest.fixture
def page(browser):
    ctx = browser.new_context(viewport={"width": 1100, "height": 900})
    pg = ctx.new_page()
    pg.set_default_timeout(10_000)
    yield pg
    ctx.close()


def shot(page, name: str) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"web_ui_{name}.png"), full_page=True)


def hit_count(page) -> int:
    return page.locator("li.hit").count()


# -- tests ---------------------------------------------------------------------------------------
def test_build_query_quotes_what_the_user_types():
    assert build_query({"all": "keel hull"}) == '"keel" AND "hull"'
    assert build_query({"xor_a": "keel", "xor_b": "hull"}) == '("keel" XOR "hull")'
    assert build_query({"near_a": "keel", "near_b": "hull", "near_k": "3"}) == '"keel" NEAR/3 "hull"'
    assert build_query({"near_a": "keel", "near_b": "hull", "near_k": ""}) == '"keel" NEAR "hull"'
    # a distance that is no whole number is passed on, and the query's error says so (it was NEAR/10)
    assert build_query({"near_a": "keel", "near_b": "hull", "near_k": "-3"}) == '"keel" NEAR/-3 "hull"'
    with pytest.raises(QuerySyntaxError, match="NEAR/k wants a whole number"):
        parse(build_query({"near_a": "keel", "near_b": "hull", "near_k": "- 3"}))
    q = build_query({"all": 'OR ("x', "none": "y", "site": "a.test", "after": "2024-01-01"})
    assert q == '"OR" AND "(x" AND site:a.test AND after:2024-01-01 AND NOT "y"'
    assert is_http_url("https://a.test/x") and is_http_url("HTTP://a.test")
    assert not any(map(is_http_url, ["javascript:alert(1)", "data:text/html,x", "//a.test", "/x", None]))


def test_only_http_urls_become_links():
    """The template's own rule, with URLs no crawl would store: a non-http(s) URL is text."""
    def hit(rank, url):
        return Hit(rank=rank, url=url, title="t<i>", score=1.0, snippet="s", snippet_html="a &lt;b&gt; <mark>s</mark>",
                   title_html="", bm25=1.0, pagerank=None, date=None, host="h", all_words=None)
    res = Results("q", [hit(1, "javascript:alert(1)"), hit(2, "https://ok.test/"), hit(3, "data:text/html,x")],
                  total=3, matched=3, page=1, limit=10)
    html = make_env().get_template("search.html").render(
        q='"><script>', res=res, error=None, nav=[1], link=str, suggestion_link=None, crawl_name="c<")
    assert 'href="https://ok.test/"' in html
    assert 'href="javascript:' not in html and 'href="data:' not in html
    assert "javascript:alert(1)" in html and "t&lt;i&gt;" in html and "<i>" not in html
    assert 'value="&#34;&gt;&lt;script&gt;"' in html and "<script>" not in html
    assert "a &lt;b&gt; <mark>s</mark>" in html and "c&lt;" in html


def test_search_paginate_advanced_and_errors(demo, page):
    page.goto(demo.base + "/")
    page.fill("input[name=q]", "keel hull")
    page.press("input[name=q]", "Enter")
    page.wait_for_url("**/search?**")
    assert hit_count(page) == 10
    assert page.locator(".hit .snippet mark").count() > 0
    first = page.locator(".hit .title a").first
    assert first.get_attribute("href").startswith("http://")
    assert "result" in page.inner_text("#summary")
    shot(page, "search")
    urls1 = page.locator(".hit .url").all_inner_texts()
    assert len(set(urls1)) == 10
    page.click("#next")
    page.wait_for_url("**page=2**")
    assert 1 <= hit_count(page) <= 10
    assert page.locator("ol.hits").get_attribute("start") == "11"
    urls2 = page.locator(".hit .url").all_inner_texts()
    assert not set(urls2) & set(urls1)
    shot(page, "search_page2")

    for fields, op in ([{"xor_a": "keel", "xor_b": "hull"}, "XOR"],
                       [{"near_a": "keel", "near_b": "hull", "near_k": "5"}, "NEAR/5"]):
        page.goto(demo.base + "/advanced")
        for k, v in fields.items():
            page.fill(f"input[name={k}]", v)
        page.click("#advanced-submit")
        page.wait_for_url("**/search?**")
        assert op in page.input_value("input[name=q]")
        assert hit_count(page) > 0, op
        assert page.locator("#query-error").count() == 0
        shot(page, "advanced_" + op.split("/")[0].lower())

    # a page past the last goes to the last (it showed "page 999 of 3" and no results); a page
    # that is no number is an error (it was page 1 without a word)
    page.goto(demo.base + "/search?q=keel&page=999")
    last = page.inner_text("#summary")
    assert page.url.endswith("page=" + last.split(" of ")[1].split()[0]) and hit_count(page) > 0
    for bad in ("abc", "-1", "0"):
        resp = page.goto(demo.base + "/search?q=keel&page=" + bad)
        assert resp.status == 400 and "pages are numbered" in page.inner_text("#query-error")

    resp = page.goto(demo.base + "/search?q=" + "(keel%20OR%20hull")
    assert resp.status == 400
    err = page.inner_text("#query-error")
    assert "without a matching ')'" in err and "(keel OR hull" in err
    shot(page, "query_error")
    resp = page.goto(demo.base + "/search?q=" + "%3Cscript%3Ewindow.__pwned%3D1%3C%2Fscript%3E%20AND")
    assert resp.status == 400
    assert "<script>window.__pwned=1</script> AND" in page.inner_text("#query-error")
    assert page.locator("script").count() == 0
    assert page.evaluate("typeof window.__pwned") == "undefined"


def test_an_index_behind_its_crawl_is_said_on_the_search_page(demo, page, tmp_path):
    """A crawl killed during its last index update: the CLI said the index was behind, the web UI
    said nothing (0 results, no note). Here half the crawl is indexed."""
    import shutil

    from skitter.index.indexer import Indexer

    work = tmp_path / "behind"
    work.mkdir()
    shutil.copy(demo.directory / "crawl.db", work / "crawl.db")
    Indexer(work, chunk=50).update(max_pages=50)
    served = Served(work)
    try:
        page.goto(served.base + "/search?q=keel")
        assert "fetches behind the crawl" in page.inner_text("#index-lag")
    finally:
        served.stop()
    page.goto(demo.base + "/search?q=keel")
    assert page.locator("#index-lag").count() == 0   # an exact index: no note


INJECTED = "script, img, svg, iframe, [onerror], [onload], [onmouseover], b"


def test_crawled_markup_is_shown_not_run(hostile, page):
    dialogs = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    for q, n_min in (("zebrafish", 3), ("aquarium", 1), ("tank", 1)):
        page.goto(hostile.base + "/search?q=" + q)
        assert hit_count(page) >= n_min, page.content()
        assert page.locator(INJECTED).count() == 0, page.content()
        assert page.evaluate("typeof window.__pwned") == "undefined"
        hrefs = page.eval_on_selector_all("a[href]", "els => els.map(e => e.getAttribute('href'))")
        assert not [h for h in hrefs if h.strip().lower().startswith(("javascript:", "data:", "vbscript:"))]
        # every mark holds only text
        assert page.eval_on_selector_all("mark", "els => els.every(e => e.children.length === 0)")
    page.goto(hostile.base + "/search?q=zebrafish")
    titles = " | ".join(page.locator(".hit .title").all_inner_texts())
    assert T1 in titles  # the whole title, literally
    assert '"><img src=x onerror=window.__pwned=8> zebrafish' in titles
    snippets = " ".join(page.locator(".hit .snippet").all_inner_texts())
    assert "<script>window.__pwned=" in snippets
    page.wait_for_timeout(300)
    assert page.evaluate("typeof window.__pwned") == "undefined"
    assert not dialogs
    shot(page, "hostile")


def test_crawl_page_stats_and_plots(demo, page):
    page.goto(demo.base + "/crawl")
    # the crawl is over: the page says so and does not refresh itself (it did every 5 s)
    assert page.locator('meta[http-equiv="refresh"]').count() == 0
    assert "not running" in page.inner_text("#over")
    stats = page.inner_text("#stats")
    for key in ("URLs fetched", "pages", "statuses", "top hosts", "URLs seen", "URLs still queued",
                "near duplicates", "pages/s"):
        assert key in stats
    assert "_" not in "".join(page.eval_on_selector_all("#stats td:first-child", "els => els.map(e => e.textContent)"))
    imgs = page.locator("img.plot")
    assert imgs.count() == 4
    page.wait_for_function("() => [...document.images].every(i => i.complete && i.naturalWidth > 0)")
    srcs = page.eval_on_selector_all("img.plot", "els => els.map(e => e.getAttribute('src'))")
    assert sorted(srcs) == sorted(f"/plot/{n}.png" for n in ("pages", "status", "hosts", "queue"))
    shot(page, "crawl")
    resp = page.goto(demo.base + "/plot/nope.png")
    assert resp.status == 404


@pytest.fixture(scope="module")
def recrawled(tmp_path_factory):
    """A recrawl of 2 hours (fake time) of the changing demo web, served."""
    from skitter.demo.changing import ChangeConfig
    from skitter.demo.web import DemoWeb
    from skitter.recrawl.evaluate import run_fake_recrawl
    from skitter.testing import EPOCH

    change = ChangeConfig(speed=1.0, static_share=0.3, min_interval=60.0, max_interval=2 * 3600.0, new_per_hour=0.0)
    web = DemoWeb(DemoConfig(pages=60, hosts=2, changing=change), ["http://127.0.0.2:8000", "http://127.0.0.3:8000"],
                  start_epoch=EPOCH)
    out = tmp_path_factory.mktemp("webui-recrawl") / "crawl"
    # in a thread of its own: the browser's sync API runs an event loop in this one
    t = threading.Thread(target=run_fake_recrawl, args=(out, web),
                         kwargs={"hours": 2.0, "rate": 0.02, "importance": "pagerank", "warmup_hours": 0})
    t.start()
    t.join(timeout=300)
    assert not t.is_alive() and (out / "crawl.db").exists()
    served = Served(out)
    yield served
    served.stop()


def test_crawl_page_of_a_recrawl_shows_freshness_and_change_intervals(recrawled, page):
    """The incremental crawler's rows (estimated freshness, revisits, the change-interval
    histogram per site) and its two plots beside the four of every crawl, all of them drawn."""
    page.goto(recrawled.base + "/crawl")
    stats = page.inner_text("#stats")
    for key in ("recrawl: freshness", "recrawl: intervals on 127.0.0.2:8000", "never changed", " min, "):
        assert key in stats, stats
    srcs = page.eval_on_selector_all("img.plot", "els => els.map(e => e.getAttribute('src'))")
    assert sorted(srcs) == sorted(f"/plot/{n}.png" for n in ("pages", "status", "hosts", "queue", "freshness",
                                                             "intervals"))
    page.wait_for_function("() => [...document.images].every(i => i.complete && i.naturalWidth > 0)")
    shot(page, "crawl_recrawl")
