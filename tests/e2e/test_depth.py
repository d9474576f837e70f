"""--max-depth under dfs: a URL's depth is the one it was first found at, and dfs often finds a page
deep first. The crawl loop then asks skitter.depthrepair, when its frontier runs dry, for the URLs
within the depth by a shorter path through the stored links (docs/strategies.md): a dfs crawl
fetches what a bfs crawl of the same web fetches."""

from __future__ import annotations

import json
import re
import sqlite3
import subprocess
import sys

from skitter.demo.server import DemoServer
from skitter.demo.web import DemoConfig


def _crawl(srv: DemoServer, directory, *args: str) -> dict[str, dict]:
    res = subprocess.run([sys.executable, "-m", "skitter", "crawl", *srv.web.seeds(), "-o", str(directory),
                          "--delay", "0", "--quiet", "--index-interval", "-1", *args],
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    out = subprocess.run([sys.executable, "-m", "skitter", "export", str(directory), "--format", "jsonl"],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return {r["url"]: r for r in map(json.loads, out.stdout.splitlines())}


def test_dfs_fetches_what_bfs_does_within_max_depth(tmp_path):
    """On the demo web (600 pages, every one within depth 3), dfs without the walk missed 10 of the
    611 URLs bfs fetches at --max-depth 3. Now the two fetch the same URLs, every URL of the
    generator's truth among them, and the URLs the walk added have their shortest depth."""
    max_depth = 3
    with DemoServer(DemoConfig(hosts=3, pages=600, seed=7, crawl_delay=0)) as srv:
        truth = srv.web.reachable(max_depth=max_depth)
        bfs = _crawl(srv, tmp_path / "bfs", "--max-depth", str(max_depth))
        dfs = _crawl(srv, tmp_path / "dfs", "--max-depth", str(max_depth), "--strategy", "dfs")
    assert set(truth) <= set(bfs)
    assert set(dfs) == set(bfs)
    assert all(r["depth"] <= max_depth for r in dfs.values())
    log = (tmp_path / "dfs" / "crawl.log").read_text()
    walked = [int(n) for n in re.findall(r"depth: (\d+) URLs within --max-depth", log)]
    assert walked and all(n > 0 for n in walked)         # the walk put URLs in (the test's point)
    conn = sqlite3.connect(tmp_path / "dfs" / "crawl.db")
    depth = dict(conn.execute("SELECT url, depth FROM urls"))
    conn.close()
    # every URL's depth is at least its shortest one (the truth's, bfs's own)
    assert all(depth[u] >= truth[u] for u in truth)


def test_bfs_fetches_a_page_a_slow_host_puts_within_max_depth(tmp_path):
    """bfs finds every URL by a shortest path only one fetch at a time: with --delay 0 a fast
    host's chain reached x at depth 3 while the slow host's page that links to x from depth 0 was
    still on its way, and y, 2 hops from a seed through x, was cut at --max-depth 3 (a hold-out test
    lost 4 of 2,634 pages so). The depth walk now mends bfs crawls too: y is fetched, at depth 2."""
    from sites import StaticSite

    fast, slow = tmp_path / "fast", tmp_path / "slow"
    fast.mkdir()
    slow.mkdir()

    def page(root, name, *links):
        body = "".join(f"<a href='{u}'>{u}</a> " for u in links)
        (root / name).write_text(f"<html><title>{name}</title><body><p>{name}</p>{body}</body></html>")

    with StaticSite(fast) as f, StaticSite(slow, latency=1.5) as s:
        page(fast, "index.html", "a.html")
        page(fast, "a.html", "b.html")
        page(fast, "b.html", "x.html")
        page(fast, "x.html", "y.html")
        page(fast, "y.html", "z.html")
        page(fast, "z.html")
        page(slow, "index.html", f"{f.base}/x.html")
        res = subprocess.run([sys.executable, "-m", "skitter", "crawl", f"{s.base}/", f"{f.base}/", "-o",
                              str(tmp_path / "c"), "--max-depth", "3", "--delay", "0", "--quiet",
                              "--index-interval", "-1"], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    conn = sqlite3.connect(tmp_path / "c" / "crawl.db")
    depth = {u.rsplit("/", 1)[1]: d for u, d in conn.execute("SELECT url, depth FROM urls WHERE url LIKE ?",
                                                             (f"{f.base}/%",))}
    fetched = {u.rsplit("/", 1)[1] for (u,) in conn.execute("SELECT url FROM fetches WHERE status = 200")}
    conn.close()
    assert depth["x.html"] == 3, "the race this test is about did not happen: x was found from the slow seed"
    assert depth["y.html"] == 2 and "y.html" in fetched      # by the walk, at its shortest depth
    assert depth["z.html"] == 3 and "z.html" in fetched
    assert "depth: 1 URLs within --max-depth 3" in (tmp_path / "c" / "crawl.log").read_text()
