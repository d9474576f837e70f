"""A static web server for end-to-end tests: serves a directory tree (a web nobody here wrote, such
as Debian's Python documentation) on 127.0.0.1 with a robots.txt of the test's choosing, and logs
every request with its start and end time, so tests can check politeness from the server's side."""

from __future__ import annotations

import asyncio
import mimetypes
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from aiohttp import web


@dataclass(frozen=True)
class Hit:
    t0: float
    t1: float
    path: str
    status: int


class ThreadedServer:
    """An aiohttp app serving ``self._handle`` on 127.0.0.1 (a free port, ``self.port``) in a
    thread of its own, as a context manager; ``self.log`` for the subclass's record of requests."""

    methods = "GET"
    what = "server"
    host = "127.0.0.1"   # a subclass may listen on another loopback address (another host to a crawler)

    def __init__(self) -> None:
        self.log: list[Hit] = []
        self._lock = threading.Lock()
        self._started = threading.Event()
        self.port = 0

    @property
    def base(self) -> str:
        return f"http://{self.host}:{self.port}"

    async def respond(self, request: web.Request) -> web.StreamResponse:
        """A subclass's answer; one it has already prepared (a body cut short) is left as it is."""
        raise NotImplementedError

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        t0 = time.time()
        resp = await self.respond(request)
        if not resp.prepared:
            await resp.prepare(request)
            await resp.write_eof()
        with self._lock:
            self.log.append(Hit(t0, time.time(), request.path_qs, resp.status))
        return resp

    def _serve(self) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        app = web.Application()
        app.router.add_route(self.methods, "/{tail:.*}", self._handle)
        runner = web.AppRunner(app, access_log=None)
        loop.run_until_complete(runner.setup())
        site = web.TCPSite(runner, self.host, 0)
        loop.run_until_complete(site.start())
        self.port = site._server.sockets[0].getsockname()[1]
        self._started.set()
        loop.run_forever()
        loop.run_until_complete(runner.cleanup())
        loop.close()

    def __enter__(self):
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()
        if not self._started.wait(10):
            raise RuntimeError(f"{self.what} did not start")
        return self

    def __exit__(self, *exc) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)


class StaticSite(ThreadedServer):
    what = "static site"

    def __init__(self, root: Path, *, robots_txt: str = "", latency: float = 0.0) -> None:
        self.root = Path(root).resolve()
        self.robots_txt = robots_txt
        self.latency = latency
        super().__init__()

    async def respond(self, request: web.Request) -> web.StreamResponse:
        if self.latency:
            await asyncio.sleep(self.latency)
        if request.path == "/robots.txt":
            return web.Response(text=self.robots_txt, content_type="text/plain")
        rel = request.path.lstrip("/")
        target = (self.root / rel).resolve()
        if target.is_dir():
            target = target / "index.html"
        if self.root not in target.parents and target != self.root or not target.is_file():
            return web.Response(status=404, text="not found")
        ctype = mimetypes.guess_type(target.name)[0] or "application/octet-stream"
        return web.Response(body=target.read_bytes(), content_type=ctype)

def hub_site(root: Path, pages: int, text: str = "page {i}") -> Path:
    """``root`` made a site of a home page linking ``pages`` pages, ``/p0.html`` ..., each a
    paragraph of ``text`` (``{i}``: the page's number). Returns ``root``."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "index.html").write_text("<html><body>" + "".join(
        f'<a href="/p{i}.html">page {i}</a>' for i in range(pages)) + "</body></html>")
    for i in range(pages):
        (root / f"p{i}.html").write_text(f"<html><body><p>{text.format(i=i)}</p></body></html>")
    return root


def stored_records(directory: Path) -> int:
    """Fetch records a crawl has committed so far (0 if its database is not there yet)."""
    import sqlite3

    try:
        conn = sqlite3.connect(f"file:{Path(directory) / 'crawl.db'}?mode=ro", uri=True)
        try:
            return conn.execute("SELECT count(*) FROM fetches").fetchone()[0]
        finally:
            conn.close()
    except sqlite3.Error:
        return 0


def wait_for_progress(directory: Path, proc, pages: int = 30, timeout: float = 60) -> None:
    """Until the crawl in ``directory`` has stored ``pages`` more records (or has ended), so a test
    interrupts it mid-crawl whatever the machine's load."""
    deadline = time.time() + timeout
    first = stored_records(directory)
    while time.time() < deadline and proc.poll() is None:
        if stored_records(directory) >= first + pages:
            return
        time.sleep(0.1)


# -- `skitter serve` for the web UI tests ------------------------------------------------------------

CHROMIUM_ARGS = ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Served:
    """`skitter serve [DIR] [args]` on a free loopback port, in a subprocess."""

    def __init__(self, directory: Path | None, *args: str) -> None:
        import socket
        import subprocess
        import sys

        self.directory = directory
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        where = [] if directory is None else [str(directory)]   # None: serve --redis URL alone
        self.proc = subprocess.Popen([sys.executable, "-m", "skitter", "serve", *where, "--port",
                                      str(self.port), *args],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"skitter serve exited: {self.proc.stderr.read()}")
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                return
            except OSError:
                time.sleep(0.1)
        self.stop()
        raise AssertionError("skitter serve did not start listening")

    def stop(self) -> None:
        import subprocess

        self.proc.terminate()
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def skitter(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    """``python -m skitter ARGS`` as a user runs it, output captured."""
    return subprocess.run([sys.executable, "-m", "skitter", *args], capture_output=True, text=True,
                          timeout=timeout)


def one_error_line(res: subprocess.CompletedProcess) -> str:
    """The one line a failed command printed (asserting it failed, with one line, no traceback)."""
    assert res.returncode != 0
    assert "Traceback" not in res.stderr
    lines = [line for line in res.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, res.stderr
    return lines[0]
