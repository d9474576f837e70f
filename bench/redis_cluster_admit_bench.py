"""The Redis frontier's admission on a three-node Redis Cluster: client CPU and wall time of
``RedisFrontier.add`` for page-sized batches (50 links, half of them to URLs seen before, over 100
hosts), as quoted in docs/distributed.md ("Admission" in "How it works"). Run it on two checkouts to
compare two versions of the admission (the cluster is started by tests/redis_servers.py):

    .venv/bin/python bench/redis_cluster_admit_bench.py [--batches 300] [--runs 3]
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
from skitter.models import Candidate  # noqa: E402
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


async def run(url: str, crawl: str, work: list[list[Candidate]], tmp: Path) -> tuple[float, float]:
    client = await connect(url)
    (tmp / crawl).mkdir()
    db = CrawlDB(tmp / crawl)
    try:
        f = RedisFrontier(client, crawl, db, Politeness(delay=0.0), worker="w", immediate=True)
        wall, cpu = time.perf_counter(), time.process_time()
        for batch in work:
            await f.add(batch)
        return time.perf_counter() - wall, time.process_time() - cpu
    finally:
        db.close()
        await client.aclose()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--batches", type=int, default=300)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    work = batches(args.batches)
    n = sum(map(len, work))
    with tempfile.TemporaryDirectory() as d, redis_servers.RedisClusterNodes(Path(d) / "cluster") as cluster:
        for r in range(args.runs):
            wall, cpu = asyncio.run(run(cluster.url, f"bench{r}", work, Path(d)))
            print(f"{n:,} candidates in {len(work)} batches: {wall:.2f} s wall, {cpu:.2f} s client CPU"
                  f" ({1e6 * cpu / n:.0f} µs a candidate)")


if __name__ == "__main__":
    main()
