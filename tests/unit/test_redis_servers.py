"""The test harness itself: real servers that persist across a crash when asked, refuse a client
without the password, and a cluster whose slots cover all three nodes."""

from __future__ import annotations

import secrets

import pytest
import redis


def test_an_appendonly_server_keeps_its_data_across_kill_and_restart(redis_servers):
    server = redis_servers(appendonly=True)
    with server.admin() as client:
        client.set("k", "v")
    server.kill()            # SIGKILL: what was acknowledged is in the AOF already
    server.start()
    server.restart()         # SIGTERM, same port
    with server.admin() as client:
        assert client.get("k") == b"v"


def test_a_password_is_required_when_set(redis_servers):
    password = secrets.token_urlsafe(12)
    server = redis_servers(password=password)
    assert f":{password}@" in server.url
    with server.admin(password=None) as client, pytest.raises(redis.AuthenticationError):
        client.ping()
    with server.admin() as client:
        assert client.ping()


def test_the_cluster_spreads_keys_over_its_three_nodes(redis_cluster):
    nodes = redis_cluster.nodes
    with redis.RedisCluster(host="127.0.0.1", port=nodes[0].port) as client:
        for i in range(60):
            client.set(f"test_redis_servers:{i}", i)
    counts = []
    for node in nodes:
        with node.admin() as client:
            counts.append(len(client.keys("test_redis_servers:*")))
    assert sum(counts) == 60 and all(counts)
