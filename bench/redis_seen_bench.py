"""The shared URL-seen set's Redis memory per URL and speed (issue #21: at most 16 bytes per
seen URL at 10 M URLs), against the other ways of keeping 64-bit fingerprints in Redis.

Each layout gets a new redis-server (Debian's, the one in production; started as the tests do,
tests/redis_servers.py) and N random fingerprints; memory is ``INFO memory`` ``used_memory``
after minus before (what the allocator hands out, size-class slack included). The layouts:

- ``key per URL``: ``SET <prefix><8 bytes> ""``, one key per fingerprint;
- ``one set, 8-byte strings`` / ``one set, integers``: ``SADD`` into one key;
- ``intset buckets``: 2**16 keys, ``SADD`` of the 48-bit remainder (an intset while a bucket has
  at most ``set-max-intset-entries``, 512 by default, then a hash table);
- ``hash buckets``: 2**17 keys, ``HSET`` field = 6-byte remainder (a listpack while at most
  ``hash-max-listpack-entries``, 128);
- ``packed, SET``: skitter's buckets rewritten whole with SET by the script;
- ``packed, APPEND``: ``RedisSeenSet`` itself (src/skitter/distributed/seen.py).

Only the last is timed as the crawler uses it (asyncio client, batches of ``--batch``); the
others are loaded as fast as possible. A second timed run goes to the three-node cluster.

    .venv/bin/python bench/redis_seen_bench.py                  # 10 M URLs: a few minutes
    .venv/bin/python bench/redis_seen_bench.py --urls 1000000 --quick

Writes its section of docs/distributed.md (between the bench:redis-seen markers).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import redis
from redis.asyncio import Redis
from redis.asyncio.cluster import RedisCluster

import docsection

from skitter.distributed import seen as seen_module
from skitter.distributed.seen import RedisSeenSet

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
from redis_servers import RedisClusterNodes, RedisServer  # noqa: E402  (the tests' harness)

CHUNK = 200_000
REM = (1 << 48) - 1


def fingerprints(n: int, seed: int = 1) -> Iterator[list[int]]:
    """``n`` random unsigned 64-bit fingerprints in chunks (xxh3 output is as good as random)."""
    rng = np.random.default_rng(seed)
    for start in range(0, n, CHUNK):
        yield rng.integers(0, 2**64, size=min(CHUNK, n - start), dtype=np.uint64).tolist()


def grouped(chunk: list[int], bits: int) -> dict[int, list[int]]:
    by: dict[int, list[int]] = {}
    for fp in chunk:
        by.setdefault(fp >> (64 - bits), []).append(fp & REM)
    return by


# --- loaders for the layouts skitter does not use (memory only) ------------------------------

def load_keys(client: redis.Redis, chunk: list[int]) -> None:
    for i in range(0, len(chunk), 5000):
        client.mset({b"s" + fp.to_bytes(8, "big"): b"" for fp in chunk[i:i + 5000]})


def load_set_strings(client: redis.Redis, chunk: list[int]) -> None:
    for i in range(0, len(chunk), 10000):
        client.sadd("s", *(fp.to_bytes(8, "big") for fp in chunk[i:i + 10000]))


def load_set_ints(client: redis.Redis, chunk: list[int]) -> None:
    for i in range(0, len(chunk), 10000):
        client.sadd("s", *(fp - (1 << 63) for fp in chunk[i:i + 10000]))


def load_intset_buckets(client: redis.Redis, chunk: list[int]) -> None:
    with client.pipeline(transaction=False) as pipe:
        for bucket, rems in grouped(chunk, 16).items():
            pipe.sadd(b"s%x" % bucket, *rems)
        pipe.execute()


def load_hash_buckets(client: redis.Redis, chunk: list[int]) -> None:
    with client.pipeline(transaction=False) as pipe:
        for bucket, rems in grouped(chunk, 17).items():
            pipe.hset(b"s%x" % bucket, mapping={r.to_bytes(6, "big"): b"" for r in rems})
        pipe.execute()


PACKED_SET_SCRIPT = seen_module.ADD_SCRIPT.replace(
    "redis.call('APPEND', key, string.sub(bucket, before + 1))", "redis.call('SET', key, bucket)")
assert PACKED_SET_SCRIPT != seen_module.ADD_SCRIPT


def packed_set_loader(client: redis.Redis) -> Callable[[redis.Redis, list[int]], None]:
    """The same buckets, keys and script as RedisSeenSet, but each bucket rewritten with SET."""
    script = client.register_script(PACKED_SET_SCRIPT)
    keys_of = RedisSeenSet(client, "s").key          # the key names only: no I/O

    def load(client: redis.Redis, chunk: list[int]) -> None:
        for i in range(0, len(chunk), 10000):
            by = grouped(chunk[i:i + 10000], seen_module.BUCKET_BITS)
            rems = [b"".join(r.to_bytes(seen_module.WIDTH, "big") for r in v) for v in by.values()]
            script(keys=[keys_of(b) for b in by], args=[seen_module.WIDTH, *rems])
    return load


LAYOUTS: dict[str, Callable] = {
    "key per URL (SET of 8-byte keys)": lambda c: load_keys,
    "one set of 8-byte strings (SADD)": lambda c: load_set_strings,
    "one set of integers (SADD)": lambda c: load_set_ints,
    "intset buckets (2^16 keys, SADD of 48-bit remainders)": lambda c: load_intset_buckets,
    "hash buckets (2^17 keys, HSET of 6-byte remainders)": lambda c: load_hash_buckets,
    "packed buckets, rewritten with SET (2^16 keys)": packed_set_loader,
}


def used(client: redis.Redis) -> int:
    return client.info("memory")["used_memory"]


def measure_layout(index: int, name: str, n: int, workdir: Path) -> dict:
    with RedisServer(workdir / f"layout{index}") as server, server.admin() as client:
        load = LAYOUTS[name](client)
        before = used(client)
        t0 = time.perf_counter()
        for chunk in fingerprints(n):
            load(client, chunk)
        elapsed = time.perf_counter() - t0
        encodings = sorted({client.object("encoding", k).decode() for k in client.scan(count=50)[1][:20]})
        row = {"layout": name, "urls": n, "bytes_per_url": (used(client) - before) / n,
               "keys": client.dbsize(), "encodings": encodings, "load_s": elapsed}
    print(json.dumps(row), flush=True)
    return row


# --- the layout skitter uses ---------------------------------------------------------------------

async def timed_adds(client: Redis | RedisCluster, n: int, batch: int) -> dict:
    seen = RedisSeenSet(client, "bench")
    added, t0, cpu0 = 0, time.perf_counter(), time.process_time()
    for chunk in fingerprints(n):
        for i in range(0, len(chunk), batch):
            added += sum(await seen.add_many(chunk[i:i + batch]))
    elapsed, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    sample = next(fingerprints(100_000))                    # all present: the first chunk
    t1 = time.perf_counter()
    for i in range(0, len(sample), batch):
        assert all(await seen.contains_many(sample[i:i + batch]))
    contains_s = time.perf_counter() - t1
    again = sum(await seen.add_many(sample[:batch]))
    return {"urls": n, "added": added, "again_new": again, "adds_per_s": n / elapsed,
            "client_cpu_per_url_us": cpu / n * 1e6, "contains_per_s": len(sample) / contains_s}


def measure_seen_single(n: int, batch: int, workdir: Path) -> dict:
    server = RedisServer(workdir / "seen").start()
    try:
        with server.admin() as admin:
            before = used(admin)
            client = Redis(host="127.0.0.1", port=server.port)

            async def run() -> dict:
                try:
                    return await timed_adds(client, n, batch)
                finally:
                    await client.aclose()
            row = asyncio.run(run())
            script_us = admin.info("commandstats").get("cmdstat_evalsha", {}).get("usec", 0)
            row.update(layout="packed buckets, APPEND (RedisSeenSet)", keys=admin.dbsize(),
                       bytes_per_url=(used(admin) - before) / n,
                       server_us_per_url=script_us / (n + 100_000 + batch))
            admin.save()                       # an RDB snapshot, read back by the restart:
        server.restart()                       # every bucket at its exact size
        with server.admin() as admin:
            row["bytes_per_url_reloaded"] = (used(admin) - before) / n
    finally:
        server.kill()
    print(json.dumps(row), flush=True)
    return row


def measure_seen_cluster(n: int, batch: int, workdir: Path) -> dict:
    with RedisClusterNodes(workdir / "cluster") as cluster:
        client = RedisCluster(host="127.0.0.1", port=cluster.nodes[0].port)

        async def run() -> dict:
            try:
                return await timed_adds(client, n, batch)
            finally:
                await client.aclose()
        row = asyncio.run(run())
        keys = []
        for node in cluster.nodes:
            with node.admin() as admin:
                keys.append(admin.dbsize())
        row.update(layout="the same on a 3-node cluster", keys_per_node=keys)
    print(json.dumps(row), flush=True)
    return row


def section(rows: list[dict], mine: dict, cluster: dict, batch: int) -> str:
    n = mine["urls"]
    lines = ["<!-- bench:redis-seen:start -->", "## The shared URL-seen set", "",
             "`src/skitter/distributed/seen.py`, measured by `bench/redis_seen_bench.py` on Debian's "
             f"redis-server {redis_version()}: {n:,} random 64-bit fingerprints, memory as `used_memory` "
             "after minus before (size-class slack included).", "",
             "| layout | bytes per URL | keys | encoding |", "| --- | ---: | ---: | --- |"]
    for r in rows:
        lines.append(f"| {r['layout']} | {r['bytes_per_url']:.1f} | {r['keys']:,} | {', '.join(r['encodings'])} |")
    lines.append(f"| **packed buckets, APPEND** (`RedisSeenSet`) | **{mine['bytes_per_url']:.1f}** "
                 f"({mine['bytes_per_url_reloaded']:.1f} after a restart) | {mine['keys']:,} | string |")
    lines += ["", "The set is exact: the bucket (top 16 bits) is in the key, the remainder (low 48 bits) "
              "in the value, so only two URLs whose 64-bit fingerprints collide are confused (probability "
              f"about n²/2⁶⁵: {n * n / 2**65:.1e} at {n:,}), as in the local frontier; no false-positive "
              "filter is needed to stay under 16 bytes. APPEND (rather than rewriting a bucket with SET) "
              "keeps what is replicated and written to the AOF to the new remainders, at the price of "
              "its doubling allocation; a restarted server loads buckets at their exact size. The intset "
              "and listpack buckets would be as small only while every bucket stays under the server's "
              "encoding limits (512 and 128 entries: past about 27 M and 11 M URLs here, by the largest bucket), then grow several times.", "",
             f"**Speed** (one asyncio client, batches of {batch:,}, on the same 2 cores as the server): "
             f"{mine['adds_per_s']:,.0f} adds/s, {mine['contains_per_s']:,.0f} membership tests/s; "
             f"the client spends {mine['client_cpu_per_url_us']:.1f} µs of CPU a URL, the server "
             f"{mine['server_us_per_url']:.1f} µs in the script. On the three-node cluster "
             f"({cluster['urls']:,} URLs, one script call per slot, pipelined per node): "
             f"{cluster['adds_per_s']:,.0f} adds/s, {cluster['contains_per_s']:,.0f} tests/s; "
             f"keys per node {', '.join(f'{k:,}' for k in cluster['keys_per_node'])}.",
             "<!-- bench:redis-seen:end -->"]
    return "\n".join(lines)


def redis_version() -> str:
    import subprocess

    out = subprocess.run(["redis-server", "--version"], capture_output=True, text=True).stdout
    return out.split("v=")[1].split()[0] if "v=" in out else "?"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--urls", type=int, default=10_000_000)
    ap.add_argument("--cluster-urls", type=int, default=1_000_000)
    ap.add_argument("--batch", type=int, default=10_000)
    ap.add_argument("--quick", action="store_true", help="print the section, do not write docs/")
    ap.add_argument("--only-seen", action="store_true", help="skip the other layouts")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="redis-seen-bench-") as tmp:
        work = Path(tmp)
        mine = measure_seen_single(args.urls, args.batch, work)
        cluster = measure_seen_cluster(args.cluster_urls, args.batch, work)
        rows = [] if args.only_seen else [measure_layout(i, name, args.urls, work)
                                          for i, name in enumerate(LAYOUTS)]
    text = section(rows, mine, cluster, args.batch)
    out = ROOT / "bench" / "out"
    out.mkdir(parents=True, exist_ok=True)
    (out / "redis-seen.json").write_text(json.dumps({"layouts": rows, "seen": mine, "cluster": cluster}, indent=1))
    if not args.quick:
        docsection.write_section(ROOT / "docs" / "distributed.md", text)
    print(text)


if __name__ == "__main__":
    main()
