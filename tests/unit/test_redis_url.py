"""`--redis URL` -> a client: bad URLs, closed ports, wrong passwords and silent servers give one
clear line (never the password); a real server, a TLS server and the real cluster give clients
that work."""

from __future__ import annotations

import asyncio
import secrets
import socket

import pytest
from redis.asyncio import Redis
from redis.asyncio.cluster import RedisCluster

from skitter.distributed.redis_url import RedisTarget, connect, parse_redis_url
from skitter.errors import RedisError, RedisURLError, UsageError


def run(coro):
    return asyncio.run(coro)


async def roundtrip(url: str, key: str) -> bytes | None:
    client = await connect(url)
    try:
        await client.set(key, b"v")
        return await client.get(key)
    finally:
        await client.aclose()


# --- parsing ------------------------------------------------------------------------------------


@pytest.mark.parametrize("url, target", [
    ("redis://localhost", RedisTarget("localhost")),
    ("redis://127.0.0.1:7000/3", RedisTarget("127.0.0.1", 7000, 3)),
    ("rediss://:p%40ss%3Aw%2Frd@cache.example:6380", RedisTarget("cache.example", 6380, tls=True,
                                                                 password="p@ss:w/rd")),
    ("redis://alice:secret@[::1]:6379/0", RedisTarget("::1", username="alice", password="secret")),
    ("REDIS://h/", RedisTarget("h")),
])
def test_good_urls(url, target):
    assert parse_redis_url(url) == target


@pytest.mark.parametrize("url, words", [
    ("http://127.0.0.1:6379", "redis://"),
    ("127.0.0.1:6379", "redis://"),
    ("redis://", "no host"),
    ("redis://h:99999", "bad --redis URL"),
    ("redis://127.0.0.1:0", "port 0"),
    ("redis://h:port", "bad --redis URL"),
    ("redis://h/zero", "database number"),
    ("redis://h/0?ssl=true", "no ?query"),
])
def test_bad_urls_are_usage_errors(url, words):
    with pytest.raises(RedisURLError, match="--redis") as info:
        parse_redis_url(url)
    assert words in str(info.value)
    assert isinstance(info.value, UsageError) and isinstance(info.value, RedisError)
    with pytest.raises(RedisURLError):
        run(connect(url))


def test_the_password_never_shows():
    target = parse_redis_url("rediss://bob:hunter2@h:1/2")
    assert target.redacted == "rediss://bob:***@h:1/2"
    assert "hunter2" not in repr(target)


# --- connecting -----------------------------------------------------------------------------------


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]     # nothing listens once it is closed


def test_a_closed_port_is_one_clear_line():
    port = closed_port()
    with pytest.raises(RedisError, match=rf"cannot connect to Redis at redis://:\*\*\*@127.0.0.1:{port}/0") as info:
        run(connect(f"redis://:topsecret@127.0.0.1:{port}"))
    assert "\n" not in str(info.value) and "topsecret" not in str(info.value)


def test_a_server_that_never_answers_times_out():
    with socket.socket() as silent:      # accepts connections (the backlog), never replies
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        port = silent.getsockname()[1]
        with pytest.raises(RedisError, match="did not answer within 0.5 s"):
            run(connect(f"redis://127.0.0.1:{port}", timeout=0.5))


def test_wrong_or_missing_password(redis_servers):
    password = secrets.token_urlsafe(12)
    server = redis_servers(password=password)
    with pytest.raises(RedisError, match="refused the password") as info:
        run(connect(f"redis://:wrong-{password}@127.0.0.1:{server.port}"))
    assert password not in str(info.value)
    with pytest.raises(RedisError, match="wants a password"):
        run(connect(f"redis://127.0.0.1:{server.port}"))
    assert run(roundtrip(server.url, "k")) == b"v"


def test_a_database_number_is_honoured(redis_server):
    url = f"redis://127.0.0.1:{redis_server.port}/3"
    assert run(roundtrip(url, "in-db-3")) == b"v"
    with redis_server.admin(db=3) as db3, redis_server.admin() as db0:
        assert db3.get("in-db-3") == b"v" and db0.get("in-db-3") is None
    with pytest.raises(RedisError, match="DB index is out of range"):
        run(connect(f"redis://127.0.0.1:{redis_server.port}/999"))


def test_a_plain_server_gives_a_plain_client(redis_server):
    async def kind():
        client = await connect(redis_server.url)
        await client.aclose()
        return type(client)
    assert run(kind()) is Redis


def test_a_cluster_node_gives_a_cluster_client(redis_cluster):
    async def scenario():
        client = await connect(redis_cluster.url)
        try:
            assert isinstance(client, RedisCluster)
            for i in range(30):      # keys on every node: the client follows the slot map
                await client.set(f"test_redis_url:{i}", i)
            return [int(await client.get(f"test_redis_url:{i}")) for i in range(30)]
        finally:
            await client.aclose()
    assert run(scenario()) == list(range(30))
    with pytest.raises(RedisURLError, match="database 0 only"):
        run(connect(redis_cluster.url.replace("/0", "/1")))


def test_a_command_unanswered_times_out_whatever_redis_pys_default(redis_servers, redis_cluster, monkeypatch):
    """The clients' read timeout is skitter's (COMMAND_TIMEOUT, or SKITTER_REDIS_COMMAND_TIMEOUT),
    not redis-py's default, which moved from none (redis-py 5) to 5 s (8.1): a Redis that stopped
    answering (SIGSTOP) is a timeout, an outage the worker waits out, after that long."""
    import signal
    import time

    from redis.exceptions import TimeoutError as RedisTimeout

    from skitter.distributed.redis_url import COMMAND_TIMEOUT

    async def timeouts(url: str) -> list[float]:
        client = await connect(url)
        try:
            if isinstance(client, RedisCluster):
                return [node.connection_kwargs["socket_timeout"] for node in client.get_nodes()]
            return [client.connection_pool.connection_kwargs["socket_timeout"]]
        finally:
            await client.aclose()

    server = redis_servers()
    assert run(timeouts(server.url)) == [COMMAND_TIMEOUT] == [60.0]
    assert set(run(timeouts(redis_cluster.url))) == {COMMAND_TIMEOUT}
    monkeypatch.setenv("SKITTER_REDIS_COMMAND_TIMEOUT", "0.5")
    assert set(run(timeouts(redis_cluster.url))) == {0.5}

    async def stopped() -> float:
        client = await connect(server.url)
        try:
            server.proc.send_signal(signal.SIGSTOP)
            t0 = time.monotonic()
            with pytest.raises(RedisTimeout):
                await client.get("k")
            return time.monotonic() - t0
        finally:
            server.proc.send_signal(signal.SIGCONT)
            await client.aclose()

    assert 0.4 < run(stopped()) < 30   # (redis-py tries again, reconnecting: seconds, not the 60 s default)


def test_tls(redis_servers, tmp_path, monkeypatch):
    pytest.importorskip("trustme")
    from redis_servers import TLSFiles

    files = TLSFiles.throwaway(tmp_path)
    server = redis_servers(tls=files, password=secrets.token_urlsafe(8))
    assert server.url.startswith("rediss://")
    with pytest.raises(RedisError, match="certificate verify failed"):
        run(connect(server.url))               # a CA nobody trusts
    monkeypatch.setenv("SSL_CERT_FILE", str(files.ca))
    assert run(roundtrip(server.url, "over-tls")) == b"v"
    with pytest.raises(RedisError, match="cannot connect"):
        run(connect(server.url.replace("rediss://", "redis://"), timeout=1))   # plain to a TLS port


def test_an_error_redis_py_lets_out_of_a_torn_down_connection_is_a_lost_connection(redis_server):
    """A cluster node killed while a pipeline was being sent to it: redis-py raised
    "AttributeError: 'NoneType' object has no attribute 'writelines'" (its issue 4287's kind),
    which killed a hold-out test's worker as an internal error. It is a lost connection (Redis
    away); an AttributeError of skitter's own code is not."""
    from redis import exceptions as rex

    from skitter.distributed.redis_url import as_lost, leaked

    async def go():
        client = Redis.from_url(redis_server.url)
        try:
            await client.ping()
            conn = client.connection_pool.make_connection()
            await conn.connect()
            conn._writer = None                        # what a disconnect under the write leaves
            with pytest.raises(AttributeError) as info:
                await conn._send_packed_command([b"PING\r\n"])
            return info.value
        finally:
            await client.aclose()

    exc = asyncio.run(go())
    assert leaked(exc)
    lost = as_lost(exc)
    assert isinstance(lost, rex.ConnectionError) and "writelines" in str(lost)
    try:
        None.writelines  # type: ignore[attr-defined]   # noqa: B018 - an AttributeError of our own
    except AttributeError as ours:
        assert not leaked(ours) and as_lost(ours) is ours


def test_a_write_on_a_transport_torn_down_is_a_connection_error_under_uvloop(redis_server):
    """What killed the hold-out test's workers when a cluster node was killed: uvloop's
    "RuntimeError: unable to perform operation on <TCPTransport closed=True ...>; the handler is
    closed" out of a redis-py write (crawls run on uvloop). redis-py's connections now raise a
    ConnectionError there, which its own recovery and skitter's "Redis away" handle."""
    import uvloop
    from redis import exceptions as rex

    import skitter.distributed.redis_url  # noqa: F401 - the patch is applied on import

    async def go():
        client = Redis.from_url(redis_server.url)
        try:
            conn = client.connection_pool.make_connection()
            await conn.connect()
            conn._writer.transport.abort()             # the connection reset under the writer
            await asyncio.sleep(0)
            with pytest.raises(rex.ConnectionError, match="connection lost") as info:
                await conn.send_packed_command([b"PING\r\n"], check_health=False)
            assert isinstance(info.value.__cause__, RuntimeError)
            assert await client.ping()                 # the client goes on with a new connection
        finally:
            await client.aclose()

    uvloop.run(go())
