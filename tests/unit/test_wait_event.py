"""skitter.clock.wait_event: an event waited for at most so long, where a cancel is never lost (the
crawl's end cancels its tasks and waits for them; Python 3.11's asyncio.wait_for drops a cancel
that comes as its wait completes, and a task looping around one never ended)."""

from __future__ import annotations

import asyncio

from skitter.clock import wait_event


async def _looping(event: asyncio.Event, turns: list[int]) -> None:
    """What the frontier's next_ready and the recrawl's planner do: wait, clear, go round."""
    while True:
        await wait_event(event, 10)
        event.clear()
        turns.append(1)


def test_set_and_timeout():
    async def main():
        ev = asyncio.Event()
        assert await wait_event(ev, 0.01) is False
        asyncio.get_running_loop().call_later(0.01, ev.set)
        assert await wait_event(ev, 5) is True
        assert await wait_event(ev, None) is True    # already set: at once
        assert not [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]   # no waiter left behind

    asyncio.run(main())


def test_a_cancel_as_the_event_is_set_ends_the_task():
    """The event set, its waiter done in that turn, then the task cancelled: it ends (with
    asyncio.wait_for in the loop, on Python 3.11, it went round again and never ended)."""
    async def main():
        ev = asyncio.Event()
        turns: list[int] = []
        task = asyncio.ensure_future(_looping(ev, turns))
        await asyncio.sleep(0.01)
        ev.set()
        await asyncio.sleep(0)   # the waiter completes in this turn
        task.cancel()
        done, _ = await asyncio.wait({task}, timeout=2)
        assert done and task.cancelled(), turns
        assert not [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]

    asyncio.run(main())


def test_a_cancel_while_waiting_ends_the_task_and_its_waiter():
    async def main():
        ev = asyncio.Event()
        task = asyncio.ensure_future(_looping(ev, []))
        await asyncio.sleep(0.01)
        task.cancel()
        done, _ = await asyncio.wait({task}, timeout=2)
        assert done and task.cancelled()
        await asyncio.sleep(0)
        assert not [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]

    asyncio.run(main())


def test_the_committer_ends_with_the_crawl_without_its_cancel(tmp_path):
    """The crawl's end sets its flag before cancelling: a committer whose cancel was dropped (in
    redis-py's sends, asyncio.wait_for) still ends, at its next turn, and _crawl's gather returns."""
    from skitter.api import build_crawler
    from skitter.config import CrawlConfig

    async def main():
        crawler = build_crawler(tmp_path / "c", CrawlConfig(seeds=("http://127.0.0.1:9/",)))
        crawler.commit_interval = 0.01
        try:
            committer = asyncio.ensure_future(crawler._committer())
            await asyncio.sleep(0.05)
            assert not committer.done()
            crawler._ending = True   # what _crawl sets; no cancel at all
            done, _ = await asyncio.wait({committer}, timeout=2)
            assert done and committer.exception() is None
        finally:
            crawler.store.close()

    asyncio.run(main())


def test_the_committer_commits_each_interval_and_at_once_when_the_frontier_asks(tmp_path):
    """The store commits every ``commit_interval`` (a second), the progress callback runs every
    ``progress_interval``, and a frontier with something to hand over (``Durable.wants_commit``:
    a Redis worker's hosts the ring moved) gets a commit at the next turn, not a second later."""
    from skitter.api import build_crawler
    from skitter.config import CrawlConfig
    from skitter.frontier.base import Durable
    from skitter.frontier.local import LocalFrontier
    from skitter.frontier.politeness import Politeness

    class Handing(LocalFrontier):   # the Durable part of the Redis frontier, on the local one
        wants_commit = False
        committed_calls = 0

        async def committed(self):
            self.committed_calls += 1
            self.wants_commit = False

    async def main():
        made: list[Handing] = []
        crawler = build_crawler(tmp_path / "c", CrawlConfig(seeds=("http://127.0.0.1:9/",)),
                                frontier=lambda store: made.append(Handing(store.db, Politeness())) or made[0])
        frontier = made[0]
        assert crawler.frontier is frontier and isinstance(frontier, Durable)
        crawler.commit_interval, crawler.progress_interval = 1.0, 0.05
        commits, progress = [], []
        real_commit = crawler.store.commit
        crawler.store.commit = lambda: (commits.append(1), real_commit())[1]
        crawler.on_progress = lambda c: progress.append(1)
        try:
            committer = asyncio.ensure_future(crawler._committer())
            await asyncio.sleep(0.3)
            assert commits == [] and len(progress) >= 3          # refreshed, not committed yet
            frontier.wants_commit = True
            await asyncio.sleep(0.15)
            assert commits == [1] and frontier.committed_calls == 1   # asked for: committed at once
            await asyncio.sleep(1.2)
            assert len(commits) == 2                                 # then each interval again
            crawler._ending = True
            await asyncio.wait({committer}, timeout=2)
        finally:
            crawler.store.close()

    asyncio.run(main())
