"""End-to-end: what a hold-out tester's standards sweep found, on a real server and a real crawl.

- X-Robots-Tag sent twice (``noarchive``, then ``nofollow``): both field lines count (RFC 9110
  5.3); only the first was read, and the page's links were followed.
- ``X-Robots-Tag: otherbot: noindex, nofollow`` is for another crawler (Google's X-Robots-Tag
  rules, as ``<meta name="otherbot">`` already was): it was applied to skitter.
- ``<meta http-equiv="refresh" content="0; url=...">`` navigates: its target was never fetched.
- A body in a compression skitter did not accept (``Content-Encoding: br``) was stored as a 200
  HTML page of compressed bytes, with no error: it is now a protocol error.
- A 302 without a Location was recorded as a plain page with no error.
- A body cut short by the server (fewer bytes than its Content-Length) was never fetched again, and
  the pages only it linked were lost: it is retried like a reset.
"""

from __future__ import annotations

import json
import os
import time

from aiohttp import web

from sites import ThreadedServer, skitter


def html(title: str, body: str, head: str = "") -> str:
    return f"<!doctype html><html><head><title>{title}</title>{head}</head><body>{body}</body></html>"


PAGES: dict[str, tuple[list[tuple[str, str]], str]] = {
    "/": ([], html("Home", '<a href="/xrt-multi">m</a> <a href="/xrt-other">o</a> <a href="/xrt-ours">s</a>'
                           ' <a href="/refresh">r</a> <a href="/br">b</a> <a href="/cut-once">c</a>'
                           ' <a href="/no-location">n</a>')),
    "/xrt-multi": ([("X-Robots-Tag", "noarchive"), ("X-Robots-Tag", "nofollow")],
                   html("Multi", '<p>quillwort</p><a href="/child-multi">c</a>')),
    "/xrt-other": ([("X-Robots-Tag", "otherbot: noindex, nofollow")],
                   html("Other", '<p>bladderwrack</p><a href="/child-other">c</a>')),
    "/xrt-ours": ([("X-Robots-Tag", "otherbot: none"), ("X-Robots-Tag", "skitter: noindex")],
                  html("Ours", '<p>sphagnum</p><a href="/child-ours">c</a>')),
    "/refresh": ([], html("Moved", "<p>this page has moved</p>",
                          '<meta http-equiv="refresh" content="0; URL=\'/refreshed\'">')),
    "/refreshed": ([], html("Refreshed", "<p>you arrived</p>")),
    "/cut-once": ([], html("Cut", "<p>" + "long text " * 300 + '</p><a href="/behind-cut">behind</a>')),
    "/behind-cut": ([], html("Behind", "<p>only the cut page links here</p>")),
    "/child-multi": ([], html("Child", "<p>child</p>")),
    "/child-other": ([], html("Child", "<p>child</p>")),
    "/child-ours": ([], html("Child", "<p>child</p>")),
}


class Site(ThreadedServer):
    what = "semantics site"

    async def respond(self, request: web.Request) -> web.StreamResponse:
        if request.path == "/robots.txt":
            resp = web.Response(text="User-agent: *\nAllow: /\n")
        elif request.path == "/no-location":
            resp = web.Response(status=302, text="moved, but where?")
        elif request.path == "/br":
            # bytes in a coding the request did not accept (Accept-Encoding: gzip, deflate)
            resp = web.Response(body=os.urandom(300), headers={"Content-Type": "text/html", "Content-Encoding": "br"})
        elif request.path == "/cut-once" and not any(h.path == "/cut-once" for h in self.log):
            # the first answer: its Content-Length, a tenth of the body, and the connection closed
            body = PAGES["/cut-once"][1].encode()
            resp = web.StreamResponse(headers={"Content-Type": "text/html", "Content-Length": str(len(body))})
            await resp.prepare(request)
            await resp.write(body[:len(body) // 10])
            assert request.transport is not None
            request.transport.close()
            return resp
        elif request.path in PAGES:
            headers, body = PAGES[request.path]
            resp = web.Response(text=body, content_type="text/html")
            for k, v in headers:
                resp.headers.add(k, v)
        else:
            resp = web.Response(status=404, text="not found")
        return resp


def test_header_directives_meta_refresh_and_an_unaccepted_coding(tmp_path) -> None:
    out = tmp_path / "c"
    with Site() as site:
        res = skitter("crawl", site.base + "/", "-o", str(out), "--delay", "0", "--quiet")
        assert res.returncode == 0, res.stderr
        asked = {h.path for h in site.log}
    records = {r["url"].split(str(site.port), 1)[1]: r
               for r in map(json.loads, skitter("export", str(out), "--format", "jsonl").stdout.splitlines())}
    # both X-Robots-Tag lines count: nofollow from the second
    assert records["/xrt-multi"]["nofollow"] is True and "/child-multi" not in asked
    # another crawler's directives are not ours; ours are, beside another's
    assert records["/xrt-other"]["noindex"] is False and records["/xrt-other"]["nofollow"] is False
    assert "/child-other" in asked
    assert records["/xrt-ours"]["noindex"] is True and records["/xrt-ours"]["nofollow"] is False
    assert "/child-ours" in asked
    # the meta refresh's target is fetched
    assert "/refreshed" in asked and records["/refreshed"]["status"] == 200
    # the cut body was fetched again, whole, and its link followed
    assert [h.path for h in site.log].count("/cut-once") == 2 and records["/cut-once"]["error"] is None
    assert "/behind-cut" in asked
    # a redirect that names no target is an error, not a page
    assert records["/no-location"]["status"] == 302
    assert records["/no-location"]["error"] == "redirect: HTTP 302 without a Location"
    # the brotli body is an error, not a page of compressed bytes
    assert records["/br"]["error"].startswith("protocol: content-encoding br"), records["/br"]
    # and archived as the server sent it, whole (the first fix cut the transfer: an empty record)
    from warcio.archiveiterator import ArchiveIterator

    found = 0
    for warc in sorted((out / "warc").glob("*.warc.gz")):
        with warc.open("rb") as f:
            for rec in ArchiveIterator(f):
                if rec.rec_type == "response" and rec.rec_headers.get_header("WARC-Target-URI").endswith("/br"):
                    assert len(rec.raw_stream.read()) == 300   # (not decoded: random bytes)
                    assert rec.rec_headers.get_header("WARC-Truncated") is None
                    found += 1
    assert found == 1
    # and search agrees: the other crawler's noindex did not hide the page, ours hid it
    hits = lambda q: [json.loads(h)["url"] for h in skitter("search", str(out), q, "--json").stdout.splitlines()]  # noqa: E731
    assert [u.rsplit("/", 1)[1] for u in hits("bladderwrack")] == ["xrt-other"]
    assert hits("sphagnum") == []


class CrossSite(ThreadedServer):
    """Host A (127.0.0.1) names in its robots.txt a sitemap on host B (127.0.0.2), which lists a page
    of A that nothing links to (sitemaps.org: "Sitemaps & Cross Submits")."""

    def __init__(self, host: str, pages: dict[str, tuple[str, str]]) -> None:
        super().__init__()
        self.host, self.pages = host, pages

    async def respond(self, request: web.Request) -> web.StreamResponse:
        ctype, body = self.pages.get(request.path, ("text/plain", ""))
        return web.Response(text=body, content_type=ctype, status=200 if request.path in self.pages else 404)


def test_a_sitemap_robots_txt_names_on_another_host_is_read(tmp_path) -> None:
    import signal
    import subprocess
    import sys

    c = CrossSite("127.0.0.3", {"/far.xml": ("application/xml", "<urlset/>")})
    b = CrossSite("127.0.0.2", {})
    a = CrossSite("127.0.0.1", {"/": ("text/html", html("Home", "<p>nothing linked</p>")),
                                "/from-cross": ("text/html", html("Listed", "<p>only in a sitemap</p>"))})
    with a, b, c:
        a.pages["/robots.txt"] = ("text/plain", f"User-agent: *\nAllow: /\nSitemap: {b.base}/cross.xml\n")
        # B is out of scope: the sitemaps its own robots.txt names are not read (host to host)
        b.pages["/robots.txt"] = ("text/plain", f"User-agent: *\nAllow: /\nSitemap: {c.base}/far.xml\n")
        b.pages["/cross.xml"] = ("application/xml", '<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/'
                                 f'schemas/sitemap/0.9"><url><loc>{a.base}/from-cross</loc></url></urlset>')
        proc = subprocess.Popen([sys.executable, "-m", "skitter", "crawl", a.base + "/", "-o", str(tmp_path / "c"),
                                 "--delay", "0", "--recrawl", "--rate", "5", "--quiet"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline and "/from-cross" not in {h.path for h in a.log}:
                time.sleep(0.2)
        finally:
            proc.send_signal(signal.SIGINT)
            proc.communicate(timeout=60)
        assert "/cross.xml" in {h.path for h in b.log}
        assert "/from-cross" in {h.path for h in a.log}
        assert c.log == []


class BrRobots(ThreadedServer):
    """robots.txt in a compression nobody asked for (Content-Encoding: br), with a 200 or a 404."""

    def __init__(self, status: int) -> None:
        super().__init__()
        self.status = status

    async def respond(self, request: web.Request) -> web.StreamResponse:
        if request.path == "/robots.txt":
            return web.Response(body=os.urandom(64), status=self.status,
                                headers={"Content-Type": "text/plain", "Content-Encoding": "br"})
        return web.Response(text=html("Page", "<p>a page</p>"), content_type="text/html")


def test_a_robots_txt_in_an_unasked_compression_is_no_rules(tmp_path) -> None:
    """Unreadable, but no server error: the host is crawled (as an unparseable robots.txt lets it
    be), not disallowed after three tries as an unreachable one is."""
    for status in (200, 404):
        with BrRobots(status) as site:
            out = tmp_path / str(status)
            res = skitter("crawl", site.base + "/", "-o", str(out), "--delay", "0", "--quiet")
            assert res.returncode == 0, res.stderr
            assert [h.path for h in site.log] == ["/robots.txt", "/"], status
