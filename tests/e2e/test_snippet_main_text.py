"""End-to-end: search snippets come from a page's content, not its menu (a hold-out tester's
documentation site: every snippet began "… cli api howto Monitoring garbage collection …", and a
filter-only query showed "Kestrel Docs Install Configure Operate …")."""

from __future__ import annotations

import json
import sqlite3

from sites import StaticSite, skitter

NAV = ("<nav><ul>" + "".join(f'<li><a href="/{w.lower().replace(" ", "-")}.html">{w}</a></li>' for w in
       ("Install", "Configure", "Monitoring garbage collection", "Tuning log rotation", "API reference"))
       + "</ul></nav>")


def page(title: str, body: str) -> str:
    return (f"<!doctype html><html><head><title>{title}</title></head><body>{NAV}"
            f"<main><h1>{title}</h1><p>{body}</p></main><footer>Kestrel Docs, all rights reserved</footer></body></html>")


def test_snippets_skip_the_menu(tmp_path) -> None:
    root = tmp_path / "site"
    root.mkdir()
    filler = " ".join(f"plain sentence number {i} about other things." for i in range(30))
    (root / "index.html").write_text(page("Kestrel", "Welcome to the Kestrel documentation. " + filler))
    (root / "monitoring-garbage-collection.html").write_text(page(
        "Monitoring", "The runtime starts a garbage collection cycle when the heap grows. " + filler))
    for name in ("install", "configure", "tuning-log-rotation", "api-reference"):
        (root / f"{name}.html").write_text(page(name.title(), f"How to {name} Kestrel. " + filler))
    out = tmp_path / "c"
    with StaticSite(root) as site:
        res = skitter("crawl", f"http://127.0.0.1:{site.port}/", "-o", str(out), "--delay", "0", "--quiet")
        assert res.returncode == 0, res.stderr
    conn = sqlite3.connect(out / "crawl.db")
    starts = dict(conn.execute("SELECT url, main_start FROM pages").fetchall())
    conn.close()
    assert len(starts) == 6 and all(s and s > 0 for s in starts.values()), starts
    hits = [json.loads(h) for h in skitter("search", str(out), "garbage collection", "--json").stdout.splitlines()]
    top = next(h for h in hits if h["url"].endswith("monitoring-garbage-collection.html"))
    assert "runtime starts a **garbage** **collection** cycle" in top["snippet"], top["snippet"]
    # a query of filters only: the content's first words, not the menu's
    hits = [json.loads(h) for h in skitter("search", str(out), "title:install", "--json").stdout.splitlines()]
    assert hits and "Install Configure" not in hits[0]["snippet"] and "How to **install**" in hits[0]["snippet"], hits
