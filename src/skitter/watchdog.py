"""The crawl's watchdog: a crawl always makes progress, finishes, or says what it is waiting for.

Two watchers, because a stall has two shapes:

- **No progress** (the event loop runs, but no request starts or finishes although work is
  queued): a task in the loop notices after ``stall_after`` seconds and writes ONE line with
  what the crawl is waiting for (the hosts held by politeness and until when, robots.txt fetches
  under way, analysis calls in the worker processes, where the fetch tasks are parked). That can
  be legitimate (every host left has a Crawl-delay of a minute) or a bug; either way it is said.
- **A blocked loop** (a synchronous loop that never yields: issue 17's frontier spin): nothing in
  the loop can notice, so a daemon thread watches a heartbeat the loop beats every
  ``beat_every`` seconds; after ``block_after`` seconds without one it writes a line with the
  main thread's innermost frames.

Each line goes to the log (``DIR/crawl.log`` and stderr) and to ``DIR/watchdog.json``, which
``skitter stats`` shows while the crawl runs; a line that the crawl has resumed follows a stall.

Signals: SIGINT/SIGTERM are handled by a Python-level handler (it runs in the main thread even
inside a synchronous loop, where asyncio's own signal callbacks never would). The first asks the
loop to stop cleanly; if the loop has not taken the request within ``force_after`` seconds, the
thread delivers a second signal, and the second raises KeyboardInterrupt wherever the main thread
is; if the process is still alive ``exit_after`` seconds after the first, the thread ends it with
status 130. Every one of these is safe: a crawl killed at any moment resumes (the kill -9 promise).
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import signal
import sys
import threading
import time
import traceback
from datetime import datetime, UTC
from pathlib import Path
from collections.abc import Callable
from types import FrameType
from typing import Any

log = logging.getLogger(__name__)

STATUS_FILE = "watchdog.json"

# what signal.signal() takes and returns: a function, SIG_DFL / SIG_IGN, or None (not set from Python)
_Handler = Callable[[int, FrameType | None], Any] | int | None


def _iso(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def main_thread_frames(limit: int = 4) -> str:
    """The main thread's innermost frames, innermost first: ``file:line function`` joined by ←."""
    ident = threading.main_thread().ident
    frame = sys._current_frames().get(ident) if ident is not None else None
    if frame is None:
        return "unknown"
    stack = traceback.extract_stack(frame)[-limit:]
    parts = []
    for fs in reversed(stack):
        path = fs.filename
        marker = f"{os.sep}skitter{os.sep}"
        if marker in path:
            path = path[path.rindex(marker) + 1:]
        else:
            path = os.path.basename(path)
        parts.append(f"{path}:{fs.lineno} {fs.name}")
    return " ← ".join(parts)


class Watchdog:
    """Watches one crawl. ``describe()`` says what the crawl waits for (called in the loop);
    ``has_work()`` whether anything is queued; ``on_stop()`` asks the crawl to stop cleanly."""

    def __init__(self, directory: Path, *, describe: Callable[[], str], has_work: Callable[[], bool],
                 on_stop: Callable[[], None], stall_after: float = 30.0, block_after: float = 5.0,
                 beat_every: float = 0.5, force_after: float = 3.0, exit_after: float = 15.0) -> None:
        self.directory = Path(directory)
        self.describe = describe
        self.has_work = has_work
        self.on_stop = on_stop
        self.stall_after = stall_after
        self.block_after = block_after
        self.beat_every = beat_every
        self.force_after = force_after
        self.exit_after = exit_after
        now = time.monotonic()
        self.last_activity = now     # a request started or finished (the loop sets it: one store)
        self._beat = now
        self._stalled = False
        self._blocked = False
        self._signals = 0
        self._signal_at: float | None = None
        self._stop_taken = False     # the loop ran on_stop
        self._done = threading.Event()
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._previous: dict[int, _Handler] = {}

    # -- life cycle ---------------------------------------------------------------------------
    def start(self) -> None:
        """In the running loop: install the signal handlers and start the thread."""
        self._loop = asyncio.get_running_loop()
        try:
            (self.directory / STATUS_FILE).unlink()   # the last run's word is not this run's
        except OSError:
            pass
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGINT, signal.SIGTERM):
                self._previous[sig] = signal.signal(sig, self._on_signal)
        self._thread = threading.Thread(target=self._watch_thread, name="skitter-watchdog", daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._done.set()
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)
        self._previous.clear()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=2.0)

    @property
    def interrupted(self) -> bool:
        return self._signals > 0

    def activity(self) -> None:
        self.last_activity = time.monotonic()

    # -- signals ------------------------------------------------------------------------------
    def _on_signal(self, signum: int, frame) -> None:
        self._signals += 1
        if self._signals > 1:
            raise KeyboardInterrupt   # the second: stop here, wherever the main thread is
        self._signal_at = time.monotonic()
        loop = self._loop
        if loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(self._take_stop)

    def _take_stop(self) -> None:
        self._stop_taken = True
        self.on_stop()

    # -- the loop's side ----------------------------------------------------------------------
    async def run(self) -> None:
        """The heartbeat and the no-progress check, as a task of the crawl's loop."""
        while True:
            await asyncio.sleep(self.beat_every)
            now = time.monotonic()
            self._beat = now
            if self._blocked:
                self._blocked = False
                self._report("resumed", "the event loop runs again")
            idle = now - self.last_activity
            if idle >= self.stall_after and self.has_work():
                if not self._stalled:
                    self._stalled = True
                    self._report("stalled", f"no request started or finished for {idle:.0f} s: "
                                            f"{self.describe()}")
            elif self._stalled and idle < self.stall_after:
                self._stalled = False
                self._report("resumed", "requests are flowing again")

    # -- the thread's side --------------------------------------------------------------------
    def _watch_thread(self) -> None:
        while not self._done.wait(0.25):
            now = time.monotonic()
            silent = now - self._beat
            if silent >= self.block_after and not self._blocked:
                self._blocked = True
                self._report("blocked", f"the event loop has not run for {silent:.0f} s; the main thread is in "
                                        f"{main_thread_frames()}")
            if self._signal_at is None:
                continue
            waited = now - self._signal_at
            if waited >= self.exit_after:
                self._report("killed", f"still running {waited:.0f} s after the stop signal: exiting now "
                                       "(the crawl resumes from its last commit)")
                os._exit(130)
            if waited >= self.force_after and not self._stop_taken and self._signals == 1:
                self._report("forcing", f"the crawl has not taken the stop signal in {waited:.0f} s "
                                        f"(main thread in {main_thread_frames()}): interrupting it")
                main = threading.main_thread().ident   # None only for a thread not started
                try:
                    if main is not None:
                        signal.pthread_kill(main, signal.SIGINT)
                except (OSError, ValueError):
                    pass

    def _report(self, kind: str, message: str) -> None:
        (log.info if kind == "resumed" else log.warning)("watchdog: %s", message)
        status = {"kind": kind, "at": _iso(time.time()), "message": message}
        tmp = self.directory / (STATUS_FILE + ".tmp")
        try:
            tmp.write_text(json.dumps(status) + "\n", encoding="utf-8")
            os.replace(tmp, self.directory / STATUS_FILE)
        except OSError:   # a full or read-only disk: the log line is the report
            pass


def read_status(directory: Path) -> dict | None:
    """The watchdog's last report for the crawl in ``directory``, or None."""
    try:
        return json.loads((Path(directory) / STATUS_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
