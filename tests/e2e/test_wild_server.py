"""The wild web served over HTTP: by WildServer (aiohttp, with what the pure model leaves to the
server: transient 503/429, latency, a missing Content-Type) and, written by write_static, by nginx
(bench/nginx.py). Both must answer what WildWeb.respond says."""

from __future__ import annotations

import http.client
import os
import sys
import tempfile
import time
from dataclasses import replace
from email.utils import parsedate_to_datetime
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from skitter.demo.wild import WildConfig, WildWeb
from skitter.demo.wild_server import WildServer, read_access_log

pytestmark = pytest.mark.slow

CONFIG = WildConfig(seed=6, hosts=6, pages=300, page_kb=(1, 8), transient_hosts=(1, 2), transient_share=0.2,
                    slow_hosts=(3,), latency=(0.15, 0.15), crawl_delay_hosts=0)
UA = "wild-test/1.0"


def fetch(url: str, host: str | None = None, headers: dict | None = None) -> tuple[int, dict, bytes]:
    """One GET on a fresh connection (to ``host``, an ip:port, when the URL names a host)."""
    p = urlsplit(url)
    conn = http.client.HTTPConnection(host or p.netloc, timeout=10)
    try:
        conn.request("GET", p.path + (f"?{p.query}" if p.query else ""),
                     headers={"User-Agent": UA, "Host": p.netloc, **(headers or {})})
        r = conn.getresponse()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
    finally:
        conn.close()


def same(web: WildWeb, url: str, got: tuple[int, dict, bytes], *, static: bool = False) -> bool:
    """Whether a response is the model's; ``static``: as nginx serves it, the Content-Type's
    parameters aside (nginx names a file's type by its extension) and redirects and errors being
    nginx's own pages."""
    p = urlsplit(url)
    exp = web.respond(f"http://{p.netloc}", p.path + (f"?{p.query}" if p.query else ""))
    status, headers, body = got
    want, have = exp.header("Content-Type"), headers.get("content-type")
    if static:
        want, have = (x and x.split(";")[0] for x in (want, have))
        if status != 200:
            body, have = exp.body, want
    return (status, body, headers.get("location"), have) == (exp.status, exp.body, exp.header("Location"), want)


def test_serves_the_model_with_transient_failures_and_latency(tmp_path) -> None:
    log = tmp_path / "access.jsonl"
    with WildServer(CONFIG, access_log=log, ip_base="127.0.13.1") as srv:
        web = srv.web
        assert srv.base_urls == [f"http://127.0.13.{g + 1}:{srv.port}" for g in range(CONFIG.hosts)]
        truth = web.reachable(obey_robots=False)
        urls = sorted(truth)
        failing = [u for u in urls if web.first_failure(u)]
        assert {web.first_failure(u)[0] for u in failing} == {503, 429}
        for url in urls:
            first = fetch(url)
            failure = web.first_failure(url)
            if failure:   # the first request fails, with Retry-After; the second gets the page
                status, seconds = failure
                assert first[0] == status
                retry = first[1]["retry-after"]
                if status == 503:
                    assert retry == "1"
                else:
                    assert 0 < parsedate_to_datetime(retry).timestamp() - time.time() <= seconds
                first = fetch(url)
            assert same(web, url, first), url
        untyped = next(u for u in urls if web.kind(u) == "untyped-html")
        assert "content-type" not in fetch(untyped)[1]
    records = read_access_log(log)
    assert len(records) == len(urls) + len(failing) + 1   # and the untyped page again
    assert {r["ua"] for r in records} == {UA} and all(r["path"].startswith("/") for r in records)
    slow = urlsplit(web.base_urls[3]).netloc
    waits = [r["t1"] - r["t0"] for r in records if r["host"] == slow]
    # asyncio.sleep runs on the monotonic clock and the log on time.time(): a few ms of slack; the
    # other hosts answer at once (their median, so a busy machine's one slow answer is no failure)
    assert waits and min(waits) >= 0.145
    fast = sorted(r["t1"] - r["t0"] for r in records if r["host"] != slow)
    assert fast[len(fast) // 2] < 0.1


def test_host_names_in_the_base_urls() -> None:
    names = [f"Site{g}.wild.test" for g in range(CONFIG.hosts)]
    config = replace(CONFIG, transient_hosts=0, slow_hosts=0)
    with WildServer(config, names=names, ip_base="127.0.13.1") as srv:
        assert srv.base_urls == [f"http://{name}:{srv.port}" for name in names]
        assert srv.resolve_args()[:2] == ["--resolve", "Site0.wild.test:127.0.13.1"]
        web = srv.web
        home = web.seeds()[0]
        assert home.startswith("http://site0.wild.test:")   # the model's URLs are canonical
        got = fetch(home, host=f"127.0.13.1:{srv.port}")
        assert same(web, home, got)


@pytest.mark.skipif(sys.platform != "linux", reason="loopback addresses beyond 127.0.0.1")
def test_static_export_served_by_nginx(tmp_path) -> None:
    bench = Path(__file__).resolve().parents[2] / "bench"
    sys.path.insert(0, str(bench))
    try:
        from nginx import Nginx, find_nginx, free_port, loopback_ips
    finally:
        sys.path.remove(str(bench))
    exe = find_nginx()
    if exe is None:
        pytest.skip("nginx is not installed")
    ips = loopback_ips(CONFIG.hosts, "127.0.14.1")
    port = free_port(ips, 0)
    web = WildWeb(CONFIG, [f"http://{ip}:{port}" for ip in ips])
    truth = web.reachable(obey_robots=False)
    # nginx's workers may run as another user (nobody): pytest's tmp_path is private to us
    with tempfile.TemporaryDirectory(prefix="skitter-wild-") as root:
        os.chmod(root, 0o755)
        web.write_static(Path(root) / "web")
        with Nginx(exe, Path(root) / "web", tmp_path / "nginx", ips, port):
            wrong = [u for u in truth if web.kind(u) != "no-location" and not same(web, u, fetch(u), static=True)]
            robots = [b for b in web.base_urls if fetch(b + "/robots.txt")[0] != web.respond(b, "/robots.txt").status]
    assert wrong == [] and robots == []
