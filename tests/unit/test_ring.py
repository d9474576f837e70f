"""The consistent-hash ring: only the leaver's hosts move, a joiner only takes hosts, and every
process computes the same owners from the same member set."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
import xxhash
from hypothesis import given, settings
from hypothesis import strategies as st

from skitter.distributed.ring import Ring

names = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789-.:", min_size=1, max_size=12)
member_sets = st.sets(names, min_size=2, max_size=10)
host_keys = st.lists(st.text(min_size=1, max_size=40), min_size=1, max_size=200)
vnodes = st.sampled_from([1, 8, 64])

HOSTS = [f"www.site{i}.example" for i in range(2000)]


@given(member_sets, host_keys, vnodes, st.data())
@settings(max_examples=150, deadline=None)
def test_only_the_leavers_hosts_move(members, keys, v, data):
    leaver = data.draw(st.sampled_from(sorted(members)))
    before = Ring(members, vnodes=v)
    after = Ring(members - {leaver}, vnodes=v)
    for key in keys:
        if before.owner(key) != leaver:
            assert after.owner(key) == before.owner(key)
        else:
            assert after.owner(key) != leaver


@given(member_sets, host_keys, vnodes, names)
@settings(max_examples=150, deadline=None)
def test_a_joiner_only_takes_hosts(members, keys, v, joiner):
    before = Ring(members, vnodes=v)
    after = Ring(members | {joiner}, vnodes=v)
    for key in keys:
        assert after.owner(key) in (before.owner(key), joiner)


@given(st.lists(names, min_size=1, max_size=8, unique=True), st.randoms(), host_keys)
@settings(max_examples=100, deadline=None)
def test_the_owner_depends_on_the_member_set_alone(members, rnd, keys):
    shuffled = list(members)
    rnd.shuffle(shuffled)
    built = Ring(members, vnodes=16)
    grown = Ring(vnodes=16)
    for m in shuffled + ["extra"]:
        grown.add(m)
    if "extra" not in members:
        grown.remove("extra")
    assert [built.owner(k) for k in keys] == [grown.owner(k) for k in keys]
    assert list(built) == list(grown) == sorted(members)


def reference_owner(members: set[str], vnodes: int, key: str) -> str:
    """The documented rule, by brute force: the first point strictly after the key's hash."""
    points = sorted((xxhash.xxh3_64_intdigest(b"%s#%d" % (m.encode(), i)), m)
                    for m in members for i in range(vnodes))
    h = xxhash.xxh3_64_intdigest(key.encode())
    return next((m for p, m in points if p > h), points[0][1])


@given(member_sets, host_keys, vnodes)
@settings(max_examples=100, deadline=None)
def test_owner_is_the_first_point_after_the_key(members, keys, v):
    ring = Ring(members, vnodes=v)
    assert [ring.owner(k) for k in keys] == [reference_owner(members, v, k) for k in keys]


def test_add_and_remove_are_idempotent():
    ring = Ring(["a", "b"], vnodes=32)
    owners = [ring.owner(h) for h in HOSTS]
    ring.add("a")
    ring.remove("zzz")
    assert [ring.owner(h) for h in HOSTS] == owners
    assert "a" in ring and "zzz" not in ring and len(ring) == 2


def test_the_same_owners_in_another_process():
    """xxh3, not Python's salted hash(): a worker started elsewhere agrees on every host."""
    members = [f"worker-{i}" for i in range(7)]
    code = ("from skitter.distributed.ring import Ring\n"
            f"r = Ring({members!r}, vnodes=64)\n"
            f"print(','.join(r.owner(h) for h in {HOSTS[:300]!r}))")
    env = dict(os.environ, PYTHONHASHSEED="12345")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         timeout=60, check=True).stdout.strip()
    here = Ring(members, vnodes=64)
    assert out.split(",") == [here.owner(h) for h in HOSTS[:300]]


def test_known_owners_do_not_change_between_releases():
    """Workers of different versions must agree: pin a few owners (points are xxh3-64 of
    ``b"<member>#<i>"``, a host belongs to the first point after xxh3-64 of its key)."""
    ring = Ring(["worker-a", "worker-b", "worker-c"], vnodes=64)
    assert {h: ring.owner(h) for h in PINNED} == PINNED


PINNED = {"example.org": "worker-b", "www.example.com:8080": "worker-b", "127.0.0.1:8000": "worker-a",
          "a.test": "worker-b", "b.test": "worker-c", "c.test": "worker-a"}


def test_balance_and_moves_with_the_default_vnodes():
    """A small version of bench/ring_sim.py: 20 workers within ±10% on the circle; one leaving
    moves its own share of hosts (about 1/20), nothing else."""
    members = [f"worker-{i}" for i in range(20)]
    ring = Ring(members)
    shares = ring.shares()
    assert sum(shares.values()) == pytest.approx(1.0)
    assert max(abs(s * 20 - 1) for s in shares.values()) < 0.10
    smaller = Ring(members[1:])
    moved = sum(ring.owner(h) != smaller.owner(h) for h in HOSTS)
    assert moved == sum(ring.owner(h) == "worker-0" for h in HOSTS)
    assert 0.03 < moved / len(HOSTS) < 0.08


def test_an_empty_ring_and_bad_arguments():
    with pytest.raises(LookupError):
        Ring().owner("example.org")
    assert Ring().shares() == {}
    with pytest.raises(ValueError):
        Ring(["a"], vnodes=0)
    with pytest.raises(ValueError):
        Ring([""])
