"""Mirrored hosts in `skitter stats`: a site served whole under a second host is reported as a
mirror of the first, whether its pages are exact copies (the plainest mirror: a hold-out run found
it reported as "mirrored hosts: none") or near copies (tests/unit/test_dedup.py)."""

from __future__ import annotations

import json

from sites import StaticSite, skitter


def test_an_exact_copy_of_a_site_is_a_mirror(tmp_path) -> None:
    site = tmp_path / "site"
    site.mkdir()
    pages = 8
    for i in range(pages):
        links = " ".join(f'<a href="p{j}.html">page {j}</a>' for j in range(pages) if j != i)
        words = " ".join(f"word{i}x{k}" for k in range(60))
        (site / f"p{i}.html").write_text(f"<html><head><title>Page {i}</title></head><body><main><p>{words}</p>"
                                         f"<p>{links}</p></main></body></html>")
    (site / "index.html").write_text('<html><body><a href="p0.html">start</a></body></html>')
    with StaticSite(site) as a, StaticSite(site) as b:
        out = tmp_path / "crawl"
        res = skitter("crawl", a.base + "/", b.base + "/", "-o", str(out), "--delay", "0", "--quiet",
                      "--allow-private", "--index-interval", "-1")
        assert res.returncode == 0, res.stderr
    s = json.loads(skitter("stats", str(out), "--json").stdout)
    assert s["duplicates"] >= pages
    hosts = {a.base.split("//")[1], b.base.split("//")[1]}
    assert len(s["mirrors"]) == 1
    mirror, other, share = s["mirrors"][0]
    assert {mirror, other} == hosts and share >= 0.8
    assert "mirrored hosts: none" not in skitter("stats", str(out)).stdout
