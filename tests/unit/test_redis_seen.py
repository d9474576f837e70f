"""The shared URL-seen set on a real redis-server and on the real three-node cluster: exact
answers, one script call per batch (per slot on a cluster), each URL new exactly once when two
clients add overlapping batches at the same time, and what survives a crash."""

from __future__ import annotations

import asyncio
import random
import uuid

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from redis.asyncio import Redis
from redis.asyncio.cluster import RedisCluster

from skitter.distributed.seen import BUCKET_BITS, WIDTH, RedisSeenSet
from skitter.urls import fingerprint

U64 = (1 << 64) - 1


def plain_client(server) -> Redis:
    return Redis(host="127.0.0.1", port=server.port, password=server.password)


def cluster_client(cluster) -> RedisCluster:
    return RedisCluster(host="127.0.0.1", port=cluster.nodes[0].port)


@pytest.fixture(params=["single", "cluster"])
def make_client(request):
    """A factory of new asyncio clients to one Redis, or to the three-node cluster."""
    if request.param == "single":
        server = request.getfixturevalue("redis_server")
        return lambda: plain_client(server)
    cluster = request.getfixturevalue("redis_cluster")
    return lambda: cluster_client(cluster)


def prefix() -> str:
    return f"t{uuid.uuid4().hex[:8]}"     # the cluster is shared by the session's tests


def random_fps(n: int, seed: int) -> list[int]:
    rng = random.Random(seed)
    return [rng.getrandbits(64) - (1 << 63) for _ in range(n)]   # signed, as fingerprint() gives


def run(make_client, scenario):
    """Run ``scenario(seen_set)`` on a new client and prefix; the client is closed after."""
    async def main():
        client = make_client()
        try:
            return await scenario(RedisSeenSet(client, prefix()))
        finally:
            await client.aclose()
    return asyncio.run(main())


def test_new_once_then_seen(make_client):
    fps = random_fps(5000, 1)

    async def scenario(seen):
        first = await seen.add_many(fps)
        again = await seen.add_many(fps[::-1])
        present = await seen.contains_many(fps[:100] + random_fps(100, 2))
        return first, again, present
    first, again, present = run(make_client, scenario)
    assert all(first) and not any(again)
    assert present == [True] * 100 + [False] * 100


def test_a_repeat_in_one_batch_is_new_at_its_first_place_only(make_client):
    a, b = random_fps(2, 3)

    async def scenario(seen):
        return await seen.add_many([a, b, a, a, b]), await seen.add_many([])
    assert run(make_client, scenario) == ([True, True, False, False, False], [])


def test_signed_and_unsigned_forms_are_one_fingerprint(make_client):
    fp = fingerprint("http://example.org/")

    async def scenario(seen):
        return await seen.add_many([fp]), await seen.add_many([fp & U64])
    assert run(make_client, scenario) == ([True], [False])


def test_a_match_across_two_remainders_is_not_a_member(make_client):
    """Remainders are packed back to back: bytes 00..05 and 06..0b hold, at offset 3, the
    remainder 03..08, which was never added."""
    bucket = 0xABCD << (64 - BUCKET_BITS)
    a, b, straddling = (bucket | int.from_bytes(bytes(range(i, i + WIDTH)), "big") for i in (0, 6, 3))

    async def scenario(seen):
        await seen.add_many([a, b])
        return await seen.contains_many([a, b, straddling]), await seen.add_many([straddling])
    assert run(make_client, scenario) == ([True, True, False], [True])


@given(st.lists(st.lists(st.integers(0, 40), max_size=30), min_size=1, max_size=6))
@settings(max_examples=25, deadline=None)
def test_matches_a_python_set(redis_servers_module, batches):
    """41 fingerprints in three buckets, pairs of them with one remainder in two buckets,
    against a model set."""
    rems = [fp & ((1 << 48) - 1) for fp in random_fps(21, 4)]
    universe = [(i % 3) << 48 | rems[i // 2] for i in range(41)]

    async def scenario(seen):
        model: set[int] = set()
        for batch in batches:
            fps = [universe[i] for i in batch]
            expect = []
            for fp in fps:
                expect.append(fp not in model)
                model.add(fp)
            assert await seen.add_many(fps) == expect
        assert await seen.contains_many(universe) == [fp in model for fp in universe]
    run(redis_servers_module, scenario)


@pytest.fixture(scope="module")
def redis_servers_module(tmp_path_factory):
    """One server for the hypothesis test's examples (a new prefix each)."""
    import redis_servers

    if redis_servers.missing_reason():
        pytest.skip(redis_servers.missing_reason())
    with redis_servers.RedisServer(tmp_path_factory.mktemp("redis-seen")) as server:
        yield lambda: plain_client(server)


def evalsha_calls(nodes) -> int:
    total = 0
    for node in nodes:
        with node.admin() as admin:
            total += admin.info("commandstats").get("cmdstat_evalsha", {}).get("calls", 0)
    return total


def test_one_script_call_per_batch_on_a_single_redis(redis_server):
    fps = random_fps(20_000, 5)

    async def scenario(seen):
        await seen.add_many(fps[:10])        # loads the scripts: NOSCRIPT, SCRIPT LOAD, again
        await seen.contains_many(fps[:10])
        before = evalsha_calls([redis_server])
        assert all(await seen.add_many(fps[10:]))
        await seen.contains_many(fps)
        return evalsha_calls([redis_server]) - before
    assert run(lambda: plain_client(redis_server), scenario) == 2


def test_one_script_call_per_slot_on_a_cluster(redis_cluster):
    fps = random_fps(3000, 6)

    async def scenario(seen):
        await seen.add_many(fps[:10])
        before = evalsha_calls(redis_cluster.nodes)
        await seen.add_many(fps)
        slots = {seen.client.keyslot(seen.key((fp & U64) >> (64 - BUCKET_BITS))) for fp in fps}
        return evalsha_calls(redis_cluster.nodes) - before, len(slots)
    calls, slots = run(lambda: cluster_client(redis_cluster), scenario)
    assert calls == slots and slots > 200     # of the 256 tag groups


def test_buckets_are_packed_remainders_spread_over_every_node(redis_cluster):
    fps = random_fps(3000, 7)

    async def scenario(seen):
        await seen.add_many(fps)
        return seen.prefix
    name = run(lambda: cluster_client(redis_cluster), scenario)
    sizes, per_node = 0, []
    for node in redis_cluster.nodes:
        with node.admin() as admin:
            keys = admin.keys(f"{name}:seen:{{*}}*")
            per_node.append(len(keys))
            sizes += sum(admin.strlen(k) for k in keys)
    assert sizes == WIDTH * len(fps) and all(per_node)


def test_two_clients_adding_overlapping_batches_see_each_url_new_once(make_client):
    fps = random_fps(6000, 8)
    name = prefix()

    async def worker(order: list[int]) -> list[int]:
        client = make_client()
        seen = RedisSeenSet(client, name)
        got = []
        try:
            for start in range(0, len(order), 500):
                batch = order[start:start + 500]
                got += [fp for fp, new in zip(batch, await seen.add_many(batch)) if new]
                await asyncio.sleep(0)
        finally:
            await client.aclose()
        return got

    async def main():
        a, b = fps[:4000], fps[2000:]              # a third overlap...
        a = a + fps[4000:4500]                     # ...and some of b's in a's tail
        random.Random(9).shuffle(b)
        return await asyncio.gather(worker(a), worker(b))
    new_a, new_b = asyncio.run(main())
    assert sorted(new_a + new_b) == sorted(fps)    # every URL new once, in one client


def test_script_reload_after_the_server_forgets(redis_server):
    fps = random_fps(100, 10)

    async def scenario(seen):
        await seen.add_many(fps[:50])
        with redis_server.admin() as admin:
            admin.script_flush()
        return await seen.add_many(fps), await seen.contains_many(fps)
    new, present = run(lambda: plain_client(redis_server), scenario)
    assert new == [False] * 50 + [True] * 50 and all(present)


def test_an_appendonly_server_keeps_the_set_across_a_crash(redis_servers):
    server = redis_servers(appendonly=True)
    fps = random_fps(2000, 11)
    name = prefix()

    async def add():
        client = plain_client(server)
        try:
            return await RedisSeenSet(client, name).add_many(fps)
        finally:
            await client.aclose()
    assert all(asyncio.run(add()))
    server.kill()
    server.start()
    assert not any(asyncio.run(add()))


def test_a_prefix_with_braces_is_refused(redis_server):
    with pytest.raises(ValueError):
        RedisSeenSet(plain_client(redis_server), "crawl{1}")
