"""The address guard: address classes, the allowed set, and the guarded resolver."""

from __future__ import annotations

import asyncio
import socket

import pytest
from aiohttp.abc import AbstractResolver

from skitter.netguard import (
    GuardedResolver,
    GuardRefused,
    address_class,
    allowed_classes,
    is_ip_literal,
    legacy_ipv4,
)


@pytest.mark.parametrize(
    "ip, cls",
    [
        ("127.0.0.1", "loopback"),
        ("127.255.1.2", "loopback"),
        ("::1", "loopback"),
        ("[::1]", "loopback"),
        ("10.1.2.3", "private"),
        ("172.16.0.1", "private"),
        ("172.31.255.255", "private"),
        ("192.168.1.1", "private"),
        ("100.64.0.1", "private"),        # CGNAT
        ("100.127.255.254", "private"),
        ("fc00::1", "private"),
        ("fd12:3456::1", "private"),
        ("169.254.169.254", "link-local"),  # cloud metadata
        ("fe80::1", "link-local"),
        ("fe80::1%eth0", "link-local"),
        ("0.0.0.0", "reserved"),
        ("0.1.2.3", "reserved"),
        ("::", "reserved"),
        ("224.0.0.1", "reserved"),          # multicast
        ("239.255.255.250", "reserved"),
        ("255.255.255.255", "reserved"),    # broadcast
        ("240.0.0.1", "reserved"),
        ("192.0.2.10", "reserved"),         # documentation
        ("198.51.100.7", "reserved"),
        ("203.0.113.99", "reserved"),
        ("2001:db8::1", "reserved"),
        ("ff02::1", "reserved"),
        ("8.8.8.8", "public"),
        ("93.184.216.34", "public"),
        ("172.32.0.1", "public"),           # just outside 172.16/12
        ("100.128.0.1", "public"),          # just outside 100.64/10
        ("2606:4700:4700::1111", "public"),
        ("2a00:1450:4001::200e", "public"),
    ],
)
def test_address_class(ip: str, cls: str) -> None:
    assert address_class(ip) == cls


@pytest.mark.parametrize(
    "ip, cls",
    [
        ("::ffff:127.0.0.1", "loopback"),
        ("::ffff:7f00:1", "loopback"),
        ("::ffff:10.0.0.1", "private"),
        ("::ffff:169.254.169.254", "link-local"),
        ("::ffff:8.8.8.8", "public"),
        ("64:ff9b::7f00:1", "loopback"),      # NAT64 of 127.0.0.1
        ("64:ff9b::808:808", "public"),
        ("2002:7f00:1::1", "loopback"),       # 6to4 of 127.0.0.1
        ("2002:c0a8:101::1", "private"),      # 6to4 of 192.168.1.1
    ],
)
def test_embedded_ipv4_is_unwrapped(ip: str, cls: str) -> None:
    assert address_class(ip) == cls


def test_address_class_rejects_non_ip() -> None:
    with pytest.raises(ValueError):
        address_class("example.com")


def test_ip_literal_and_legacy_forms() -> None:
    assert is_ip_literal("1.2.3.4") and is_ip_literal("[::1]") and is_ip_literal("::1")
    assert not is_ip_literal("example.com") and not is_ip_literal("127.1")
    assert legacy_ipv4("127.1") == "127.0.0.1"
    assert legacy_ipv4("2130706433") == "127.0.0.1"
    assert legacy_ipv4("0x7f.1") == "127.0.0.1"
    assert legacy_ipv4("example.com") is None
    assert legacy_ipv4("1e100.net") is None
    assert legacy_ipv4("1.cafe") is None


def test_allowed_classes_public_only_for_name_seeds() -> None:
    assert allowed_classes(["https://example.com/"], False) == {"public"}


def test_allowed_classes_from_ip_literal_seeds() -> None:
    got = allowed_classes(["http://127.0.0.1:8080/", "http://[fe80::1]/", "http://10.0.0.5/x"],
                          False)
    assert got == {"public", "loopback", "link-local", "private"}


def test_allowed_classes_from_resolved_seeds() -> None:
    seeds = ["http://demo.test:8080/", "http://Other.Test./", "http://unresolved.test/"]
    resolved = {"demo.test": "127.0.0.1", "other.test": ["192.168.0.2", "8.8.8.8"]}
    assert allowed_classes(seeds, False, resolved) == {"public", "loopback", "private"}


def test_allowed_classes_allow_private_and_never_reserved() -> None:
    assert allowed_classes([], True) == {"public", "private", "loopback", "link-local"}
    assert allowed_classes(["http://0.0.0.0/", "http://224.0.0.1/"], False) == {"public"}
    assert "reserved" not in allowed_classes(["http://0.0.0.0/"], True)


def test_allowed_classes_ignores_garbage_seeds() -> None:
    assert allowed_classes(["not a url", "http://[bad/", ""], False) == {"public"}


class FakeResolver(AbstractResolver):
    """Answers from a table, counts the queries."""

    def __init__(self, table: dict[str, list[str]]) -> None:
        self.table = table
        self.calls: list[str] = []

    async def resolve(self, host: str, port: int = 0, family: int = socket.AF_INET) -> list:
        self.calls.append(host)
        await asyncio.sleep(0)
        if host not in self.table:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return [{"hostname": host, "host": ip, "port": port,
                 "family": socket.AF_INET6 if ":" in ip else socket.AF_INET,
                 "proto": 0, "flags": 0} for ip in self.table[host]]

    async def close(self) -> None:
        pass


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def run(coro):  # noqa: ANN001, ANN201
    return asyncio.run(coro)


def test_resolver_filters_disallowed_addresses() -> None:
    inner = FakeResolver({"mixed.test": ["10.0.0.1", "8.8.8.8"], "inside.test": ["10.0.0.1"]})
    r = GuardedResolver({"public"}, inner=inner)

    async def go() -> None:
        got = await r.resolve("mixed.test", 80)
        assert [x["host"] for x in got] == ["8.8.8.8"]
        with pytest.raises(GuardRefused) as info:
            await r.resolve("inside.test", 80)
        assert isinstance(info.value, OSError)
        assert "10.0.0.1 (private)" in str(info.value)

    run(go())


@pytest.mark.parametrize(("name", "why"), [("a..b", "empty label"), ("x" * 64 + ".test", "longer than 63"),
                                           (("abcdefghi." * 26) + "test", "longer than 253")])
def test_a_name_dns_cannot_hold_is_a_dns_error_without_a_query(name: str, why: str) -> None:
    """The WHATWG parser takes such hosts; the system resolver's IDNA codec raised a UnicodeError
    on them, which the crawl recorded as "protocol: UnicodeError ..." (a hold-out check)."""
    r = GuardedResolver({"public"})   # the system resolver: it is never asked

    async def go() -> None:
        with pytest.raises(socket.gaierror, match=why):
            await r.resolve(name, 80)

    run(go())
    assert r.lookups == 0


def test_resolver_overrides_and_guard_on_overrides() -> None:
    inner = FakeResolver({})
    r = GuardedResolver({"public", "loopback"}, {"Demo.Test": "127.0.0.1", "v6.test": "[::1]"},
                        inner=inner)
    strict = GuardedResolver({"public"}, {"demo.test": "127.0.0.1"}, inner=inner)

    async def go() -> None:
        got = await r.resolve("demo.test.", 8080)
        assert got[0]["host"] == "127.0.0.1" and got[0]["port"] == 8080
        assert (await r.resolve("v6.test", 80))[0]["family"] == socket.AF_INET6
        with pytest.raises(GuardRefused):
            await strict.resolve("demo.test", 80)

    run(go())
    assert inner.calls == []  # overrides never reach the real resolver


def test_resolver_bad_override_fails_early() -> None:
    with pytest.raises(ValueError):
        GuardedResolver({"public"}, {"demo.test": "not-an-ip"})


def test_resolver_cache_ttl() -> None:
    inner = FakeResolver({"a.test": ["8.8.8.8"]})
    clock = Clock()
    r = GuardedResolver({"public"}, inner=inner, ttl=300, clock=clock)

    async def go() -> None:
        await r.resolve("a.test", 80)
        await r.resolve("a.test", 80)
        assert inner.calls == ["a.test"]
        clock.now += 299
        await r.resolve("A.TEST", 80)
        assert inner.calls == ["a.test"]
        clock.now += 2  # past the TTL
        await r.resolve("a.test", 80)
        assert inner.calls == ["a.test", "a.test"]

    run(go())


def test_resolver_negative_cache() -> None:
    inner = FakeResolver({})
    clock = Clock()
    r = GuardedResolver({"public"}, inner=inner, negative_ttl=30, clock=clock)

    async def go() -> None:
        for _ in range(3):
            with pytest.raises(socket.gaierror):
                await r.resolve("gone.test", 80)
        assert inner.calls == ["gone.test"]
        clock.now += 31
        with pytest.raises(socket.gaierror):
            await r.resolve("gone.test", 80)
        assert inner.calls == ["gone.test", "gone.test"]

    run(go())


def test_resolver_cache_is_bounded_lru() -> None:
    table = {f"h{i}.test": ["8.8.8.8"] for i in range(10)}
    inner = FakeResolver(table)
    r = GuardedResolver({"public"}, inner=inner, max_entries=3)

    async def go() -> None:
        for host in ("h0.test", "h1.test", "h2.test"):
            await r.resolve(host, 80)
        await r.resolve("h0.test", 80)        # h0 is now the most recent
        await r.resolve("h3.test", 80)        # evicts h1, the least recent
        assert len(r._cache) == 3
        inner.calls.clear()
        await r.resolve("h0.test", 80)
        await r.resolve("h1.test", 80)
        assert inner.calls == ["h1.test"]

    run(go())


def test_resolver_shares_concurrent_lookups() -> None:
    inner = FakeResolver({"a.test": ["8.8.8.8"]})
    r = GuardedResolver({"public"}, inner=inner)

    async def go() -> None:
        results = await asyncio.gather(*(r.resolve("a.test", 80) for _ in range(20)))
        assert all(x[0]["host"] == "8.8.8.8" for x in results)

    run(go())
    assert inner.calls == ["a.test"]


def test_resolver_checks_ip_literals() -> None:
    r = GuardedResolver({"public"}, inner=FakeResolver({}))
    with pytest.raises(GuardRefused):
        r.check_literal("127.0.0.1")
    with pytest.raises(GuardRefused):
        r.check_literal("::ffff:10.0.0.1")
    with pytest.raises(GuardRefused):
        r.check_literal("127.1")           # legacy numeric form
    with pytest.raises(GuardRefused):
        r.check_literal("2130706433")
    r.check_literal("8.8.8.8")
    r.check_literal("example.com")        # names are the resolver's business

    async def go() -> None:
        with pytest.raises(GuardRefused):
            await r.resolve("10.0.0.1", 80)
        assert (await r.resolve("8.8.8.8", 80))[0]["host"] == "8.8.8.8"

    run(go())
