"""One crawl at a time in a crawl directory: ``DIR/crawl.lock``.

A crawl, a recrawl or a distributed worker holds an exclusive ``flock`` on the file while it
runs, with its pid written in it. A second one in the same directory would hand the first one's
URLs in flight back to the queue (the store does that for a crawl that resumes) and fetch them
again, and both would write the same WARC series: it stops at once with one line naming the
process that holds the directory. The kernel drops the lock of a process that dies, however it
dies (kill -9 included), so a killed crawl never leaves a stale lock behind, and the next run
resumes.

``skitter stats`` reads who holds it (:func:`holder`) without taking it, to tell a crawl that
is running from one that was interrupted. Where there is no ``flock`` (not POSIX), nothing is
locked."""

from __future__ import annotations

import os
import time
from pathlib import Path

from ..errors import CrawlDirError

try:
    import fcntl
except ImportError:   # pragma: no cover - not POSIX
    fcntl = None  # type: ignore[assignment]

LOCK_NAME = "crawl.lock"
WAIT = 2.0   # seconds a crawl waits for a holder to let go (``skitter stats`` holds it a moment)


def _pid(fd: int) -> int | None:
    try:
        return int(os.pread(fd, 32, 0).split()[0])
    except (OSError, ValueError, IndexError):
        return None


class DirectoryLock:
    """The exclusive lock of one crawl directory, held until :meth:`release` (or the process ends)."""

    def __init__(self, fd: int | None) -> None:
        self._fd = fd

    @classmethod
    def acquire(cls, directory: Path, wait: float = WAIT) -> DirectoryLock:
        """Take ``directory``'s lock, or raise CrawlDirError naming the process that holds it."""
        if fcntl is None:   # pragma: no cover
            return cls(None)
        fd = os.open(directory / LOCK_NAME, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        deadline = time.monotonic() + wait
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    pid = _pid(fd)
                    os.close(fd)
                    who = f"skitter process {pid}" if pid else "another skitter process"
                    raise CrawlDirError(f"{directory} is being crawled by {who}: one crawl at a time in a "
                                        "crawl directory (stop that one first, or use another directory)") from None
                time.sleep(0.05)
            except OSError:
                os.close(fd)
                raise
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        return cls(fd)

    def release(self) -> None:
        """Let go (the file stays: removing it would race with the next process to take it)."""
        if self._fd is not None:
            fd, self._fd = self._fd, None
            os.close(fd)   # closing the descriptor drops the flock


def holder(directory: Path) -> int | None:
    """The pid of the process crawling ``directory`` now (0 if it wrote none), or None when no
    process holds its lock: nothing runs there, or the last run was interrupted."""
    if fcntl is None:   # pragma: no cover
        return None
    try:
        fd = os.open(Path(directory) / LOCK_NAME, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return _pid(fd) or 0
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)
