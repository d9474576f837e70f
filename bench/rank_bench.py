"""Link-analysis benchmark: skitter.rank's PageRank and HITS on a synthetic graph (default 1 M nodes,
10 M edges), and reading a crawl graph out of crawl.db (default 100 k nodes, 1 M links).

    .venv/bin/python bench/rank_bench.py [--nodes 1000000] [--edges 10000000] [--db-nodes 100000]
                                         [--db-edges 1000000] [--no-write]

Each measurement runs in its own child process (so its peak RSS is its own): wall time and peak
RSS (``ru_maxrss`` of the child) over the baseline of a child that only imported the modules. The
results go to docs/benchmarks.md between ``<!-- bench:rank:start -->`` and ``<!-- bench:rank:end -->``
(appended if absent; the other sections are left alone).

The graph: sources uniform over the first 80% of the nodes (the last 20% are dangling pages),
targets skewed (node ⌊n·u²⌋ for uniform u: a few pages get many in-links), seeded.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

from docsection import write_section

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "benchmarks.md"
START, END = "<!-- bench:rank:start -->", "<!-- bench:rank:end -->"


def synthetic(n: int, m: int, seed: int = 1):
    import numpy as np

    rng = np.random.default_rng(seed)
    src = rng.integers(0, max(1, int(n * 0.8)), size=m, dtype=np.int64)
    dst = (n * rng.random(m) ** 2).astype(np.int64)
    return src, dst


def _child(task: str, n: int, m: int, out) -> None:
    import numpy as np  # noqa: F401

    from skitter import rank

    result: dict = {}
    if task == "baseline":
        pass
    elif task in ("pagerank", "hits", "csr"):
        src, dst = synthetic(n, m)
        t0 = time.perf_counter()
        adj = rank.edges_to_csr(n, src, dst)
        result["csr_s"] = time.perf_counter() - t0
        result["edges"] = int(adj.nnz)
        del src, dst
        result["csr_mb"] = (adj.data.nbytes + adj.indices.nbytes + adj.indptr.nbytes) / 2 ** 20
        if task != "csr":
            import tracemalloc

            tracemalloc.start()
            t0 = time.perf_counter()
            if task == "pagerank":
                pr = rank.pagerank(adj)
                result["sum"] = float(pr.sum())
            else:
                h, a = rank.hits(adj)
                result["sum"] = float(h.sum() + a.sum())
            result["run_s"] = time.perf_counter() - t0
            result["work_mb"] = tracemalloc.get_traced_memory()[1] / 2 ** 20
            tracemalloc.stop()
    elif task == "db":
        from skitter.store.db import CrawlDB

        with tempfile.TemporaryDirectory() as tmp:
            db = CrawlDB(Path(tmp))
            src, dst = synthetic(n, m)
            t0 = time.perf_counter()
            db.begin()
            db.conn.executemany("INSERT INTO fetches (fp, fetch_order, url, status) VALUES (?, ?, ?, 200)",
                                ((i, i + 1, f"http://h{i % 97}.test/{i}") for i in range(n)))
            db.conn.executemany("INSERT INTO links (src, dst, dst_url, visibility, position, distance)"
                                " VALUES (?, ?, '', 1, 3, 1)", zip(src.tolist(), dst.tolist()))
            db.commit()
            result["fill_s"] = time.perf_counter() - t0
            del src, dst
            t0 = time.perf_counter()
            g = rank.load_graph(db)
            result["load_s"] = time.perf_counter() - t0
            result["edges"] = g.stats["edges"]
            db.close()
            del g
            t0 = time.perf_counter()
            info = rank.rank_crawl(Path(tmp))
            result["rank_crawl_s"] = time.perf_counter() - t0
            result["rank_only_s"] = info["rank_seconds"]
    result["maxrss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    out.send(result)


def measure(task: str, n: int, m: int) -> dict:
    ctx = mp.get_context("spawn")
    a, b = ctx.Pipe(duplex=False)
    t0 = time.perf_counter()
    p = ctx.Process(target=_child, args=(task, n, m, b))
    p.start()
    res = a.recv()
    p.join()
    res["wall_s"] = time.perf_counter() - t0
    return res


def _versions() -> str:
    import numpy
    import scipy

    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                                text=True).stdout.strip()
    except OSError:
        commit = "?"
    return (f"python {platform.python_version()}, numpy {numpy.__version__}, scipy {scipy.__version__}, "
            f"skitter git {commit or '?'}")


def _machine() -> str:
    cpu = "?"
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2 ** 30
    return f"{cpu}, {os.cpu_count()} cores, {mem:.1f} GiB RAM, Linux {platform.release()}"


def section(args, base, csr, pr, hits, db, seconds: float) -> str:
    mb = lambda r: r["maxrss_mb"] - base["maxrss_mb"]  # noqa: E731
    lines = [
        START,
        "## Link analysis: PageRank and HITS (`bench/rank_bench.py`)",
        "",
        f"Written by `bench/rank_bench.py` on {datetime.now():%Y-%m-%d %H:%M} — "
        f"`python bench/rank_bench.py {' '.join(sys.argv[1:])}`".rstrip() + f" — in {seconds:.0f} s.",
        f"**Machine**: {_machine()}. **Versions**: {_versions()}.",
        "",
        f"Synthetic graph: {args.nodes:,} nodes, {args.edges:,} edges drawn ({csr['edges']:,} after merging "
        "repeated pairs and dropping self-loops); sources uniform over 80% of the nodes (20% dangling), "
        "targets skewed (⌊n·u²⌋). Each row is its own process; memory is its peak RSS above a process "
        f"that only imported the modules ({base['maxrss_mb']:.0f} MB).",
        "",
        "| step | seconds | memory, MB | process peak RSS above baseline, MB |",
        "| --- | ---: | ---: | ---: |",
        f"| edge list → CSR (`edges_to_csr`) | {csr['csr_s']:.2f} | {csr['csr_mb']:.0f} (the matrix) | {mb(csr):.0f} |",
        f"| PageRank (`pagerank`: damping 0.85, L1 < 1e-10) | {pr['run_s']:.2f} | {pr['work_mb']:.0f} (working set) "
        f"| {mb(pr):.0f} |",
        f"| HITS (`hits`: L1 < 1e-10) | {hits['run_s']:.2f} | {hits['work_mb']:.0f} (working set) | {mb(hits):.0f} |",
        "",
        "Seconds: the step alone. Working set: the peak of what the step allocates (tracemalloc) on top of the "
        "CSR matrix it is given. Process peak: the whole child (synthetic edge list, CSR build, the step).",
        "",
        f"`skitter rank` on a crawl.db of {args.db_nodes:,} fetched pages and {args.db_edges:,} links "
        f"({db['edges']:,} graph edges): reading the graph (`load_graph`) {db['load_s']:.2f} s; all of "
        f"`rank_crawl` (read, PageRank, HITS, store three columns) {db['rank_crawl_s']:.2f} s, of which "
        f"PageRank + HITS {db['rank_only_s']:.2f} s; peak RSS above baseline {mb(db):.0f} MB. Reading the "
        "SQLite links table dominates (about linear in the links).",
        END,
    ]
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--nodes", type=int, default=1_000_000)
    ap.add_argument("--edges", type=int, default=10_000_000)
    ap.add_argument("--db-nodes", type=int, default=100_000)
    ap.add_argument("--db-edges", type=int, default=1_000_000)
    ap.add_argument("--no-write", action="store_true", help="print, do not update docs/benchmarks.md")
    args = ap.parse_args()
    t0 = time.perf_counter()
    base = measure("baseline", 0, 0)
    csr = measure("csr", args.nodes, args.edges)
    pr = measure("pagerank", args.nodes, args.edges)
    hits = measure("hits", args.nodes, args.edges)
    db = measure("db", args.db_nodes, args.db_edges)
    for name, r in (("baseline", base), ("csr", csr), ("pagerank", pr), ("hits", hits), ("db", db)):
        print(name, json.dumps(r), file=sys.stderr)
    text = section(args, base, csr, pr, hits, db, time.perf_counter() - t0)
    print(text)
    if not args.no_write:
        write_section(DOC, text)
        print(f"section written to {DOC}", file=sys.stderr)


if __name__ == "__main__":
    main()
