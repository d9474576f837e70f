"""The Redis frontier's admission on a three-node Redis Cluster: client CPU and wall time of
``RedisFrontier.add`` for page-sized batches (50 links, half of them to URLs seen before, over 100
hosts), as quoted in docs/distributed.md ("Admission" in "How it works"). Run it on two checkouts to
compare two versions of the admission (the cluster is started by tests/redis_servers.py):

    .venv/bin/python bench/redis_cluster_admit_bench.py [--batches 300] [--runs 3] [--done]

``--done``: after each batch, every URL admitted is handed out and marked done (as a crawl does,
untimed but reported apart), so that admission runs against hosts with URLs done recently.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

import redis_servers  # noqa: E402

from skitter.distributed.frontier import RedisFrontier  # noqa: E402
from skitter.distributed.redis_url import connect  # noqa: E402
from skitter.frontier.politeness import Politeness  # noqa: E402
from skitter.models import Candidate, Outcome  # noqa: E402
from skitter.store.db import CrawlDB  # noqa: E402


def batches(n: int, size: int = 50, hosts: int = 100) -> list[list[Candidate]]:
    rnd = random.Random(1)
    out, made = [], 0
    for _ in range(n):
        batch = []
        for _ in range(size):
            if made and rnd.random() < 0.5:   # a link to a URL seen before
                i = rnd.randrange(made)
            else:
                i, made = made, made + 1
            batch.append(Candidate(f"http://h{i % hosts}.test/p{i}"))
        out.append(batch)
    return out


def server_cpu(nodes) -> float:   # noqa: ANN001 - the cluster's RedisServer nodes
    """CPU seconds the cluster's redis-servers have used (INFO cpu, summed over the nodes)."""
    total = 0.0
    for node in nodes:
        with node.admin() as admin:
            info = admin.info("cpu")
        total += float(info["used_cpu_user"]) + float(info["used_cpu_sys"])
    return total


async def run(url: str, crawl: str, work: list[list[Candidate]], tmp: Path, done: bool,
              nodes) -> dict[str, float]:   # noqa: ANN001
    """Admission's wall, client and server CPU time; the same for marking URLs done, and how many."""
    client = await connect(url)
    (tmp / crawl).mkdir()
    db = CrawlDB(tmp / crawl)
    try:
        # (a lease that never lapses: this bench renews none, having no membership task)
        f = RedisFrontier(client, crawl, db, Politeness(delay=0.0), worker="w", immediate=True, lease_ttl=3600.0)
        t = dict.fromkeys(("wall", "cpu", "server", "done_cpu", "done_server", "done"), 0.0)
        for batch in work:
            s0, w0, c0 = server_cpu(nodes), time.perf_counter(), time.process_time()
            await f.add(batch)
            t["wall"] += time.perf_counter() - w0
            t["cpu"] += time.process_time() - c0
            s1 = server_cpu(nodes)
            t["server"] += s1 - s0
            if done:
                c0 = time.process_time()
                for _ in range(10_000):
                    cand = f.local._pop_ready()
                    if cand is None:
                        break
                    await f.done(cand, Outcome(response_time=0.0))
                    t["done"] += 1
                t["done_cpu"] += time.process_time() - c0
                t["done_server"] += server_cpu(nodes) - s1
        return t
    finally:
        db.close()
        await client.aclose()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--batches", type=int, default=300)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--done", action="store_true", help="mark every URL admitted done after each batch")
    args = ap.parse_args()
    work = batches(args.batches)
    n = sum(map(len, work))
    with tempfile.TemporaryDirectory() as d, redis_servers.RedisClusterNodes(Path(d) / "cluster") as cluster:
        for r in range(args.runs):
            t = asyncio.run(run(cluster.url, f"bench{r}", work, Path(d), args.done, cluster.nodes))
            nd = max(t["done"], 1)
            print(f"{n:,} candidates in {len(work)} batches: {t['wall']:.2f} s wall, {t['cpu']:.2f} s client CPU"
                  f" ({1e6 * t['cpu'] / n:.0f} µs a candidate, redis-server {1e6 * t['server'] / n:.0f} µs)"
                  + (f"; {t['done']:,.0f} URLs done, {1e6 * t['done_cpu'] / nd:.0f} µs of client CPU each"
                     f" (redis-server {1e6 * t['done_server'] / nd:.0f} µs)" if args.done else ""))


if __name__ == "__main__":
    main()
