"""The changing demo web served over loopback (``python -m skitter.demo.server --changing``):
conditional GETs, a page that changes over compressed time as the in-process ground truth says,
noise that keeps its ETag, and the sitemap index robots.txt names."""

from __future__ import annotations

import http.client
import json
import time
from pathlib import Path
from urllib.parse import urlsplit

from skitter.demo.server import DemoServer
from skitter.demo.web import DemoConfig, DemoWeb
from skitter.parse import parse_with_main_text
from skitter.sitemaps import parse_sitemap

CFG = DemoConfig(hosts=4, pages=400, seed=5)
SPEED = 120.0


def fetch(url: str, headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], bytes]:
    p = urlsplit(url)
    conn = http.client.HTTPConnection(p.hostname, p.port, timeout=10)
    try:
        conn.request("GET", p.path, headers=headers or {})
        r = conn.getresponse()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
    finally:
        conn.close()


def etags_between(web: DemoWeb, url: str, t0: float, t1: float) -> set[str]:
    """The ETags ``url`` can have had in [t0, t1] (the server's clock is read between)."""
    times = [t0] + [x + 1e-6 for x in web.change_times(url, t0, t1)]
    p = urlsplit(url)
    return {web.respond(f"http://{p.netloc}", p.path, now=t).header("ETag") for t in times}


def test_changing_server_conditional_gets_and_changes(tmp_path: Path) -> None:
    log = tmp_path / "changes.json"
    with DemoServer(CFG, changing=True, change_speed=SPEED, min_interval=30, change_log=log,
                    ignore_conditional=(3,)) as srv:
        assert "--changing" in srv.command()
        web = srv.web
        assert web is not None and web.changes is not None
        assert abs(srv.start_epoch - time.time()) < 30
        true_host = [u for u in web.pages() if web.last_modified_policy(u) == "true"]
        live = web.changes

        def key(u: str) -> str:
            return web._live_url(u).key

        fast = next(u for u in true_host if web.kind(u) == "page" and 1 < web.change_rate(u) < 5
                    and not live.noisy(key(u)))
        static = next(u for u in true_host if web.kind(u) == "page" and web.change_rate(u) == 0
                      and not live.noisy(key(u)))
        noisy = next(u for u in true_host if web.kind(u) == "page" and web.change_rate(u) == 0
                     and live.noisy(key(u)))

        # a page that never changes: 304 by ETag and by date, its Last-Modified from the ground truth
        status, h, body = fetch(static)
        assert status == 200 and body
        assert h["etag"] == web.respond(static.rsplit("/a/", 1)[0], urlsplit(static).path).header("ETag")
        assert fetch(static, {"If-None-Match": h["etag"]})[0] == 304
        assert fetch(static, {"If-Modified-Since": h["last-modified"]})[0] == 304

        # a host that ignores conditional requests (--ignore-conditional): the whole page again,
        # the same bytes, never a 304
        plain = next(u for u in web.pages() if u.startswith(srv.base_urls[3] + "/a/") and web.change_rate(u) == 0
                     and not live.noisy(key(u)))
        status, h, body = fetch(plain)
        again = fetch(plain, {"If-None-Match": h["etag"], "If-Modified-Since": "Fri, 01 Jan 2100 00:00:00 GMT"})
        assert status == 200 and again[0] == 200 and again[2] == body and again[1]["etag"] == h["etag"]

        # noise: other bytes every time, the same (weak) ETag, a 304 for it, the same main text
        a, b = fetch(noisy), fetch(noisy)
        assert a[2] != b[2] and a[1]["etag"] == b[1]["etag"] and a[1]["etag"].startswith("W/")
        assert parse_with_main_text(a[2], noisy)[1] == parse_with_main_text(b[2], noisy)[1]
        assert fetch(noisy, {"If-None-Match": a[1]["etag"]})[0] == 304

        # a fast page changes within seconds of wall-clock time (hours of its own), as predicted
        t0 = time.time()
        status, h, first = fetch(fast)
        assert status == 200 and h["etag"] in etags_between(web, fast, t0, time.time())
        changed = None
        deadline = time.monotonic() + 15
        while changed is None and time.monotonic() < deadline:
            t1 = time.time()
            status, h2, body = fetch(fast, {"If-None-Match": h["etag"]})
            t2 = time.time()
            if status == 200:
                changed = (h2, body, t1, t2)
            else:
                assert status == 304 and h2["etag"] == h["etag"]
                time.sleep(0.05)
        assert changed is not None, "the page did not change within 15 s"
        h2, body, t1, t2 = changed
        assert h2["etag"] != h["etag"] and h2["etag"] in etags_between(web, fast, t1, t2)
        assert parse_with_main_text(body, fast)[1] != parse_with_main_text(first, fast)[1]
        assert web.version(fast, t2) > web.version(fast, t0)

        # the sitemap index named by robots.txt, with its gzip child
        base = srv.base_urls[1]
        robots = fetch(base + "/robots.txt")[2].decode()
        index_url = next(line.split(": ", 1)[1] for line in robots.splitlines() if line.startswith("Sitemap:"))
        index = parse_sitemap(fetch(index_url)[2], index_url)
        assert index.kind == "sitemapindex" and len(index.sitemaps) == 2
        child = parse_sitemap(fetch(index.sitemaps[0].loc)[2], index.sitemaps[0].loc)
        assert child.compressed and child.error is None and len(child.entries) >= web.hosts[1].N

    # stopped, the server wrote the ground truth of its run (skitter eval-fresh --changes): the
    # in-process web's, from its start to when it stopped, the fast page's change seen above in it
    doc = json.loads(log.read_text())
    assert doc["from"] == srv.start_epoch and t2 < doc["to"] <= time.time()
    assert doc == json.loads(json.dumps(web.change_log_document(doc["from"], doc["to"])))
    assert doc["rates"][fast] == web.change_rate(fast)
    seen = sum(t0 < t <= t2 for t in doc["changes"][fast])
    assert seen == web.version(fast, t2) - web.version(fast, t0) > 0
