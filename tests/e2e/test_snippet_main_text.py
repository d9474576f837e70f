"""End-to-end: search snippets come from a page's content, not its menu (a hold-out tester's
documentation site: every snippet began "… cli api howto Monitoring garbage collection …", and a
filter-only query showed "Kestrel Docs Install Configure Operate …")."""

from __future__ import annotations

import json
import random
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
    def filler(seed: str) -> str:   # text of each page's own (not near-duplicates of each other)
        rng = random.Random(seed)
        words = ["alder", "basalt", "cobalt", "dune", "ember", "fjord", "garnet", "heron", "iris", "juniper",
                 "kelp", "lichen", "marl", "nacre", "ochre", "peat", "quartz", "rill", "sedge", "tarn"]
        return " ".join(rng.choice(words) for _ in range(200)) + "."

    (root / "index.html").write_text(page("Kestrel", "Welcome to the Kestrel documentation. " + filler("index")))
    (root / "monitoring-garbage-collection.html").write_text(page(
        "Monitoring", "The runtime starts a garbage collection cycle when the heap grows. " + filler("gc")))
    for name in ("install", "configure", "tuning-log-rotation", "api-reference"):
        (root / f"{name}.html").write_text(page(name.title(), f"How to {name} Kestrel. " + filler(name)))
    out = tmp_path / "c"
    with StaticSite(root) as site:
        res = skitter("crawl", f"http://127.0.0.1:{site.port}/", "-o", str(out), "--delay", "0", "--quiet")
        assert res.returncode == 0, res.stderr
    conn = sqlite3.connect(out / "crawl.db")
    starts = dict(conn.execute("SELECT url, main_start FROM pages").fetchall())
    conn.close()
    assert len(starts) == 6 and all(s and s > 0 for s in starts.values()), starts
    records = [json.loads(r) for r in skitter("export", str(out), "--format", "jsonl").stdout.splitlines()]
    assert not [r["url"] for r in records if r["near_duplicate_of"]]   # six pages of their own
    hits = [json.loads(h) for h in skitter("search", str(out), "garbage collection", "--json").stdout.splitlines()]
    top = next(h for h in hits if h["url"].endswith("monitoring-garbage-collection.html"))
    assert "runtime starts a **garbage** **collection** cycle" in top["snippet"], top["snippet"]
    # a query of filters only: the content's first words, not the menu's
    hits = [json.loads(h) for h in skitter("search", str(out), "title:install", "--json").stdout.splitlines()]
    assert hits and "Install Configure" not in hits[0]["snippet"] and "How to **install**" in hits[0]["snippet"], hits
