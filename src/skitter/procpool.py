"""Child processes fed over pipes from the crawl's event loop: the analysis processes
(``--analysis-processes``, :mod:`skitter.analyse`) and the live index's process.

The crawl loop hands each response to :func:`skitter.analyse.analyse` in another process, so that
parsing, fingerprinting and WARC compression use the second core while the loop fetches. Each
worker is a ``python`` child whose stdin and stdout are the two pipes: the loop writes one
length-prefixed pickle per call to stdin and a reader task reads the answers from stdout. Nothing
else runs: no helper thread and no helper process (under uvloop, which the crawl uses; asyncio's own
loop watches child processes with a thread each).

Why not ``concurrent.futures.ProcessPoolExecutor``: it moves every call through
two threads of the crawl process (a queue feeder and a result manager) that contend with the event
loop for the GIL, and its semaphores start multiprocessing's resource tracker, a third process of
about 12 MB. On the benchmark web those threads took about 0.35 ms of CPU a page, 8 % of the crawl's
(docs/benchmarks.md).

Lifetime: a worker ends when its stdin reaches end of file, which happens when :meth:`close` is
called and also when the crawl process dies (kill -9 closes its pipe ends): no orphan is left.
A worker that dies on its own (a crash in a C library on a hostile page) fails only the calls it
held, with :class:`ProcessDied`; the pool starts a new one. Workers that die before their first
message ("ready"), three times in a row, or a replacement that cannot be started at all (out of
file descriptors or memory), break the pool: every call then fails with :class:`ProcessDied`, the
message says why, and :attr:`ProcessPool.broken` is set.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import os
import pickle
import signal
import sys
from typing import Any
from collections.abc import Callable

from .procpool_child import HEAD as _HEAD, READY, frame, grow_pipe as _grow_pipe

__all__ = ["ProcessDied", "ProcessPool"]

log = logging.getLogger(__name__)

_STREAM_LIMIT = 1 << 22              # the reader's buffer; answers are a page's text and records
_START_FAILURES = 3                  # children dying before they are ready, in a row: give up
_CLOSE_WAIT = 10.0                   # seconds a closing worker may take to answer the calls in its pipe


class ProcessDied(Exception):
    """The child process running a call ended before answering it. ``running``: whether the call
    was the one it was running (a worker answers its calls in the order they came: the oldest
    unanswered one); False for the calls queued behind it, which did not kill it and can be
    made again as they are. ``cpu_limit``: it was killed for running out of a call's CPU time
    (``analyse.analyse_limited``)."""

    def __init__(self, message: str, *, running: bool = True, cpu_limit: bool = False) -> None:
        super().__init__(message)
        self.running = running
        self.cpu_limit = cpu_limit


class _Child:
    __slots__ = ("proc", "stdout", "stdin", "pending", "reader", "ready", "dead")

    def __init__(self, proc: asyncio.subprocess.Process, stdout: asyncio.StreamReader,
                 stdin: asyncio.StreamWriter) -> None:
        self.proc = proc
        self.stdout = stdout
        self.stdin = stdin
        self.pending: dict[int, asyncio.Future] = {}
        self.reader: asyncio.Task | None = None
        self.ready = False        # the worker said it started (its first message)
        self.dead = False


class ProcessPool:
    """``n`` worker processes; ``await pool.submit(fn, *args)`` runs ``fn(*args)`` in one of them
    (the one with the fewest calls in progress). ``fn`` and the arguments must pickle (``fn`` by
    reference: a module-level function). Use ``async with ProcessPool(n) as pool``."""

    def __init__(self, n: int) -> None:
        if n < 1:
            raise ValueError("a worker pool needs at least one worker")
        self.n = n
        self._children: list[_Child] = []
        self._seq = itertools.count()
        self._closing = False
        self._start_failures = 0
        self._broken: str | None = None
        self._changed: asyncio.Event | None = None
        self.deaths = 0               # children that died on their own

    async def __aenter__(self) -> ProcessPool:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def start(self) -> None:
        self._changed = asyncio.Event()
        for _ in range(self.n):
            self._children.append(await self._spawn())

    @property
    def broken(self) -> str | None:
        """Why the pool gave up starting children (every call fails), or None."""
        return self._broken

    @property
    def busy(self) -> int:
        """Calls submitted and not answered yet, over all children."""
        return sum(len(w.pending) for w in self._children)

    @property
    def pids(self) -> list[int]:
        return [w.proc.pid for w in self._children if not w.dead]

    def _command(self) -> list[str]:
        # the child starts with the parent's import path, so it runs the same skitter
        code = f"import sys; sys.path[:] = {sys.path!r}; from skitter.procpool_child import main; main()"
        return [sys.executable, "-c", code]

    async def _spawn(self) -> _Child:
        # our own pipes, not the event loop's (libuv makes socket pairs, whose buffers stay small)
        fds: list[int] = []
        proc = None
        try:
            req_r, req_w = os.pipe()
            fds += (req_r, req_w)
            ans_r, ans_w = os.pipe()
            fds += (ans_r, ans_w)
            for fd in (req_w, ans_r):
                _grow_pipe(fd)
            proc = await asyncio.create_subprocess_exec(*self._command(), stdin=req_r, stdout=ans_w)
            for fd in (req_r, ans_w):   # the child's ends
                fds.remove(fd)
                os.close(fd)
            loop = asyncio.get_running_loop()
            reader = asyncio.StreamReader(limit=_STREAM_LIMIT)
            fds.remove(ans_r)           # from here the transports own (and close) the parent's ends
            await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(ans_r, "rb", 0))
            fds.remove(req_w)
            transport, protocol = await loop.connect_write_pipe(asyncio.streams.FlowControlMixin,
                                                                os.fdopen(req_w, "wb", 0))
        except BaseException:
            for fd in fds:
                os.close(fd)
            if proc is not None and proc.returncode is None:
                proc.kill()
                await proc.wait()
            raise
        w = _Child(proc, reader, asyncio.StreamWriter(transport, protocol, None, loop))
        w.reader = asyncio.create_task(self._read(w))
        return w

    async def submit(self, fn: Callable[..., Any], *args: Any) -> Any:
        payload = pickle.dumps((fn, args), protocol=5)
        while True:
            if self._broken is not None:
                raise ProcessDied(self._broken)
            if self._closing:
                raise RuntimeError("the worker pool is closed")
            alive = [w for w in self._children if not w.dead]
            if alive:
                break
            changed = self._changed
            if changed is None:
                raise RuntimeError("the worker pool is not started")
            changed.clear()
            await changed.wait()  # a replacement is starting
        w = min(alive, key=lambda w: len(w.pending))
        seq = next(self._seq)
        fut = asyncio.get_running_loop().create_future()
        w.pending[seq] = fut
        try:
            w.stdin.write(frame(seq, payload))
            await w.stdin.drain()
            return await fut
        except (BrokenPipeError, ConnectionResetError) as exc:
            w.dead = True   # before its reader sees the end: a retry must not pick it again
            raise ProcessDied(f"worker process {w.proc.pid} ended: {exc}") from None
        finally:
            w.pending.pop(seq, None)

    async def _read(self, w: _Child) -> None:
        stream = w.stdout
        try:
            while True:
                (size,) = _HEAD.unpack(await stream.readexactly(_HEAD.size))
                data = await stream.readexactly(size)
                seq = int.from_bytes(data[:8], "little")
                if seq == READY:
                    w.ready = True
                    continue
                fut = w.pending.get(seq)
                try:
                    ok, value = pickle.loads(memoryview(data)[8:])
                except Exception as exc:   # e.g. an exception class that does not unpickle
                    ok, value = False, RuntimeError(f"unreadable answer from worker process {w.proc.pid}: "
                                                    f"{type(exc).__name__}: {exc}")
                if fut is not None and not fut.done():
                    if ok:
                        fut.set_result(value)
                    else:
                        fut.set_exception(value)
        except (asyncio.IncompleteReadError, ConnectionError):
            pass   # end of file: the worker ended
        except BaseException:   # cancelled, or a bug here: the worker is of no use without its reader
            w.proc.kill()
            await self._died(w)
            raise
        await self._died(w)

    async def _died(self, w: _Child) -> None:
        w.dead = True
        code = await w.proc.wait()
        running = min(w.pending, default=None)   # the oldest unanswered call: the one it ran
        cpu = code == -signal.SIGVTALRM
        why = "ran out of its CPU time for one call" if cpu else f"ended (exit status {code})"
        for seq, fut in w.pending.items():
            if not fut.done():
                fut.set_exception(ProcessDied(f"worker process {w.proc.pid} {why}", running=seq == running,
                                              cpu_limit=cpu and seq == running))
        if self._closing:
            return
        self.deaths += 1
        log.warning("worker process %d %s; starting another", w.proc.pid, why)
        # only a worker that never got as far as saying it is ready counts as failing to start: one
        # that a hostile page crashed (twice, with the retry) does not
        self._start_failures = 0 if w.ready else self._start_failures + 1
        changed = self._changed
        assert changed is not None   # start() made it before the first child
        try:
            if self._start_failures >= _START_FAILURES:
                self._broken = (f"child processes end as they start (exit status {code}): "
                                f"try `{sys.executable} -c 'import skitter.analyse'`")
                return
            try:
                new = await self._spawn()
            except Exception as exc:   # out of file descriptors, of memory, of processes
                self._broken = f"cannot start a child process: {type(exc).__name__}: {exc}"
                return
            if self._closing:          # close() ran while it started: it is not in the list it ended
                new.dead = True
                new.stdin.close()
                await asyncio.gather(new.reader, return_exceptions=True)
                return
            self._children[self._children.index(w)] = new
        finally:
            changed.set()

    async def close(self) -> None:
        """End every worker: each answers the calls already in its pipe, then sees end of file
        (killed after 10 s)."""
        self._closing = True
        for w in self._children:
            if not w.stdin.is_closing():
                w.stdin.close()
        for w in self._children:
            try:
                await asyncio.wait_for(w.proc.wait(), _CLOSE_WAIT)
            except TimeoutError:
                w.proc.kill()
                await w.proc.wait()
        for w in self._children:
            if w.reader is not None:
                await asyncio.gather(w.reader, return_exceptions=True)
        if self._changed is not None:
            self._changed.set()
