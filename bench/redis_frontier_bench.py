"""The Redis frontier's figures for docs/distributed.md ("The Redis frontier"):

1. memory: Redis bytes per queued URL (its record in the host's queue, its place in the seen set)
   and per seen URL once done, measured as ``used_memory`` after minus before, adding URLs through
   ``RedisFrontier.add`` in page-sized batches (the hand-off inboxes emptied first);
2. coordination cost (``--coordination-seeds FILE``, the seed URLs of a web already served, e.g. by
   ``bench/run.py --serve 900``): the same crawl, alternately local and as one worker on Redis,
   ``--coordination-runs`` times each; CPU a page of the skitter processes plus redis-server;
3. scaling: N = 1, 2, 4 worker processes (``skitter crawl --redis`` + ``skitter worker``) on a demo
   web whose server answers each request after ``--latency-ms``, each worker held to
   ``--concurrency`` connections (as separate machines would be), against a local crawl: pages/s,
   and the CPU a page of the skitter processes plus redis-server.

    .venv/bin/python bench/redis_frontier_bench.py [--urls 200000] [--pages 1600] [--hosts 32]
        [--latency-ms 100] [--workers 1,2,4] [--coordination-seeds FILE] [--write-docs]

Loops are bounded: the URL count, and every crawl by a timeout.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

import redis  # noqa: E402
import redis_servers  # noqa: E402
from docsection import write_section  # noqa: E402
from redis.asyncio import Redis  # noqa: E402

from skitter.distributed.frontier import RedisFrontier  # noqa: E402
from skitter.distributed.ring import Ring  # noqa: E402
from skitter.frontier.politeness import Politeness  # noqa: E402
from skitter.models import Candidate  # noqa: E402
from skitter.store.db import CrawlDB  # noqa: E402


async def _fill(url: str, n: int, hosts: int, tmp: Path) -> dict:
    client = Redis.from_url(url)
    admin = redis.Redis.from_url(url)
    (tmp / "bench-db").mkdir(exist_ok=True)
    db = CrawlDB(tmp / "bench-db")
    f = RedisFrontier(client, "bench", db, Politeness(), worker="me")
    f.ring = Ring(["someone-else"])      # every host is another worker's: nothing loads locally
    before = admin.info("memory")["used_memory"]
    batch = 50
    t0 = time.perf_counter()
    cpu0 = time.process_time()
    for start in range(0, n, batch):
        cands = [Candidate(url=f"http://host{i % hosts}.example.org/section/{i // 7}/page-{i}.html",
                           depth=3, parent=f"http://host{i % hosts}.example.org/section/{i // 7}/", priority=-3.0)
                 for i in range(start, min(n, start + batch))]
        await f.add(cands)
    elapsed = time.perf_counter() - t0
    cpu = time.process_time() - cpu0
    admin.delete(f.keys.inbox("someone-else"))
    queued = admin.info("memory")["used_memory"] - before
    # every URL done: the queues emptied, the seen set stays
    for h in range(hosts):
        admin.delete(f.keys.host(f"host{h}.example.org", "q"))
    seen = admin.info("memory")["used_memory"] - before
    await client.aclose()
    db.close()
    return {"urls": n, "queued_bytes": queued / n, "seen_bytes": seen / n, "adds_per_s": n / elapsed,
            "client_us": cpu / n * 1e6}


def _redis_cpu(admin: redis.Redis) -> float:
    info = admin.info("cpu")
    return info["used_cpu_user"] + info["used_cpu_sys"]


def _children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def _crawl(workers: int, args, redis_url: str | None, tmp: Path) -> dict:
    from skitter.demo.server import DemoServer
    from skitter.demo.web import DemoConfig

    common = ["--delay", "0", "--per-host", "1", "--concurrency", str(args.concurrency), "--adaptive-delay", "0",
              "--max-crawl-delay", "0", "--index-interval", "-1", "--quiet"]
    out = tmp / f"crawl-{workers}-{'redis' if redis_url else 'local'}"
    shutil.rmtree(out, ignore_errors=True)
    admin = redis.Redis.from_url(redis_url) if redis_url else None
    with DemoServer(DemoConfig(hosts=args.hosts, pages=args.pages, seed=3, crawl_delay=0),
                    latency_ms=args.latency_ms) as srv:
        cpu0, rcpu0 = _children_cpu(), (_redis_cpu(admin) if admin else 0.0)
        t0 = time.perf_counter()
        if redis_url is None:
            procs = [subprocess.Popen([sys.executable, "-m", "skitter", "crawl", *srv.web.seeds(), "-o", str(out / "w0"),
                                       *common])]
        else:
            cid = f"scale{workers}"
            procs = [subprocess.Popen([sys.executable, "-m", "skitter", "crawl", *srv.web.seeds(), "-o",
                                       str(out / "w0"), "--redis", redis_url, "--crawl-id", cid, *common])]
            procs += [subprocess.Popen([sys.executable, "-m", "skitter", "worker", "--redis", redis_url, "--crawl-id",
                                        cid, "-o", str(out / f"w{i}"), "-q"]) for i in range(1, workers)]
        for p in procs:
            p.wait(timeout=args.timeout)
        wall = time.perf_counter() - t0
        server_cpu = 0.0  # the web server is not counted: it is the same in every run
        cpu = _children_cpu() - cpu0
        rcpu = (_redis_cpu(admin) - rcpu0) if admin else 0.0
    fetched = 0
    for d in out.iterdir():
        import sqlite3

        with sqlite3.connect(d / "crawl.db") as conn:
            fetched += conn.execute("SELECT count(*) FROM fetches WHERE fetch_order IS NOT NULL").fetchone()[0]
    return {"workers": workers, "mode": "redis" if redis_url else "local", "fetched": fetched, "wall": wall,
            "pages_per_s": fetched / wall, "cpu_ms_per_page": (cpu + rcpu + server_cpu) / fetched * 1000,
            "redis_cpu_ms_per_page": rcpu / fetched * 1000,
            "rcs": [p.returncode for p in procs]}


def _coordination(args, redis_url: str, tmp: Path) -> list[dict]:
    """The same crawl of an already served web, local and as one worker on Redis, alternately
    (the user's defaults without the index: the index is the same work in both)."""
    seeds = Path(args.coordination_seeds).read_text().split()
    admin = redis.Redis.from_url(redis_url)
    common = ["--delay", "0", "--per-host", "4", "--concurrency", "32", "--max-pages", "1000000",
              "--index-interval", "-1", "--quiet"]
    runs = []
    for i in range(args.coordination_runs):
        for mode in ("local", "redis"):
            out = tmp / f"coord-{mode}-{i}"
            shutil.rmtree(out, ignore_errors=True)
            extra = ["--redis", redis_url, "--crawl-id", f"coord{i}"] if mode == "redis" else []
            cpu0, rcpu0 = _children_cpu(), _redis_cpu(admin)
            t0 = time.perf_counter()
            rc = subprocess.run([sys.executable, "-m", "skitter", "crawl", *seeds, "-o", str(out), *common, *extra],
                                timeout=args.timeout).returncode
            wall = time.perf_counter() - t0
            cpu, rcpu = _children_cpu() - cpu0, _redis_cpu(admin) - rcpu0
            import sqlite3

            with sqlite3.connect(out / "crawl.db") as conn:
                fetched = conn.execute("SELECT count(*) FROM fetches WHERE fetch_order IS NOT NULL").fetchone()[0]
            admin.flushdb()
            shutil.rmtree(out, ignore_errors=True)
            runs.append({"mode": mode, "rc": rc, "load": round(os.getloadavg()[0], 1), "fetched": fetched, "wall": wall,
                         "cpu_ms_per_page": (cpu + rcpu) / fetched * 1000, "redis_cpu_ms_per_page": rcpu / fetched * 1000})
            print(runs[-1], flush=True)
    return runs


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--urls", type=int, default=200_000)
    ap.add_argument("--hosts", type=int, default=32)
    ap.add_argument("--pages", type=int, default=1600)
    ap.add_argument("--latency-ms", type=float, default=100)
    ap.add_argument("--concurrency", type=int, default=8)
    ap.add_argument("--workers", default="1,2,4")
    ap.add_argument("--timeout", type=float, default=300)
    ap.add_argument("--coordination-seeds", metavar="FILE", help="seed URLs of a served web: measure the coordination cost")
    ap.add_argument("--coordination-runs", type=int, default=3)
    ap.add_argument("--only-coordination", action="store_true", help="skip the memory and scaling parts")
    ap.add_argument("--write-docs", action="store_true")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="skitter-redis-bench-"))
    server = redis_servers.RedisServer(tmp / "redis").start()
    try:
        version = redis.Redis.from_url(server.url).info("server")["redis_version"]
        coord = _coordination(args, server.url, tmp) if args.coordination_seeds else []
        if args.only_coordination:
            _write_coordination(coord, args, version)
            return
        mem = asyncio.run(_fill(server.url, args.urls, 1000, tmp))
        print(mem, flush=True)
        runs = [_crawl(1, args, None, tmp)]
        print(runs[-1], flush=True)
        for n in (int(x) for x in args.workers.split(",")):
            runs.append(_crawl(n, args, server.url, tmp))
            print(runs[-1], flush=True)
    finally:
        server.kill()
        shutil.rmtree(tmp, ignore_errors=True)
    if args.write_docs:
        _write_docs(mem, runs, args, version)
        _write_coordination(coord, args, version)


def _write_coordination(runs: list[dict], args, version: str) -> None:
    if not runs or not args.write_docs:
        return
    import statistics

    med = {m: statistics.median(r["cpu_ms_per_page"] for r in runs if r["mode"] == m) for m in ("local", "redis")}
    rmed = statistics.median(r["redis_cpu_ms_per_page"] for r in runs if r["mode"] == "redis")
    lines = ["## Coordination cost", "",
             f"Measured by `bench/redis_frontier_bench.py --coordination-seeds` on Debian's redis-server {version}: "
             f"the 32 seeds of `make bench`'s web ({runs[0]['fetched']:,} URLs, nginx on loopback), the user's defaults "
             "with `--delay 0 --per-host 4 --concurrency 32` and no index (`--index-interval -1`: the index is the "
             "same work in both), alternately a local crawl and one worker on Redis (`crawl --redis`), "
             f"{args.coordination_runs} runs each. CPU of the skitter processes (`wait4`) plus redis-server's "
             "(`INFO cpu`), a page. The 1-minute load average after each run is shown: when other jobs share "
             "the 2 cores, the alternation spreads their load over both modes.", "",
             "| run | crawl | pages | wall | CPU a page | of which redis-server | load |",
             "| ---: | --- | ---: | ---: | ---: | ---: | ---: |"]
    for i, r in enumerate(runs, 1):
        lines.append(f"| {i} | {r['mode']} | {r['fetched']:,} | {r['wall']:.1f} s | {r['cpu_ms_per_page']:.2f} ms "
                     f"| {r['redis_cpu_ms_per_page']:.2f} ms | {r.get('load', '')} |")
    lines += ["", f"Medians: local **{med['local']:.2f} ms**, one worker on Redis **{med['redis']:.2f} ms** "
              f"(redis-server {rmed:.2f} ms of it): **{(med['redis'] / med['local'] - 1) * 100:+.0f} %**."]
    _write(ROOT / "docs" / "distributed.md", "coordination", lines)


def _write_docs(mem: dict, runs: list[dict], args, version: str) -> None:
    lines = [
        "## The Redis frontier",
        "",
        f"`src/skitter/distributed/frontier.py`, measured by `bench/redis_frontier_bench.py` on Debian's "
        f"redis-server {version}, on this 2-core machine.",
        "",
        f"**Memory** ({mem['urls']:,} URLs of about 60 characters over 1,000 hosts, added through "
        "`RedisFrontier.add` in batches of 50, `used_memory` after minus before): "
        f"**{mem['queued_bytes']:.0f} bytes per queued URL** (its JSON record in its host's queue hash, "
        f"plus its place in the seen set), **{mem['seen_bytes']:.1f} bytes per seen URL** once done (the "
        "seen set alone; at 10 M URLs it is 10.9, below). "
        f"{mem['adds_per_s']:,.0f} URLs/s admitted by one client, {mem['client_us']:.1f} µs of its CPU a URL.",
        "",
        f"**Scaling** (a demo web of {args.hosts} hosts and {args.pages:,} pages whose server answers each "
        f"request after {args.latency_ms:g} ms; every worker held to --concurrency {args.concurrency} and "
        "--per-host 1, as separate machines would be; wall time from the first process started to the last "
        "exited, start-up included; CPU of the skitter processes plus redis-server, not the web server's):",
        "",
        "| crawl | workers | pages | wall | pages/s | CPU a page | of which redis-server |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in runs:
        lines.append(f"| {r['mode']} | {r['workers']} | {r['fetched']:,} | {r['wall']:.1f} s | {r['pages_per_s']:.0f} "
                     f"| {r['cpu_ms_per_page']:.2f} ms | {r['redis_cpu_ms_per_page']:.2f} ms |")
    _write(ROOT / "docs" / "distributed.md", "redis-frontier", lines)


def _write(doc: Path, name: str, lines: list[str]) -> None:
    write_section(doc, "\n".join([f"<!-- bench:{name}:start -->", *lines, f"<!-- bench:{name}:end -->"]))


if __name__ == "__main__":
    main()
