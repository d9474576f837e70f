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
