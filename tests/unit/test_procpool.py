"""skitter.procpool: calls run in real child processes over pipes; deaths are contained."""

from __future__ import annotations

import asyncio
import math
import operator
import os
import signal
import subprocess
import sys
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from skitter.procpool import ProcessDied, ProcessPool


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 60))


def test_calls_run_in_other_processes_and_answers_match_their_calls() -> None:
    async def go():
        async with ProcessPool(2) as pool:
            pids = set(await asyncio.gather(*(pool.submit(os.getpid) for _ in range(20))))
            values = await asyncio.gather(*(pool.submit(math.factorial, i) for i in range(300)))
            big = await pool.submit(bytes, 3 << 20)          # an answer larger than the pipes
            return pids, values, big, set(pool.pids)
    pids, values, big, workers = run(go())
    assert os.getpid() not in pids and pids <= workers and len(workers) == 2
    assert values == [math.factorial(i) for i in range(300)]
    assert big == bytes(3 << 20)


def test_an_exception_in_the_call_is_raised_in_the_caller() -> None:
    async def go():
        async with ProcessPool(1) as pool:
            with pytest.raises(ZeroDivisionError):
                await pool.submit(operator.truediv, 1, 0)
            return await pool.submit(operator.add, 2, 3)   # the worker lives on
    assert run(go()) == 5


def test_a_call_to_a_pool_not_started_fails_at_once() -> None:
    with pytest.raises(RuntimeError, match="not started"):
        run(ProcessPool(1).submit(os.getpid))


def test_a_dead_worker_fails_its_calls_and_is_replaced() -> None:
    async def go():
        async with ProcessPool(1) as pool:
            first = pool.pids[0]
            slow = asyncio.ensure_future(pool.submit(time.sleep, 30))
            await asyncio.sleep(0.5)
            os.kill(first, signal.SIGKILL)
            with pytest.raises(ProcessDied):
                await slow
            with pytest.raises(ProcessDied):
                await pool.submit(os._exit, 3)              # a call that takes its worker down
            pid = await pool.submit(os.getpid)
            return first, pid, pool.deaths
    first, pid, deaths = run(go())
    assert pid != first and deaths == 2


def _spin(seconds: float) -> None:
    end = time.process_time() + seconds
    while time.process_time() < end:
        pass


def test_a_death_names_the_call_that_ran_and_a_cpu_limit() -> None:
    """A worker answers its calls in order: when it dies, the oldest unanswered call is the one it
    ran (``running``), the calls queued behind it did nothing (they may be made again as they
    are); a call past the CPU time analyse_limited gives it says so (``cpu_limit``)."""
    async def go():
        async with ProcessPool(1) as pool:
            culprit = asyncio.ensure_future(pool.submit(os._exit, 3))
            queued = [asyncio.ensure_future(pool.submit(os.getpid)) for _ in range(3)]
            got = await asyncio.gather(culprit, *queued, return_exceptions=True)
            spinning = asyncio.ensure_future(pool.submit(_cpu_limited, 0.2, 30.0))
            behind = asyncio.ensure_future(pool.submit(os.getpid))
            late = await asyncio.gather(spinning, behind, return_exceptions=True)
            return got, late, await pool.submit(os.getpid)
    got, late, pid = run(go())
    assert all(isinstance(e, ProcessDied) for e in got)
    assert [e.running for e in got] == [True, False, False, False] and not got[0].cpu_limit
    assert isinstance(late[0], ProcessDied) and late[0].running and late[0].cpu_limit
    assert "ran out of its CPU time" in str(late[0])
    assert isinstance(late[1], ProcessDied) and not late[1].running and not late[1].cpu_limit
    assert isinstance(pid, int)


def _cpu_limited(limit: float, seconds: float) -> None:
    """skitter.analyse.analyse_limited's timer around a spin of ``seconds`` of CPU."""
    signal.setitimer(signal.ITIMER_VIRTUAL, limit)
    _spin(seconds)


def test_a_sigterm_to_the_process_group_is_the_crawl_processs_to_handle() -> None:
    """``timeout``, ``kill -- -PGID`` and systemd signal the whole group: a worker ignores SIGTERM
    as it does SIGINT, and the crawl process ends it when it stops (it used to die at once, and the
    pool logged a death and started a replacement in the middle of the shutdown)."""
    async def go():
        async with ProcessPool(1) as pool:
            first = await pool.submit(os.getpid)   # started: its signal dispositions are set
            os.kill(first, signal.SIGTERM)
            await asyncio.sleep(0.3)
            return first, await pool.submit(os.getpid), pool.deaths
    first, pid, deaths = run(go())
    assert pid == first and deaths == 0


class _Unstartable(ProcessPool):
    def _command(self) -> list[str]:
        return [sys.executable, "-c", "import sys; sys.exit(3)"]


def test_workers_that_cannot_start_fail_every_call_instead_of_looping() -> None:
    async def go():
        messages = []
        async with _Unstartable(1) as pool:
            for _ in range(10):
                with pytest.raises(ProcessDied) as died:
                    await pool.submit(os.getpid)
                messages.append(str(died.value))
                if "end as they start" in messages[-1]:
                    break
            return messages, pool.deaths
    messages, deaths = run(go())
    assert "end as they start" in messages[-1] and deaths == 3


def test_workers_end_when_the_parent_is_killed() -> None:
    parent = subprocess.Popen(
        [sys.executable, "-c",
         "import asyncio, sys, time\n"
         "from skitter.procpool import ProcessPool\n"
         "async def main():\n"
         "    pool = ProcessPool(2)\n"
         "    await pool.start()\n"
         "    await pool.submit(time.sleep, 0)\n"
         "    print(*pool.pids, flush=True)\n"
         "    await asyncio.sleep(60)\n"
         "asyncio.run(main())\n"],
        stdout=subprocess.PIPE, text=True)
    try:
        pids = [int(p) for p in parent.stdout.readline().split()]
        assert len(pids) == 2
        parent.kill()
        parent.wait(10)
        deadline = time.time() + 10
        while time.time() < deadline and any(_alive(p) for p in pids):
            time.sleep(0.05)
        assert not [p for p in pids if _alive(p)]
    finally:
        parent.kill()


def test_a_worker_whose_parent_is_gone_mid_answer_ends_quietly() -> None:
    """The crawl process killed (kill -9) while a worker writes an answer: the worker's pipe is
    broken; it ends with status 0 and no traceback on the terminal they shared."""
    ans_r, ans_w = os.pipe()
    os.close(ans_r)   # the crawl process is gone: nobody reads the answers (its READY message first)
    try:
        child = subprocess.run(   # started as ProcessPool starts its workers
            [sys.executable, "-c", f"import sys; sys.path[:] = {sys.path!r}; from skitter.procpool_child import main; main()"],
            stdin=subprocess.DEVNULL, stdout=ans_w, stderr=subprocess.PIPE, text=True, timeout=30)
    finally:
        os.close(ans_w)
    assert (child.returncode, child.stderr) == (0, "")


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


class Unpicklable(Exception):
    def __init__(self, a, b):   # pickles, but does not unpickle: Exception.__reduce__ gives one arg
        super().__init__(f"{a} {b}")


def raise_unpicklable() -> None:
    raise Unpicklable(1, 2)


def test_an_answer_that_does_not_unpickle_fails_its_call_only() -> None:
    async def go():
        async with ProcessPool(1) as pool:
            with pytest.raises(RuntimeError, match="unreadable answer"):
                await pool.submit(raise_unpicklable)
            return await asyncio.wait_for(pool.submit(operator.add, 2, 3), 20), pool.deaths
    assert run(go()) == (5, 0)


def test_a_worker_crashed_by_its_calls_is_not_a_failure_to_start() -> None:
    async def go():
        async with ProcessPool(1) as pool:
            for _ in range(5):   # five calls that each take a worker down: the pool keeps going
                with pytest.raises(ProcessDied):
                    await pool.submit(os._exit, 3)
            return pool.broken, await pool.submit(operator.add, 2, 3)
    assert run(go()) == (None, 5)


class _Unspawnable(ProcessPool):
    async def _spawn(self):
        if self._children:   # the first starts; its replacement cannot (out of file descriptors)
            raise OSError(24, "Too many open files")
        return await super()._spawn()


def test_a_replacement_that_cannot_start_breaks_the_pool_instead_of_hanging() -> None:
    async def go():
        async with _Unspawnable(1) as pool:
            with pytest.raises(ProcessDied):
                await pool.submit(os._exit, 3)
            with pytest.raises(ProcessDied, match="cannot start a child process"):
                await asyncio.wait_for(pool.submit(os.getpid), 20)
            return pool.broken
    assert "Too many open files" in run(go())


class _SlowSpawn(ProcessPool):
    async def _spawn(self):
        w = await super()._spawn()
        if self._children:   # replacements start slowly: close() runs meanwhile
            await asyncio.sleep(0.5)
        return w


def test_close_while_a_replacement_starts_leaves_no_worker_running() -> None:
    async def go():
        others = _children(os.getpid())   # servers other tests of the session left running (a Redis Cluster)
        pool = _SlowSpawn(2)
        await pool.start()
        first = pool.pids
        os.kill(first[0], signal.SIGKILL)
        await asyncio.sleep(0.2)        # its reader has seen the end and is starting another
        await pool.close()
        await asyncio.sleep(0.5)        # (the event loop's end would kill a leftover: look before)
        return [p for p in _children(os.getpid()) - others if p not in first and _alive(p)]
    assert run(go()) == []


def _children(pid: int) -> set[int]:
    out: set[int] = set()
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{task}/children") as f:
                out.update(int(c) for c in f.read().split())
        except OSError:
            pass
    return out


@settings(max_examples=100, deadline=None)
@given(url=st.text(max_size=40), anchor=st.text(max_size=20), context=st.text(max_size=20),
       visibility=st.integers(1, 3), position=st.integers(1, 3), distance=st.sampled_from([1, 5]),
       nofollow=st.booleans())
def test_the_records_a_worker_sends_come_back_equal(url, anchor, context, visibility, position, distance,
                                                     nofollow) -> None:
    """The records cross the pipes pickled: a Link is rebuilt by ``new_link`` (its slots set
    directly), the others by their constructors; each comes back equal, and hashes alike."""
    import pickle

    from skitter.models import Candidate, FetchResult, Link, Page, new_link

    link = Link(url, anchor, context, visibility, position, distance, nofollow)
    fast = new_link(url, anchor, context, visibility, position, distance, nofollow)
    assert fast == link and hash(fast) == hash(link) and type(fast) is Link
    assert new_link(url) == Link(url)
    page = Page(title=anchor, headings=[context], text=url, links=[link, Link(url)], nofollow=nofollow)
    for record in (link, page, Candidate(url, depth=2, parent=anchor),
                   FetchResult(url, status=200, headers=[("a", anchor)], body=url.encode(errors="replace"))):
        back = pickle.loads(pickle.dumps(record, protocol=5))
        assert back == record and type(back) is type(record)
    back = pickle.loads(pickle.dumps(link, protocol=5))
    with pytest.raises(AttributeError):
        back.url = "changed"   # still frozen
