"""A child process's side of :mod:`skitter.procpool`: read a call from stdin, run it, write the
answer to stdout, until stdin ends. Kept apart from ``procpool.py`` so that a worker imports only
what its calls need (``procpool.py`` imports asyncio, and with it ssl and sockets: 11 MB)."""

from __future__ import annotations

import os
import pickle
import signal
import struct

HEAD = struct.Struct("<I")          # the length of the message that follows (8-byte call id + pickle)
PIPE_BYTES = 1 << 20                # each pipe's capacity (see grow_pipe)
READY = (1 << 64) - 1               # the call id of the worker's first message: it has started


def frame(call_id: int, payload: bytes = b"") -> bytes:
    """One message on a pipe, either way: its length, the call's id, the pickle."""
    return HEAD.pack(len(payload) + 8) + call_id.to_bytes(8, "little") + payload


def grow_pipe(fd: int) -> None:
    """Make a pipe hold ``PIPE_BYTES`` (Linux; the default is 64 KiB, two pages' worth): while
    the event loop is busy (a commit takes up to ~100 ms) the worker still has calls to read and
    room to write its answers, instead of waiting for the loop."""
    try:
        import fcntl

        fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, PIPE_BYTES)
    except (ImportError, AttributeError, OSError):   # not Linux, or above /proc/sys/fs/pipe-max-size
        pass


def main() -> None:
    """A worker: answer calls from stdin on stdout until stdin ends (or the crawl process is gone:
    killed, its end of the pipe closed mid-answer)."""
    try:
        _serve()
    except BrokenPipeError:
        os._exit(0)   # no traceback on the terminal after the crawl process was killed


def _serve() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)   # Ctrl-C is the crawl process's to handle
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # so is a SIGTERM to the process group (timeout,
    # kill -- -PGID, systemd): the crawl stops gracefully and ends its workers by closing stdin
    # (then SIGKILL); dying here made the pool log a death and start a replacement mid-shutdown
    inp = os.fdopen(0, "rb", buffering=1 << 16)
    out = os.fdopen(os.dup(1), "wb", buffering=1 << 16)
    os.dup2(2, 1)                                  # a stray print() goes to stderr, not into the answers
    read = inp.read
    out.write(frame(READY))
    out.flush()
    while True:
        head = read(HEAD.size)
        if len(head) < HEAD.size:
            return                                 # end of file: the crawl process is done, or gone
        (size,) = HEAD.unpack(head)
        data = read(size)
        if len(data) < size:
            return
        try:
            fn, args = pickle.loads(memoryview(data)[8:])   # may import fn's module: it may fail
            answer = (True, fn(*args))
        except Exception as exc:                   # a bug in fn, or a broken install: the caller raises it
            answer = (False, exc)
        try:
            payload = pickle.dumps(answer, protocol=5)
        except Exception as exc:                   # an answer or exception that does not pickle
            payload = pickle.dumps((False, RuntimeError(f"{type(exc).__name__}: {exc}")), protocol=5)
        out.write(frame(int.from_bytes(data[:8], "little"), payload))
        out.flush()
