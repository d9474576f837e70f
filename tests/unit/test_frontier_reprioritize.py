"""LocalFrontier.raise_priority (its ``reprioritize``, batched): a queued URL's priority goes up, in memory and on disk, and the
frontier's order follows (the importance strategies need it: backlinks, OPIC)."""

from __future__ import annotations

import asyncio
import random
from collections import Counter

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from skitter.frontier.local import LocalFrontier
from skitter.frontier.politeness import Politeness
from skitter.models import Candidate, Outcome
from skitter.store.db import CrawlDB
from skitter.urls import fingerprint
from skitter.testing import FakeClock



def make(directory, window: int = 32) -> tuple[CrawlDB, LocalFrontier]:
    db = CrawlDB(directory)
    return db, LocalFrontier(db, Politeness(delay=0.0, adaptive=0.0), window=window, clock=FakeClock())


def cand(url: str, priority: float) -> Candidate:
    return Candidate(url=url, depth=1, priority=priority)


def drain(f: LocalFrontier, db: CrawlDB) -> list[str]:
    async def run():
        out = []
        while (c := await f.next_ready()) is not None:
            out.append(c.url)
            f.finish(c, Outcome(response_time=0.0))
        return out
    return asyncio.run(run())


def stored(db: CrawlDB, url: str) -> tuple[int, float]:
    return db.conn.execute("SELECT state, priority FROM urls WHERE fp = ?", (fingerprint(url),)).fetchone()


def test_raise_in_the_window_changes_the_order_and_the_row(tmp_path):
    db, f = make(tmp_path)
    f.admit([cand(f"http://a.test/{i}", float(10 - i)) for i in range(5)])   # 0 is best
    f.raise_priority("http://a.test/4", 20.0)
    assert stored(db, "http://a.test/4") == (1, 20.0)
    assert drain(f, db) == ["http://a.test/4", "http://a.test/0", "http://a.test/1", "http://a.test/2",
                            "http://a.test/3"]


def test_never_lowers(tmp_path):
    db, f = make(tmp_path)
    f.admit([cand("http://a.test/a", 5.0), cand("http://a.test/b", 3.0)])
    f.raise_priority("http://a.test/a", 1.0)
    f.raise_priority("http://a.test/b", 3.0)
    assert stored(db, "http://a.test/a") == (1, 5.0)
    assert drain(f, db) == ["http://a.test/a", "http://a.test/b"]


def test_raise_on_disk_moves_the_url_into_the_window(tmp_path):
    db, f = make(tmp_path, window=2)
    f.admit([cand(f"http://a.test/{i}", float(10 - i)) for i in range(6)])   # window: 0, 1; disk: 2..5
    assert stored(db, "http://a.test/5")[0] == 0
    f.raise_priority("http://a.test/5", 50.0)
    assert stored(db, "http://a.test/5") == (1, 50.0)       # now in the window ...
    assert len(f.hosts["a.test"].window) == 2               # ... which stays bounded:
    assert stored(db, "http://a.test/1")[0] == 0            # its worst went back to disk
    assert Counter(r[0] for r in db.conn.execute("SELECT state FROM urls")) == Counter({1: 2, 0: 4})
    assert drain(f, db) == [f"http://a.test/{i}" for i in (5, 0, 1, 2, 3, 4)]


def test_raise_on_disk_below_the_window_updates_the_row_only(tmp_path):
    db, f = make(tmp_path, window=2)
    f.admit([cand(f"http://a.test/{i}", float(10 - i)) for i in range(6)])
    f.raise_priority("http://a.test/5", 7.5)    # beats 3 (7) and 4 (6) on disk, not the window (10, 9)
    assert stored(db, "http://a.test/5") == (0, 7.5)
    assert drain(f, db) == [f"http://a.test/{i}" for i in (0, 1, 2, 5, 3, 4)]


def test_unknown_in_flight_and_done_urls_are_left_alone(tmp_path):
    db, f = make(tmp_path)
    f.raise_priority("http://nowhere.test/x", 9.0)            # unknown host
    f.admit([cand("http://a.test/a", 1.0), cand("http://a.test/b", 2.0)])
    f.raise_priority("http://a.test/unknown", 9.0)            # known host, unknown URL

    async def run():
        c = await f.next_ready()                            # b is in flight
        f.raise_priority(c.url, 99.0)
        assert stored(db, c.url) == (1, 2.0)
        f.finish(c, Outcome(response_time=0.0))
        f.raise_priority(c.url, 99.0)                         # done
        assert stored(db, c.url) == (2, 2.0)
        return c.url
    assert asyncio.run(run()) == "http://a.test/b"
    assert db.conn.execute("SELECT count(*) FROM urls").fetchone()[0] == 2


def test_a_raised_url_moves_its_host_ahead(tmp_path):
    db, f = make(tmp_path)
    f.admit([cand("http://a.test/1", 5.0), cand("http://b.test/1", 1.0)])
    f.raise_priority("http://b.test/1", 8.0)
    assert drain(f, db) == ["http://b.test/1", "http://a.test/1"]


def test_the_raised_priority_survives_a_new_frontier(tmp_path):
    db, f = make(tmp_path, window=2)
    f.admit([cand(f"http://a.test/{i}", float(10 - i)) for i in range(5)])
    f.raise_priority("http://a.test/4", 30.0)
    f.raise_priority("http://a.test/3", 20.0)
    db.commit()
    db.release_leases()
    db.close()
    db, f = make(tmp_path, window=2)
    assert drain(f, db) == [f"http://a.test/{i}" for i in (4, 3, 0, 1, 2)]


@settings(max_examples=40, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.integers(1, 6), st.lists(st.tuples(st.integers(0, 29), st.integers(0, 100)), max_size=40))
def test_order_matches_the_final_priorities(tmp_path_factory, window, raises):
    """Whatever is raised, in memory or on disk: everything comes out once, best final priority first."""
    directory = tmp_path_factory.mktemp("f")
    db, f = make(directory, window=window)
    rng = random.Random(window)
    prio = {f"http://a.test/{i}": float(rng.randint(0, 50)) for i in range(30)}
    f.admit([cand(u, p) for u, p in prio.items()])
    for i, p in raises:
        u = f"http://a.test/{i}"
        f.raise_priority(u, float(p))
        prio[u] = max(prio[u], float(p))
    out = drain(f, db)
    assert sorted(out) == sorted(prio)
    assert [prio[u] for u in out] == sorted(prio.values(), reverse=True)
    db.close()
