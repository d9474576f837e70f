"""What the loopback web servers share: the subprocess that serves a generated web, and its parent.

``server.py`` (the demo web) and ``wild_server.py`` (the wild web) differ only in how a request
becomes a response; everything else lives here, once:

* the subprocess side: consecutive loopback addresses (127.0.0.0/8 only) bound on one port
  (``bind_all``), one aiohttp low-level server on all of them (``serve``), the host chosen by the
  local address a request arrived on (not by its Host header), the ONE JSON startup line
  ``{"port": P, "base_urls": [...]}``, the access log (one JSON line per request, written and
  flushed when the response has been written: ``{"t0", "t1", "host", "method", "path", "status",
  "ua"}``),
  and the ways it ends: SIGTERM/SIGINT, its parent dying (polled) and EOF on stdin;
* the parent side: ``ServerProcess`` runs such a subprocess as a context manager, reads the
  startup line and never leaves the process behind (a finaliser stops it if the object is dropped
  unstopped or the interpreter exits); ``read_access_log`` reads the log back.
"""

from __future__ import annotations

import asyncio
import ipaddress
import json
import os
import select
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import weakref
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self
from collections.abc import Awaitable, Callable, Coroutine

if TYPE_CHECKING:
    from aiohttp import web as aioweb

__all__ = ["ServerProcess", "accepts_gzip", "addresses", "bind_all", "read_access_log", "serve",
           "stop_process"]


# ----------------------------------------------------------------------------------------------
# the subprocess side


def addresses(ip_base: str, hosts: int, name: str = "demo server") -> list[str]:
    """``hosts`` consecutive IPv4 addresses from ``ip_base``; exits unless all are loopback."""
    base = ipaddress.IPv4Address(ip_base)
    ips = [base + i for i in range(hosts)]
    for ip in ips:
        if ip not in ipaddress.IPv4Network("127.0.0.0/8"):
            raise SystemExit(f"{name}: {ip} is not a loopback address (127.0.0.0/8 only)")
    return [str(ip) for ip in ips]


def accepts_gzip(value: str | None) -> bool:
    """Whether an Accept-Encoding header value accepts gzip (``q=0`` refuses it)."""
    if not value:
        return False
    for part in value.split(","):
        coding, _, params = part.strip().partition(";")
        if coding.strip().lower() in ("gzip", "x-gzip", "*"):
            q = params.strip().lower()
            if q.startswith("q="):
                try:
                    return float(q[2:]) > 0
                except ValueError:
                    return True
            return True
    return False


def bind_all(ips: list[str], port: int, attempts: int = 20,
             name: str = "demo server") -> list[socket.socket]:
    """Bound sockets on every address, one port: the first picks it (port 0), the others reuse
    it; on a failure, everything is closed and retried with a new port."""
    last: OSError | None = None
    for _ in range(attempts if port == 0 else 1):
        socks: list[socket.socket] = []
        try:
            p = port
            for ip in ips:
                sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                socks.append(sock)
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                sock.bind((ip, p))
                p = sock.getsockname()[1]
            return socks
        except OSError as exc:
            last = exc
            for sock in socks:
                sock.close()
    raise SystemExit(f"{name}: cannot bind {ips[0]}..{ips[-1]} on one port: {last}")


#: ``respond(request, base_url)``: the response to a GET or HEAD on the host ``base_url``.
Respond = Callable[["aioweb.BaseRequest", str], Awaitable["aioweb.StreamResponse"]]
#: ``setup(base_urls)`` once the port is known: ``(respond, latency)``, ``latency(base_url)`` the
#: seconds to sleep before answering a request to that host (None: an address with no host), and
#: optionally a dict of more fields for the startup line (which may replace "base_urls").
Setup = Callable[[list[str]], tuple]


async def serve(ips: list[str], port: int, setup: Setup, *, access_log: Path | None,
                parent_pid: int, watch_stdin: bool, name: str = "demo server",
                hostnames: list[str] | None = None) -> None:
    """Serve on every address of ``ips`` until a signal, the parent's death or EOF on stdin.
    The base URLs name the addresses, or ``hostnames`` (one per address: a client resolves them
    itself, e.g. ``curl --resolve``)."""
    from aiohttp import web as aioweb

    log = open(access_log, "a", encoding="utf-8") if access_log else None  # noqa: ASYNC230 - once, before serving
    state: dict[str, Any] = {}

    async def handler(request: aioweb.BaseRequest) -> aioweb.StreamResponse:
        t0 = time.time()
        sock = request.transport.get_extra_info("sockname") if request.transport else None
        local_ip = sock[0] if sock else ips[0]
        base = state["base_by_ip"].get(local_ip)
        path = request.raw_path
        delay = state["latency"](base)
        if delay:
            await asyncio.sleep(delay)
        if base is None:
            resp = aioweb.Response(status=421, text="misdirected request\n")
        elif request.method not in ("GET", "HEAD"):
            resp = aioweb.Response(status=405, headers={"Allow": "GET, HEAD"})
        else:
            try:
                resp = await state["respond"](request, base)
            except Exception:   # a generator bug: a logged 500, not a dropped connection
                traceback.print_exc()
                resp = aioweb.Response(status=500, text="internal error\n")
        try:
            await resp.prepare(request)
            await resp.write_eof()
        except ConnectionResetError:  # the client went away (e.g. a crawler stopped): not an error
            pass
        finally:
            if log is not None:
                log.write(json.dumps({"t0": t0, "t1": time.time(), "host": f"{local_ip}:{state['port']}",
                                      "method": request.method, "path": path, "status": resp.status,
                                      "ua": request.headers.get("User-Agent", "")}) + "\n")
                log.flush()
        return resp

    # signal handlers first: a SIGTERM right after the startup line must still exit cleanly
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        try:
            loop.add_signal_handler(sig, stop.set)
        except (NotImplementedError, RuntimeError):
            pass

    server = aioweb.Server(handler, access_log=None)
    runner = aioweb.ServerRunner(server, handle_signals=False, shutdown_timeout=1.0)
    await runner.setup()
    socks = bind_all(ips, port, name=name)
    port = socks[0].getsockname()[1]
    base_urls = [f"http://{host}:{port}" for host in (hostnames or ips)]
    state["port"] = port
    state["base_by_ip"] = dict(zip(ips, base_urls))
    state["respond"], state["latency"], *extra = setup(base_urls)
    for sock in socks:
        await aioweb.SockSite(runner, sock, backlog=1024, shutdown_timeout=1.0).start()
    sys.stdout.write(json.dumps({"port": port, "base_urls": base_urls, **(extra[0] if extra else {})}) + "\n")
    sys.stdout.flush()

    async def watch_parent() -> None:
        while not stop.is_set():
            if parent_pid and os.getppid() != parent_pid:
                stop.set()
            await asyncio.sleep(0.5)

    tasks = [asyncio.ensure_future(watch_parent())]
    if watch_stdin:
        def read_to_eof() -> None:   # a daemon thread: it never holds up the exit
            try:
                sys.stdin.buffer.read()
            except (OSError, ValueError):
                pass
            try:
                loop.call_soon_threadsafe(stop.set)
            except RuntimeError:   # the loop is already closed
                pass
        threading.Thread(target=read_to_eof, name="watch-stdin", daemon=True).start()
    try:
        await stop.wait()
    finally:
        for t in tasks:
            t.cancel()
        try:
            await asyncio.wait_for(runner.cleanup(), 2.0)
        except (TimeoutError, Exception):
            pass
        if log is not None:
            log.close()


def run_main(serve_coro: Coroutine[Any, Any, None]) -> None:
    """Run a server coroutine on uvloop if there is one, then exit at once (``os._exit``): the
    stdin watcher thread may still sit in read(), and nothing should wait for it."""
    try:
        import uvloop
        uvloop.install()
    except ImportError:
        pass
    try:
        asyncio.run(serve_coro)
    except KeyboardInterrupt:
        pass
    sys.stdout.flush()
    os._exit(0)


# ----------------------------------------------------------------------------------------------
# the parent side


def read_access_log(path: Path | str) -> list[dict]:
    """The access log's records (complete lines only)."""
    out: list[dict] = []
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        return out
    for line in text.splitlines():
        if line.strip():
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError:
                pass
    return out


def stop_process(proc: subprocess.Popen) -> None:
    """End a server subprocess: EOF on its stdin, SIGTERM, and SIGKILL after 5 s."""
    if proc.poll() is not None:
        return
    try:
        if proc.stdin:
            proc.stdin.close()
    except OSError:
        pass
    try:
        proc.terminate()
        proc.wait(5)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    except OSError:
        pass


class ServerProcess:
    """A server subprocess while the context is open; subclasses say which command runs it
    (``command``, which must print the startup line) and what to build from its base URLs
    (``started``)."""

    name = "demo server"

    def __init__(self, *, access_log: Path | str | None = None, ip_base: str = "127.0.0.2",
                 port: int = 0, start_timeout: float = 30.0) -> None:
        self.access_log = Path(access_log) if access_log is not None else None
        self.ip_base = ip_base
        self.start_timeout = start_timeout
        self._port_req = port
        self.port: int | None = None
        self.base_urls: list[str] = []
        self.proc: subprocess.Popen | None = None
        self._finalizer: weakref.finalize | None = None

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc else None

    def command(self) -> list[str]:
        raise NotImplementedError

    def started(self) -> None:
        """Called once ``port`` and ``base_urls`` are known."""

    def process_args(self) -> list[str]:
        """The options every server command takes: addresses, port, the parent and the log."""
        cmd = ["--ip-base", self.ip_base, "--port", str(self._port_req),
               "--parent-pid", str(os.getpid()), "--watch-stdin"]
        if self.access_log is not None:
            cmd += ["--access-log", str(self.access_log)]
        return cmd

    def start(self) -> Self:
        if self.proc is not None:
            raise RuntimeError(f"{type(self).__name__} already started")
        env = dict(os.environ)
        src = str(Path(__file__).resolve().parents[2])   # make `-m skitter...` work uninstalled
        env["PYTHONPATH"] = src + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
        self._stderr = tempfile.TemporaryFile()
        self.proc = subprocess.Popen(self.command(), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self._stderr, env=env, close_fds=True)
        # stops the process if the object is dropped unstopped, or at interpreter exit
        self._finalizer = weakref.finalize(self, stop_process, self.proc)
        try:
            line = self._read_line(self.start_timeout)
            info = json.loads(line)
        except Exception as exc:
            stop_process(self.proc)
            self._stderr.seek(0)
            err = self._stderr.read().decode(errors="replace")[-2000:]
            self.stop()
            self.proc = None
            raise RuntimeError(f"{self.name} did not start: {exc}\n{err}") from None
        self.port = info["port"]
        self.base_urls = info["base_urls"]
        self.info = info
        self.started()
        return self

    def _read_line(self, timeout: float) -> str:
        assert self.proc is not None and self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        deadline = time.monotonic() + timeout
        buf = b""
        while b"\n" not in buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"no startup line within {timeout} s")
            ready, _, _ = select.select([fd], [], [], left)
            if ready:
                chunk = os.read(fd, 4096)
                if not chunk:
                    raise RuntimeError(f"exited with status {self.proc.wait()}")
                buf += chunk
        return buf.split(b"\n", 1)[0].decode()

    def stop(self) -> None:
        if self.proc is None:
            return
        stop_process(self.proc)
        if self._finalizer is not None:
            self._finalizer.detach()
        for f in (self.proc.stdin, self.proc.stdout):
            try:
                if f:
                    f.close()
            except OSError:
                pass
        try:
            self._stderr.close()
        except Exception:
            pass

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def access_records(self) -> list[dict]:
        return read_access_log(self.access_log) if self.access_log else []
