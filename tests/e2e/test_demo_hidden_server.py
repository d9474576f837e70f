"""The hidden site served by the demo server (``--hidden``): the same bytes as the model, and a form
crawl over real HTTP on loopback that reaches its records without ever sending a POST, a login,
sign-up or comment form, or a request robots.txt disallows (checked in the server's access log)."""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.error
import urllib.request

from forms_sim import simulate
from skitter.demo.hidden import HiddenConfig
from skitter.demo.server import DemoServer, read_access_log
from skitter.demo.web import DemoConfig

UA = "skitter-test/1.0"
# a plain opener: no proxy from the environment, no redirects followed silently matter here
_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def http_get(url: str, method: str = "GET") -> tuple[int, str | None, bytes]:
    req = urllib.request.Request(url, method=method, headers={"User-Agent": UA})
    try:
        with _OPENER.open(req, timeout=10) as r:
            return r.status, r.headers.get("Content-Type"), r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.headers.get("Content-Type"), e.read()


def test_hidden_host_and_a_form_crawl_over_http(tmp_path) -> None:
    log = tmp_path / "access.jsonl"
    with DemoServer(DemoConfig(hosts=2, pages=200), hidden=HiddenConfig(records=1000),
                    access_log=log) as srv:
        site = srv.hidden_site
        assert site is not None and len(srv.base_urls) == 2
        assert srv.hidden_url == f"http://127.0.0.4:{srv.port}" == site.base_url
        for path in ("/", "/search", "/robots.txt", "/search?q=the&category=&lang=en&page=2",
                     "/record/3.html", "/search?q=x", "/nothing"):
            want = site.respond(path)
            assert http_get(srv.hidden_url + path) == (want.status, want.header("content-type"), want.body)
        assert http_get(srv.hidden_url + "/account/login", "POST")[0] == 405
        home = srv.web.respond(srv.base_urls[0], "/")   # the demo hosts are served as before
        assert http_get(srv.base_urls[0] + "/")[2] == home.body

        sim = simulate(site, get=http_get, budget=60)
        hidden_host = srv.hidden_url.split("//")[1]
    assert len(sim.records) >= 0.9 * 1000, sim.curve[-1]
    assert len(sim.curve) <= 60
    hits = [r for r in read_access_log(log) if r["host"] == hidden_host]
    crawl = hits[-len(sim.requested):]
    assert [srv.hidden_url + r["path"] for r in crawl] == sim.requested
    assert all(r["status"] == 200 for r in crawl)   # no 405 (POST), no 400, no 404
    for r in crawl:
        url = srv.hidden_url + r["path"]
        assert site.robots_allowed(url) and not site.never_submit(url), url
    advanced = srv.hidden_url + "/search/advanced"   # searchable, but robots.txt says no: not planned
    assert any(form.action == advanced and ok for form, ok, _ in sim.forms.values())
    assert [p.form.action for p in sim.planners.values()] == [srv.hidden_url + "/search"]


def test_command_line_flag() -> None:
    cmd = [sys.executable, "-m", "skitter.demo.server", "--hosts", "1", "--pages", "50",
           "--ip-base", "127.0.0.30"]
    for extra, hidden in (([], None), (["--hidden", '{"records": 50}'], "127.0.0.31")):
        proc = subprocess.Popen(cmd + extra, stdout=subprocess.PIPE, text=True)
        try:
            info = json.loads(proc.stdout.readline())
            assert info["base_urls"] == [f"http://127.0.0.30:{info['port']}"]
            assert info.get("hidden_url") == (hidden and f"http://{hidden}:{info['port']}")
            if hidden:
                assert http_get(info["hidden_url"] + "/record/49.html")[0] == 200
                assert http_get(info["hidden_url"] + "/record/50.html")[0] == 404
        finally:
            proc.terminate()
            assert proc.wait(5) == 0


def test_bad_hidden_config_is_a_usage_error() -> None:
    cmd = [sys.executable, "-m", "skitter.demo.server", "--hosts", "1", "--pages", "50", "--ip-base", "127.0.0.32"]
    for bad, says in (('{"bogus": 1}', "bogus"), ("{bad", "not JSON"), ("[1]", "not a JSON object"),
                      ('{"records": 0}', "records must be >= 1")):
        res = subprocess.run(cmd + ["--hidden", bad], capture_output=True, text=True, timeout=30)
        assert res.returncode == 2 and "Traceback" not in res.stderr
        last = res.stderr.splitlines()[-1]
        assert "error: --hidden: " in last and says in last
