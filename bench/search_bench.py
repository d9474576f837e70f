"""Search benchmark: index build rate and query latency per operator, on a crawl of the demo web.

    .venv/bin/python bench/search_bench.py --pages 10000    # crawl a fresh demo web, then measure
    .venv/bin/python bench/search_bench.py --crawl DIR      # measure on an existing crawl
    .venv/bin/python bench/search_bench.py --pages 100000 --hosts 32

It writes its section of docs/benchmarks.md (between ``<!-- bench:search:start -->`` and
``<!-- bench:search:end -->``, through bench/docsection.py) unless --no-docs.

Measured: ``Indexer.rebuild()`` (read crawl.db, analyse, FTS5 insert, optimize) in pages/s and
the size of index.db; then, with one warm :class:`Searcher`, ``search(query, limit=10)`` (what
``skitter search`` does: match, rank, collapse, snippets of the 10 hits, did-you-mean) for
``--queries`` generated queries per operator, p50 and p95 in milliseconds. Query words are
drawn from the index's own vocabulary (ranks 20 to 2,000 by frequency: neither stop-word-like
nor hapaxes), phrases from adjacent words of stored pages.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, UTC
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import docsection  # noqa: E402
from skitter.index import analyze  # noqa: E402
from skitter.index.indexer import Indexer, index_path  # noqa: E402
from skitter.store.text import page_text  # noqa: E402

START = "<!-- bench:search:start -->"
END = "<!-- bench:search:end -->"

OPERATORS = ["word", "bare words", "AND", "OR", "NOT", "XOR", "NEAR/5", "phrase", "title:", "site:",
             "after:", "misspelt"]


def crawl_demo(directory: Path, pages: int, hosts: int, seed: int = 1) -> dict:
    """Serve a demo web of ``pages`` pages and crawl it with `skitter crawl` into ``directory``."""
    from skitter.demo.server import DemoServer
    from skitter.demo.web import DemoConfig

    t0 = time.perf_counter()
    from skitter.demo.qrels import write_demo_qrels

    with DemoServer(DemoConfig(hosts=hosts, pages=pages, seed=seed, crawl_delay=0)) as srv:
        cmd = [sys.executable, "-m", "skitter", "crawl", *srv.web.seeds(), "-o", str(directory), "--quiet",
               "--delay", "0", "--adaptive-delay", "0", "--max-crawl-delay", "0", "--per-host", "4",
               "--concurrency", "32", "--max-pages", str(pages * 2)]
        res = subprocess.run(cmd, capture_output=True, text=True)
        if res.returncode != 0:
            raise RuntimeError(f"crawl failed: {res.stderr[-2000:]}")
        write_demo_qrels(srv.web, directory / "queries.tsv", directory / "qrels.txt")
    return {"crawl_seconds": time.perf_counter() - t0}


def quality(directory: Path) -> dict | None:
    """`skitter eval` figures (means) when the crawl directory has demo queries and qrels."""
    from skitter.eval.files import read_qrels, read_queries
    from skitter.eval.search import evaluate
    from skitter.search.engine import Searcher

    q, r = directory / "queries.tsv", directory / "qrels.txt"
    if not (q.exists() and r.exists()):
        return None
    with Searcher(directory) as s:
        _, mean, _ = evaluate(s, read_queries(q), read_qrels(r))
        _, collapsed, _ = evaluate(s, read_queries(q), read_qrels(r), collapse=True)
    return {"mean": mean, "collapsed": collapsed}


def _queries(directory: Path, n: int, rng: random.Random) -> dict[str, list[str]]:
    idx = sqlite3.connect(f"file:{index_path(directory)}?mode=ro", uri=True)
    crawl = sqlite3.connect(f"file:{directory / 'crawl.db'}?mode=ro", uri=True)
    try:
        vocab = [w for (w,) in idx.execute(
            "SELECT word FROM words WHERE len >= 4 AND word GLOB '[a-z]*' ORDER BY n DESC LIMIT 2000 OFFSET 20")]
        hosts = [h for (h,) in idx.execute("SELECT DISTINCT host FROM docs")]
        days = sorted(d[:10] for (d,) in idx.execute("SELECT date FROM docs WHERE date IS NOT NULL"))
        texts = [page_text(t) for (t,) in crawl.execute("SELECT text FROM pages WHERE text IS NOT NULL ORDER BY random() LIMIT ?",
                                             (n * 2,))]
    finally:
        idx.close()
        crawl.close()
    if len(vocab) < 10:
        raise RuntimeError("the crawl has too small a vocabulary to benchmark")
    day = days[len(days) // 2] if days else "2000-01-01"
    out: dict[str, list[str]] = {op: [] for op in OPERATORS}
    for i in range(n):
        a, b = rng.sample(vocab, 2)
        out["word"].append(a)
        out["bare words"].append(f"{a} {b}")
        out["AND"].append(f"{a} AND {b}")
        out["OR"].append(f"{a} OR {b}")
        out["NOT"].append(f"{a} -{b}")
        out["XOR"].append(f"{a} XOR {b}")
        out["NEAR/5"].append(f"{a} NEAR/5 {b}")
        ws = analyze.words(texts[i % len(texts)]) if texts else []
        j = rng.randrange(max(1, len(ws) - 2))
        out["phrase"].append('"' + " ".join(ws[j:j + 2]) + '"' if len(ws) > 2 else f'"{a} {b}"')
        out["title:"].append(f"title:{a}")
        out["site:"].append(f"{a} site:{rng.choice(hosts)}")
        out["after:"].append(f"{a} after:{day}")
        typo = a
        while typo == a or typo in analyze.STOP_WORDS:   # swap two letters ("form" → "from" is no typo)
            k = rng.randrange(0, len(a) - 1)
            typo = a[:k] + a[k + 1] + a[k] + a[k + 2:] if a[k] != a[k + 1] else a[:k] + "q" + a[k + 1:]
        out["misspelt"].append(typo)
    return out


def _pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p * (len(xs) - 1))))]


def measure(directory: Path, *, queries: int = 40, seed: int = 1) -> dict:
    """Rebuild the index of ``directory`` and time queries; returns the figures."""
    from .engine import Searcher

    directory = Path(directory)
    conn = sqlite3.connect(f"file:{directory / 'crawl.db'}?mode=ro", uri=True)
    n_pages = conn.execute("SELECT count(*) FROM pages").fetchone()[0]
    text_bytes = sum(len(page_text(t) or "") for (t,) in conn.execute("SELECT text FROM pages"))
    conn.close()
    stats = Indexer(directory).rebuild()
    size = sum(p.stat().st_size for p in directory.glob("index.db*"))
    rng = random.Random(seed)
    qs = _queries(directory, queries, rng)
    latency = {}
    with Searcher(directory) as s:
        for op in OPERATORS:            # warm-up: caches, the did-you-mean vocabulary
            for q in qs[op][:3]:
                s.search(q, limit=10)
        for op in OPERATORS:
            times, totals = [], []
            for q in qs[op]:
                t0 = time.perf_counter()
                r = s.search(q, limit=10)
                times.append((time.perf_counter() - t0) * 1000)
                totals.append(r.total)
            latency[op] = {"p50": statistics.median(times), "p95": _pct(times, 0.95),
                           "results": statistics.mean(totals), "example": qs[op][0]}
    return {"pages": n_pages, "indexed": stats.indexed, "docs": stats.docs, "text_mb": text_bytes / 1e6,
            "build_seconds": stats.seconds, "pages_per_second": stats.rate, "index_mb": size / 1e6,
            "queries_per_operator": queries, "latency": latency, "quality": quality(directory)}


def render(fig: dict, command: str, minutes: float) -> str:
    now = datetime.now(UTC).strftime("%Y-%m-%d %H:%M")
    lines = [START,
             "## Search: index build rate and query latency (`bench/search_bench.py`)",
             "",
             f"Written by `bench/search_bench.py` on {now} UTC — `{command}` — in {minutes:.1f} min. "
             f"Machine: {os.cpu_count()} cores, Python {platform.python_version()}, SQLite "
             f"{sqlite3.sqlite_version}; other work may have shared the cores.",
             "",
             f"**Crawl**: the demo web, {fig['pages']:,} HTML pages stored ({fig['text_mb']:.1f} MB of text)"
             + (f", crawled in {fig['crawl_seconds']:.0f} s" if fig.get("crawl_seconds") else "") + ".",
             "",
             "| pages indexed | build s | pages/s | index.db MB |",
             "| ---: | ---: | ---: | ---: |",
             f"| {fig['indexed']:,} | {fig['build_seconds']:.1f} | **{fig['pages_per_second']:.0f}** | "
             f"{fig['index_mb']:.1f} |",
             "",
             f"Query latency: `Searcher.search(q, limit=10)` (match, rank, collapse, 10 snippets, "
             f"did-you-mean), warm, {fig['queries_per_operator']} generated queries per operator.",
             "",
             "| operator | example | p50 ms | p95 ms | mean results |",
             "| --- | --- | ---: | ---: | ---: |"]
    for op, v in fig["latency"].items():
        ex = v["example"].replace("|", "\\|")
        lines.append(f"| {op} | `{ex}` | {v['p50']:.1f} | {v['p95']:.1f} | {v['results']:.0f} |")
    qual = fig.get("quality")
    if qual:
        lines += ["", "Quality on the demo queries and judgments (`skitter eval`, λ = 0.2; "
                  "`skitter.demo.qrels`):", "",
                  "| ranking | precision | recall | P@10 | MAP | nDCG@10 |",
                  "| --- | ---: | ---: | ---: | ---: | ---: |"]
        for name, key in (("every matching page", "mean"), ("`--collapse`", "collapsed")):
            m = qual[key]
            lines.append(f"| {name} | {m['precision']:.3f} | {m['recall']:.3f} | {m['P@10']:.3f} | "
                         f"{m['AP']:.3f} | {m['nDCG@10']:.3f} |")
        lines += ["", "(`skitter eval` ranks at most 1,000 results per query, so where a demo topic has "
                  "more relevant pages than that (about 10,000 each at 100,000 pages) recall and MAP are "
                  "capped near 1,000 / relevant; the evaluation at a size where the cap does not bind is "
                  "in `tests/eval/test_search_eval.py` and docs/search.md.)"]
    lines += ["", END]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(prog="bench/search_bench.py", description=__doc__.split("\n")[0])
    ap.add_argument("--pages", type=int, default=10_000, help="pages of the demo web to crawl")
    ap.add_argument("--hosts", type=int, default=16, help="hosts of the demo web")
    ap.add_argument("--crawl", type=Path, default=None, help="measure this crawl directory instead")
    ap.add_argument("--queries", type=int, default=40, help="queries per operator")
    ap.add_argument("--docs", type=Path, default=Path(__file__).resolve().parents[1] / "docs" / "benchmarks.md")
    ap.add_argument("--no-docs", action="store_true", help="print only; leave docs/benchmarks.md alone")
    ap.add_argument("--keep", action="store_true", help="keep the crawl directory made for the run")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    tmp = None
    extra: dict = {}
    if args.crawl is not None:
        directory = args.crawl
    else:
        tmp = Path(tempfile.mkdtemp(prefix="skitter-search-bench-"))
        directory = tmp / "crawl"
        extra = crawl_demo(directory, args.pages, args.hosts)
    try:
        fig = measure(directory, queries=args.queries)
        fig.update(extra)
    finally:
        if tmp is not None and not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)
    command = "python bench/search_bench.py " + " ".join(argv if argv is not None else sys.argv[1:])
    section = render(fig, command.strip(), (time.perf_counter() - t0) / 60)
    print(json.dumps(fig, indent=1))
    if not args.no_docs:
        docsection.write_section(args.docs, section)
        print(f"wrote the search section of {args.docs}", file=sys.stderr)
    return fig


if __name__ == "__main__":
    main()
