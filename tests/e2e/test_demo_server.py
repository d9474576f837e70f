"""The demo web served over HTTP (skitter.demo.server): responses equal DemoWeb.respond, the access
log, latency, and no process left behind."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from urllib.parse import urljoin, urlsplit

import aiohttp
import pytest

from skitter.demo.server import DemoServer, read_access_log
from skitter.demo.web import DemoConfig

CFG = DemoConfig(hosts=8, pages=600, seed=3)
UA = "skitter-test/1.0"


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie still answers kill(0): look at its state
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except FileNotFoundError:
        return False


async def fetch_all(requests: list[tuple[str, str, dict]]) -> list[tuple[int, dict, bytes]]:
    out = []
    async with aiohttp.ClientSession(auto_decompress=False, headers={"User-Agent": UA, "Accept-Encoding": "identity"}) as s:
        for method, url, headers in requests:
            async with s.request(method, url, headers=headers, allow_redirects=False) as r:
                out.append((r.status, r.headers.copy(), await r.read()))  # case-insensitive
    return out


def test_serves_the_demo_web(tmp_path) -> None:
    log = tmp_path / "access.jsonl"
    with DemoServer(CFG, access_log=log) as srv:
        pid = srv.pid
        web = srv.web
        assert alive(pid)
        assert len(srv.base_urls) == 8 and len({u.rsplit(":", 1)[1] for u in srv.base_urls}) == 1
        assert srv.base_urls[0] == f"http://127.0.0.2:{srv.port}"
        assert srv.base_urls[7] == f"http://127.0.0.9:{srv.port}"
        pages = web.pages()
        kinds: dict[str, str] = {}
        for u in pages:
            kinds.setdefault(web.kind(u), u)
        b = srv.base_urls
        urls = [b[0] + "/", kinds["page"], kinds["duplicate"], kinds["binary"], kinds["cp1252"],
                kinds["sjis"], kinds["broken"], kinds["xrobots"], kinds["category"],
                b[0] + "/old/0.html", b[0] + "/chain/1.html", b[0] + "/away.html",
                b[1] + "/robots.txt", b[2] + "/robots.txt", b[3] + "/robots.txt",
                b[4] + "/calendar/2024/01/", b[5] + "/missing/0.html", b[6] + "/nothing",
                b[7] + "/a/1.html", b[7] + "/sitemap.xml"]
        assert len({u.split("/")[2] for u in urls}) == 8   # every host is asked something
        reqs = [("GET", u, {}) for u in urls]
        gz = kinds["gzip"]
        reqs += [("GET", gz, {"Accept-Encoding": "gzip, deflate"}), ("GET", gz, {}),
                 ("HEAD", kinds["page"], {})]
        t_start = time.time()
        results = asyncio.run(fetch_all(reqs))
        t_end = time.time()

        for (method, url, headers), (status, got_headers, body) in zip(reqs, results):
            p = urlsplit(url)
            exp = web.respond(f"http://{p.netloc}", p.path,
                              accept_gzip="gzip" in headers.get("Accept-Encoding", ""))
            assert status == exp.status, url
            for k, v in exp.headers:
                assert got_headers.get(k) == v, (url, k)
            if method == "HEAD":
                assert body == b"" and int(got_headers["Content-Length"]) == len(exp.body)
            else:
                assert body == exp.body, url
        status, headers, _ = results[urls.index(b[0] + "/old/0.html")]
        assert status == 301
        assert urljoin(b[0] + "/old/0.html", headers["Location"]) == \
            web.redirect_target(b[0] + "/old/0.html")
        assert results[urls.index(b[3] + "/robots.txt")][0] == 404
        assert results[len(urls)][1].get("Content-Encoding") == "gzip"
        assert results[len(urls) + 1][1].get("Content-Encoding") is None

        # conditional GET
        etag = results[1][1]["ETag"]
        again = asyncio.run(fetch_all([("GET", urls[1], {"If-None-Match": etag})]))
        assert again[0][0] == 304 and again[0][2] == b""

    assert not alive(pid)
    records = read_access_log(log)
    assert len(records) == len(reqs) + 1
    for (method, url, _), (status, _, _), rec in zip(reqs, results, records):
        assert set(rec) == {"t0", "t1", "host", "method", "path", "status", "ua"}
        assert rec["method"] == method
        assert f"http://{rec['host']}{rec['path']}" == url
        assert rec["status"] == status and rec["ua"] == UA
        assert t_start - 1 <= rec["t0"] <= rec["t1"] <= t_end + 1
    assert records[-1]["status"] == 304


def test_latency_and_parallel_hosts(tmp_path) -> None:
    log = tmp_path / "access.jsonl"
    with DemoServer(DemoConfig(hosts=2, pages=200), latency_ms=150, access_log=log) as srv:
        urls = [srv.base_urls[i % 2] + f"/a/{i}.html" for i in range(4)]

        async def go() -> list[int]:
            async with aiohttp.ClientSession() as s:
                async def one(u: str) -> int:
                    async with s.get(u) as r:
                        await r.read()
                        return r.status
                return await asyncio.gather(*(one(u) for u in urls))

        assert asyncio.run(go()) == [200] * 4
    records = read_access_log(log)
    assert len(records) == 4
    assert all(r["t1"] - r["t0"] >= 0.15 for r in records)
    # the sleep does not block the server: concurrent requests overlap
    assert max(r["t0"] for r in records) < min(r["t1"] for r in records)
    assert {r["host"].split(":")[0] for r in records} == {"127.0.0.2", "127.0.0.3"}


def test_no_process_left_behind_when_the_parent_dies() -> None:
    code = ("import os\n"
            "from skitter.demo.server import DemoServer\n"
            "from skitter.demo.web import DemoConfig\n"
            "s = DemoServer(DemoConfig(hosts=2, pages=200)).start()\n"
            "print(s.pid, flush=True)\n"
            "os._exit(0)\n")   # dies without stopping the server
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=30)
    assert out.returncode == 0, out.stderr
    pid = int(out.stdout.split()[0])
    deadline = time.monotonic() + 5
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(pid)


def test_command_line_prints_one_json_line() -> None:
    proc = subprocess.Popen([sys.executable, "-m", "skitter.demo.server", "--hosts", "2", "--pages", "200",
                             "--ip-base", "127.0.0.20"], stdout=subprocess.PIPE, text=True)
    try:
        info = json.loads(proc.stdout.readline())
        assert info["base_urls"] == [f"http://127.0.0.20:{info['port']}", f"http://127.0.0.21:{info['port']}"]
    finally:
        proc.terminate()
        assert proc.wait(5) == 0


def test_refuses_non_loopback_addresses() -> None:
    out = subprocess.run([sys.executable, "-m", "skitter.demo.server", "--ip-base", "10.0.0.1"],
                         capture_output=True, text=True, timeout=30)
    assert out.returncode != 0 and "loopback" in out.stderr
    with pytest.raises(RuntimeError):
        DemoServer(DemoConfig(hosts=2, pages=200), ip_base="192.168.0.1").start()
