"""End-to-end: crawl the demo web with the real `skitter crawl`, index it with `skitter index`,
query it with `skitter search` (every operator, checked against the brute-force reference), and
search while a crawl is still writing."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from skitter.demo.server import DemoServer
from skitter.demo.web import DemoConfig
from skitter.index import Indexer, update_index
from skitter.index.indexer import stored_columns
from skitter.search import Searcher
from search_reference import Reference

pytestmark = pytest.mark.slow

# `skitter` with the search commands registered (cli.py registers them; this also works before)
_MAIN = ("import sys\nfrom skitter.cli import cli, main\nfrom skitter.cli_search import COMMANDS\n"
         "for c in COMMANDS:\n    cli.commands.get(c.name) or cli.add_command(c)\nmain()\n")


def skitter(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", _MAIN, *args], capture_output=True, text=True, timeout=timeout)


def crawl_args(web, out: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "skitter", "crawl", *web.seeds(), "-o", str(out), "--delay", "0",
            "--adaptive-delay", "0", "--max-crawl-delay", "0", "--quiet", *extra]


@pytest.fixture(scope="module")
def crawl(tmp_path_factory):
    out = tmp_path_factory.mktemp("search") / "crawl"
    with DemoServer(DemoConfig(hosts=3, pages=300, seed=11, crawl_delay=0)) as srv:
        res = subprocess.run(crawl_args(srv.web, out), capture_output=True, text=True, timeout=120)
        assert res.returncode == 0, res.stderr
        web = srv.web
    res = skitter("index", str(out))
    assert res.returncode == 0, res.stderr
    assert "pages indexed" in res.stdout
    return out, web


@pytest.fixture(scope="module")
def ref(crawl):
    return Reference(crawl[0])


def search_json(directory: Path, query: str, *extra: str) -> list[dict]:
    res = skitter("search", str(directory), query, "--json", *extra)
    assert res.returncode == 0, res.stderr
    return [json.loads(line) for line in res.stdout.splitlines()]


QUERIES = [
    "keel hull", "keel AND hull", "keel OR telescope", "keel XOR hull", "keel -hull", "NOT keel",
    "keel NEAR/2 hull", 'keel NEAR "harbour tiller"', "title:keel", '"keel hull"', "(keel OR hull) NOT rudder",
    "keel XOR hull XOR rudder", "sailing", "pulsar nebula comet",
]


@pytest.mark.parametrize("query", QUERIES)
def test_cli_results_equal_the_reference(crawl, ref, query):
    directory, _ = crawl
    hits = search_json(directory, query, "--limit", "10000", "--no-collapse")
    urls = [h["url"] for h in hits]
    assert len(urls) == len(set(urls))
    assert set(urls) == ref.urls(query)
    for i, h in enumerate(hits, 1):
        assert h["rank"] == i
        assert {"rank", "url", "title", "score", "snippet", "snippet_html"} <= set(h)


def test_cli_filters_equal_the_reference(crawl, ref):
    directory, _ = crawl
    host = sorted({d.host for d in ref.docs.values()})[1]
    day = min(d.date for d in ref.docs.values())[:10]
    for q in [f"keel site:{host}", f"keel -site:{host}", f"site:{host}", f"keel after:{day}",
              f"keel before:{day}", "keel before:2999-12-31"]:
        urls = {h["url"] for h in search_json(directory, q, "--limit", "10000", "--no-collapse")}
        assert urls == ref.urls(q), q


def test_cli_output_and_paging(crawl):
    directory, _ = crawl
    res = skitter("search", str(directory), "keel", "hull", "--limit", "3")
    assert res.returncode == 0, res.stderr
    assert "results" in res.stdout and "1. " in res.stdout and "3. " in res.stdout and "4. " not in res.stdout
    assert "--page 2" in res.stdout
    one = search_json(directory, "keel hull", "--limit", "3", "--page", "2")
    assert [h["rank"] for h in one] == [4, 5, 6]
    assert any("**" in h["snippet"] for h in one)
    res = skitter("search", str(directory), "zzzqqqx")
    assert res.returncode == 0 and "no results" in res.stdout


def test_cli_a_query_may_start_with_a_minus(crawl, ref):
    """``-keel telescope`` is NOT keel AND telescope (docs/search.md), not an option click does not know; the
    command's own short options still work, before and after the query."""
    directory, _ = crawl
    want = ref.urls("telescope -keel")
    assert want
    for args in (["-keel telescope"], ["-keel", "telescope"], ["-n", "10000", "-keel telescope"], ["-keel telescope", "-n10000"]):
        res = skitter("search", str(directory), *args, "--json", "--no-collapse", "--limit", "10000")
        assert res.returncode == 0, (args, res.stderr)
        assert {json.loads(line)["url"] for line in res.stdout.splitlines()} == want, args
    assert len(search_json(directory, "keel", "-n2")) == 2


def test_cli_did_you_mean(crawl):
    directory, _ = crawl
    res = skitter("search", str(directory), "telscope", "--json")
    assert res.returncode == 0
    assert "did you mean: telescope" in res.stderr


@pytest.mark.parametrize("args, words", [
    (["search", "{dir}", "(keel OR hull"], "'(' without a matching ')'"),
    (["search", "{dir}", 'keel "hull'], "closing quote"),
    (["search", "{dir}", "keel AND"], "AND needs something on its right"),
    (["search", "{dir}", "the of"], "nothing to search for"),
    (["search", "{dir}/nope", "keel"], "is not a crawl directory"),
    (["search", "{bare}", "keel"], "has no search index"),
    (["index", "{dir}/nope"], "is not a crawl directory"),
    (["eval", "{dir}", "--queries", "{dir}/missing.tsv", "--qrels", "{dir}/missing.txt"], "cannot read"),
    (["eval", "{dir}", "--queries", "{tmp}/bad.tsv", "--qrels", "{tmp}/bad.qrels"],
     "bad query: query q7 of the queries file: '(' without a matching ')'"),
])
def test_cli_errors_are_short(crawl, tmp_path, args, words):
    directory, _ = crawl
    bare = tmp_path / "bare"
    bare.mkdir()
    (bare / "crawl.db").write_bytes((directory / "crawl.db").read_bytes())
    (tmp_path / "bad.tsv").write_text("q1\tkeel\nq7\tkeel AND (hull\n")
    (tmp_path / "bad.qrels").write_text("q1 0 http://x.test/ 1\nq7 0 http://x.test/ 1\n")
    res = skitter(*[a.format(dir=directory, bare=bare, tmp=tmp_path) for a in args])
    assert res.returncode == 2, res.stderr
    assert "Traceback" not in res.stderr
    assert res.stderr.startswith("skitter: error: ") and words in res.stderr
    if "query" in res.stderr.split("\n")[0] and "column" in res.stderr:
        lines = res.stderr.rstrip("\n").split("\n")
        assert len(lines) == 3 and lines[2].strip() == "^"


def test_cli_index_update(crawl):
    directory, _ = crawl
    res = skitter("index", str(directory), "--update")
    assert res.returncode == 0, res.stderr
    assert "0 pages indexed" in res.stdout


def test_rank_reorders_the_next_search(crawl, tmp_path):
    """`skitter rank` copies the new PageRank into the search index: the next search blends it
    in (a hold-out test found it had no effect until an `index --update`)."""
    import shutil

    directory = tmp_path / "crawl"
    shutil.copytree(crawl[0], directory)
    before = search_json(directory, "keel OR telescope", "--limit", "1000", "--no-collapse")
    assert before and all(h["pagerank"] is None for h in before)
    res = skitter("rank", str(directory), "--limit", "1")
    assert res.returncode == 0 and not res.stderr, res.stderr
    after = search_json(directory, "keel OR telescope", "--limit", "1000", "--no-collapse")
    assert {h["url"] for h in after} == {h["url"] for h in before}
    assert all(h["pagerank"] is not None and h["pagerank"] > 0 for h in after)
    assert [h["url"] for h in after] != [h["url"] for h in before]   # PageRank moved some of them


def test_search_while_crawling(tmp_path):
    """A crawl writes in a subprocess; meanwhile the index is updated and searched over and over:
    no errors, the crawl is not held up, the results only grow, and at the end the incremental
    index holds what a rebuild holds."""
    out = tmp_path / "crawl"
    with DemoServer(DemoConfig(hosts=3, pages=900, seed=5, crawl_delay=0), latency_ms=4) as srv:
        proc = subprocess.Popen(crawl_args(srv.web, out, "--per-host", "2", "--concurrency", "6"),
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        counts: list[int] = []
        updates = 0
        try:
            deadline = time.monotonic() + 100
            while proc.poll() is None and time.monotonic() < deadline:
                if not (out / "crawl.db").exists():
                    time.sleep(0.05)
                    continue
                try:
                    update_index(out)          # what the crawl loop calls (lazy anchors)
                except Exception as exc:  # the crawl may not have created its tables yet
                    if updates == 0 and "no such table" in str(exc):
                        time.sleep(0.1)
                        continue
                    raise
                updates += 1
                with Searcher(out) as s:
                    counts.append(s.search("keel OR telescope OR compost", limit=5).total)
                time.sleep(0.1)
            _, err = proc.communicate(timeout=120)
        finally:
            if proc.poll() is None:
                proc.kill()
        assert proc.returncode == 0, err
    assert updates >= 3, "the crawl ended before the index could be updated a few times"
    assert counts == sorted(counts) and counts[-1] > counts[0] >= 0
    Indexer(out).update()                  # the last update, when the crawl ends: exact anchors
    inc_cols = stored_columns(out)
    full = tmp_path / "full"
    full.mkdir()
    (full / "crawl.db").write_bytes((out / "crawl.db").read_bytes())
    Indexer(full).rebuild()
    assert stored_columns(full) == inc_cols
    with Searcher(out) as s, Searcher(full) as t:
        for q in ["keel hull", "NOT telescope", "compost NEAR/5 mulch"]:
            assert s.match_fps(q) == t.match_fps(q)


def test_a_just_finished_crawl_is_searchable_and_complete(tmp_path):
    """`skitter crawl` with the live index (the default): when it returns every page is indexed,
    anchor text included, as a rebuild indexes it (docs/search.md), and `skitter search` has
    nothing to note."""
    out = tmp_path / "crawl"
    with DemoServer(DemoConfig(hosts=3, pages=400, seed=4, crawl_delay=0)) as srv:
        res = subprocess.run(crawl_args(srv.web, out), capture_output=True, text=True, timeout=120)
        assert res.returncode == 0, res.stderr
    status = Indexer(out).status()
    assert status["exists"] and status["last_order"] == status["crawl_order"] and status["docs"] > 300
    assert status["anchors_pending"] is False
    res = skitter("search", str(out), "keel OR telescope OR compost", "--json")
    assert res.returncode == 0 and "note:" not in res.stderr, res.stderr
    assert [json.loads(line) for line in res.stdout.splitlines()]   # hits, one JSON line each
    full = tmp_path / "full"
    full.mkdir()
    (full / "crawl.db").write_bytes((out / "crawl.db").read_bytes())
    Indexer(full).rebuild()
    assert stored_columns(full) == stored_columns(out)
