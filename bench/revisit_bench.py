"""Revisit throughput: `skitter recrawl` on a changing demo web where 90 % of the pages never
change, against the first crawl of the same web (issue #20, docs/recrawl.md).

    .venv/bin/python bench/revisit_bench.py [--pages 20000] [--hosts 16] [--for 300] [--rate 5000]
                                            [--unchanged 0.9] [--concurrency 32] [--per-host 4]
                                            [--timeout 1800] [--no-docs]

1. Serves the changing demo web (``python -m skitter.demo.server --changing``, its own process) on
   loopback: ``--unchanged`` of the pages never change, the others change every 5 to 60 s (so most
   of their revisits see a change), no noise, no new pages, no Crawl-delay; the odd hosts ignore conditional
   requests (``--ignore-conditional``), so an unchanged page there comes back whole with the same
   bytes, and the even hosts answer 304.
2. The first crawl: ``skitter crawl`` with ``make bench``'s settings (``--delay 0``, concurrency 32,
   4 per host, budget twice the web's size), measured from outside as ``bench/run.py`` does (wall
   time, CPU of the process tree, RSS sampled every 0.1 s).
3. The recrawl: ``skitter recrawl DIR --for T --rate R --policy uniform`` on the same directory (its
   stored settings), ``--rate`` far above what the machine can do, so the crawler, not the budget,
   is the limit; measured the same way. Revisits a second are counted from ``recrawl_visits``
   between its first and last revisit; CPU ms a revisit over the whole process (start-up, the
   collection's first plan and the index's final update included); RSS at each tenth of the run.

Prints a Markdown table and writes it between the ``bench:revisit`` markers of docs/recrawl.md
(unless ``--no-docs``). Loopback only; every run is bounded by ``--timeout`` (killed after it).
"""

from __future__ import annotations

import argparse
import datetime as _dt
import os
import shutil
import sqlite3
import sys
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
OUT = BENCH / "out" / "revisit"
DOC = ROOT / "docs" / "recrawl.md"
sys.path.insert(0, str(BENCH))
if (ROOT / "src").is_dir():
    sys.path.insert(1, str(ROOT / "src"))

import docsection  # noqa: E402
import psutil  # noqa: E402
from run import measure  # noqa: E402

from skitter.demo.changing import ChangeConfig  # noqa: E402
from skitter.demo.server import DemoServer  # noqa: E402
from skitter.demo.web import DemoConfig  # noqa: E402


def log(msg: str) -> None:
    print(f"[revisit {time.strftime('%H:%M:%S')}] {msg}", flush=True)


def skitter(*args: str) -> list[str]:
    exe = Path(sys.executable).parent / "skitter"
    return [str(exe), *args] if exe.exists() else [sys.executable, "-m", "skitter", *args]


def load() -> str:
    return " / ".join(f"{x:.2f}" for x in os.getloadavg())


def rss_profile(samples: list, wall: float) -> list[float]:
    """The process tree's RSS (MB) at each tenth of the run (the last sample before it)."""
    out = []
    for k in range(1, 11):
        t = wall * k / 10
        before = [rss for at, rss in samples if at <= t]
        out.append(round((before[-1] if before else 0) / 2**20, 1))
    return out


def visit_counts(crawl: Path, since: float) -> tuple[dict[str, int], float, float]:
    conn = sqlite3.connect(crawl / "crawl.db")
    try:
        kinds = dict(conn.execute("SELECT kind, count(*) FROM recrawl_visits WHERE kind != 'first' AND at >= ?"
                                  " GROUP BY kind", (since,)).fetchall())
        first, last = conn.execute("SELECT min(at), max(at) FROM recrawl_visits WHERE kind != 'first' AND at >= ?",
                                   (since,)).fetchone()
    finally:
        conn.close()
    return kinds, first or since, last or since


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pages", type=int, default=20000)
    ap.add_argument("--hosts", type=int, default=16)
    ap.add_argument("--for", dest="duration", type=float, default=300.0, help="seconds of recrawl")
    ap.add_argument("--rate", type=float, default=5000.0, help="the recrawl's budget, revisits a second")
    ap.add_argument("--unchanged", type=float, default=0.9, help="share of pages that never change")
    ap.add_argument("--concurrency", type=int, default=32)
    ap.add_argument("--per-host", type=int, default=4)
    ap.add_argument("--timeout", type=float, default=1800.0)
    ap.add_argument("--no-docs", action="store_true")
    args = ap.parse_args(argv)

    OUT.mkdir(parents=True, exist_ok=True)
    crawl = OUT / "crawl"
    shutil.rmtree(crawl, ignore_errors=True)
    change = ChangeConfig(speed=1.0, static_share=args.unchanged, min_interval=5.0, max_interval=60.0,
                          noise_share=0.0, link_share=0.0, new_per_hour=0.0)
    # no Crawl-delay host: the crawler's throughput, not one host's politeness, is measured
    config = DemoConfig(pages=args.pages, hosts=args.hosts, crawl_delay=0.0, changing=change)
    plain = tuple(range(1, args.hosts, 2))
    loads = {"before": load()}
    with DemoServer(config, ignore_conditional=plain, start_timeout=120.0) as srv:
        web = srv.web
        assert web is not None
        seeds = list(web.seeds())
        log(f"demo web: {args.pages} pages on {args.hosts} hosts, {srv.base_urls[0]} …")
        server = psutil.Process(srv.pid)

        def server_cpu() -> float:
            t = server.cpu_times()
            return t.user + t.system

        cpu0 = server_cpu()
        first = measure(skitter("crawl", *seeds, "-o", str(crawl), "--quiet", "--delay", "0",
                                "--concurrency", str(args.concurrency), "--per-host", str(args.per_host),
                                "--max-pages", str(2 * args.pages)), OUT / "first", args.timeout, None)
        loads["after the first crawl"] = load()
        cpu1 = server_cpu()
        conn = sqlite3.connect(crawl / "crawl.db")
        try:
            fetched = conn.execute("SELECT count(*) FROM fetches WHERE fetch_order IS NOT NULL").fetchone()[0]
        finally:
            conn.close()
        log(f"first crawl: {fetched} URLs in {first['wall_s']:.1f} s (rc {first['rc']})")
        started = time.time()
        again = measure(skitter("recrawl", str(crawl), "--for", f"{args.duration:.0f}s", "--rate", str(args.rate),
                                "--policy", "uniform", "--quiet"), OUT / "recrawl",
                        args.duration + args.timeout, None)
        loads["after the recrawl"] = load()
        cpu2 = server_cpu()
    kinds, t0, t1 = visit_counts(crawl, started)
    revisits = sum(kinds.values())
    log(f"recrawl: {revisits} revisits in {t1 - t0:.1f} s (rc {again['rc']}): {kinds}")
    unchanged = kinds.get("304", 0) + kinds.get("same", 0)
    rows = {
        "first": {"n": fetched, "rate": fetched / first["wall_s"], "cpu_ms": 1000 * first["cpu_s"] / max(fetched, 1),
                  "peak": first["peak_rss_mb"], "profile": rss_profile(first["rss_samples"], first["wall_s"]),
                  "procs": first["processes"], "server": (cpu1 - cpu0) / first["wall_s"]},
        "recrawl": {"n": revisits, "rate": revisits / max(t1 - t0, 1e-9),
                    "cpu_ms": 1000 * again["cpu_s"] / max(revisits, 1), "peak": again["peak_rss_mb"],
                    "profile": rss_profile(again["rss_samples"], again["wall_s"]),
                    "procs": again["processes"], "server": (cpu2 - cpu1) / again["wall_s"]},
    }
    prof = rows["recrawl"]["profile"]
    L = [f"Measured {_dt.date.today().isoformat()} by `bench/revisit_bench.py --pages {args.pages} --hosts {args.hosts}"
         f" --for {args.duration:.0f} --rate {args.rate:g}`: the changing demo web served by the demo server (aiohttp,"
         f" its own process) on loopback, {100 * args.unchanged:.0f} % of its pages never changing and the others"
         " every 5 to 60 s, no noise; half the hosts answer 304, the others ignore conditional requests (an unchanged"
         " page comes back whole, with the same bytes). The first crawl with `make bench`'s settings, then `skitter"
         f" recrawl --policy uniform` on the same directory with a budget far above what the machine does. Load"
         f" average (1/5/15 min) {loads['before']} before, {loads['after the first crawl']} after the first crawl,"
         f" {loads['after the recrawl']} after the recrawl: a shared 2-core machine.", "",
         "| run | requests | requests/s | CPU ms a request | processes | peak RSS MB | RSS at each tenth of the run (MB) |"
         " the server's CPU (cores) |",
         "| --- | ---: | ---: | ---: | ---: | ---: | --- | ---: |"]
    for name, label in (("first", "first crawl"), ("recrawl", "recrawl (revisits)")):
        r = rows[name]
        L.append(f"| {label} | {r['n']:,} | {r['rate']:.0f} | {r['cpu_ms']:.2f} | {r['procs']} | {r['peak']:.0f} |"
                 f" {' '.join(f'{x:.0f}' for x in r['profile'])} | {r['server']:.2f} |")
    L += ["", f"Revisits: {unchanged:,} of {revisits:,} unchanged ({100 * unchanged / max(revisits, 1):.1f} %:"
          f" {kinds.get('304', 0):,} answered 304, {kinds.get('same', 0):,} identical bodies), "
          f"{kinds.get('changed', 0):,} changed, {kinds.get('baseline', 0):,} baselines (the first revisit of a"
          " changed page the first crawl stored without its main-text checksum), "
          f"{sum(v for k, v in kinds.items() if k not in ('304', 'same', 'changed', 'baseline')):,} other."
          f" Revisit throughput {rows['recrawl']['rate'] / rows['first']['rate']:.2f}× the first crawl's pages/s;"
          f" RSS from the second to the ninth tenth of the recrawl: {prof[1]:.0f} → {prof[8]:.0f} MB (the last tenth"
          " includes the shutdown)."]
    table = "\n".join(L)
    print(table)
    if not args.no_docs:
        docsection.write_section(DOC, f"<!-- bench:revisit:start -->\n{table}\n<!-- bench:revisit:end -->")
        log(f"written to {DOC.relative_to(ROOT)}")
    return 0 if first["rc"] == 0 and again["rc"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
