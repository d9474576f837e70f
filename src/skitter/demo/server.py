"""Serve the demo web over HTTP on loopback addresses (127.0.0.2, 127.0.0.3, ...), one port.

    python -m skitter.demo.server --hosts 8 --pages 3000 --seed 1 [--latency-ms 0]
                                  [--access-log FILE] [--ip-base 127.0.0.2] [--port 0]
                                  [--changing [--change-speed X] [--static-share S]
                                   [--min-interval SECONDS] [--max-interval SECONDS]
                                   [--noise-share S] [--new-per-hour N] [--link-share S]
                                   [--start-epoch T]]
                                  [--hidden [JSON]]

One aiohttp server is bound on ``hosts`` consecutive loopback addresses, all on the same port (the
first bind picks a free port, the others reuse it; if one fails, everything is retried with a new
port). The host is chosen by the local address a request arrived on, not by its Host header. When
listening, it prints ONE JSON line ``{"port": P, "base_urls": [...]}`` to stdout and flushes; with
``--changing`` (the changing web, docs/recrawl.md) the line also has ``"start_epoch"``, the
wall-clock time its pages' versions count from (``--start-epoch``, or the time it started), so
that ``DemoWeb(config, base_urls, start_epoch=...)`` reproduces its ground truth in-process.

Access log (``--access-log``): one JSON line per request, written and flushed when the response
has been written: ``{"t0", "t1", "host": "127.0.0.3:P", "path", "status", "ua"}`` (t0/t1 are
time.time() at request start and response end; ``path`` includes the query).

``--hidden`` adds one host after the others (127.0.0.10 by default) serving the hidden site of
``hidden.py`` (a search-form-only catalogue), configured by an optional JSON object of
``HiddenConfig`` fields (``--hidden '{"records": 500}'``); the startup line then also has
``"hidden_url"``. Without it nothing changes.

It exits on SIGTERM/SIGINT, when its parent process dies (--parent-pid, polled), and with
``--watch-stdin`` when stdin reaches EOF. Only 127.0.0.0/8 addresses are accepted.

``DemoServer`` runs this in a subprocess, as a context manager, for tests and ``skitter demo``.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import hashlib
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
from dataclasses import replace
from pathlib import Path

from .changing import ChangeConfig
from .hidden import HiddenConfig, HiddenSite
from .web import DemoConfig, DemoWeb

__all__ = ["DemoServer", "read_access_log", "main"]


# ----------------------------------------------------------------------------------------------
# the subprocess side


def _addresses(ip_base: str, hosts: int) -> list[str]:
    base = ipaddress.IPv4Address(ip_base)
    ips = [base + i for i in range(hosts)]
    for ip in ips:
        if ip not in ipaddress.IPv4Network("127.0.0.0/8"):
            raise SystemExit(f"demo server: {ip} is not a loopback address (127.0.0.0/8 only)")
    return [str(ip) for ip in ips]


def _accepts_gzip(value: str | None) -> bool:
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


def _bind_all(ips: list[str], port: int, attempts: int = 20) -> list[socket.socket]:
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
    raise SystemExit(f"demo server: cannot bind {ips[0]}..{ips[-1]} on one port: {last}")


async def _serve(args: argparse.Namespace) -> None:
    from aiohttp import web as aioweb

    config = DemoConfig(seed=args.seed, hosts=args.hosts, pages=args.pages,
                        page_kb=tuple(args.page_kb), topics=args.topics,
                        cross_host_links=args.cross_host_links, popular_links=args.popular_links,
                        crawl_delay=args.crawl_delay, changing=_change_config(args))
    start_epoch = args.start_epoch if args.start_epoch is not None else time.time()
    ips = _addresses(args.ip_base, args.hosts + (1 if args.hidden is not None else 0))
    latency = max(0.0, args.latency_ms) / 1000.0
    log = open(args.access_log, "a", encoding="utf-8") if args.access_log else None
    state: dict[str, object] = {}
    flaky = _Flaky(args.flaky, args.flaky_share)

    async def handler(request: aioweb.BaseRequest) -> aioweb.StreamResponse:
        t0 = time.time()
        sock = request.transport.get_extra_info("sockname") if request.transport else None
        local_ip = sock[0] if sock else ips[0]
        base = state["base_by_ip"].get(local_ip)  # type: ignore[union-attr]
        path = request.raw_path
        if latency:
            await asyncio.sleep(latency)
        if base is None:
            resp = aioweb.Response(status=421, text="misdirected request\n")
        elif request.method not in ("GET", "HEAD"):
            resp = aioweb.Response(status=405, headers={"Allow": "GET, HEAD"})
        elif base == state.get("hidden_url"):
            r = state["hidden"].respond(path)  # type: ignore[union-attr]
            resp = aioweb.Response(status=r.status, body=r.body, headers=r.headers)
        elif (refusal := flaky.refuse(ips.index(local_ip), path)) is not None:
            resp = aioweb.Response(status=refusal, headers={"Retry-After": "1"}, text="try again later\n")
        else:
            hdr = request.headers
            try:
                r = state["web"].respond(  # type: ignore[union-attr]
                    base, path, accept_gzip=_accepts_gzip(hdr.get("Accept-Encoding")),
                    if_none_match=hdr.get("If-None-Match"),
                    if_modified_since=hdr.get("If-Modified-Since"), now=time.time())
                # (for HEAD, aiohttp sends the headers and Content-Length but no body)
                resp = aioweb.Response(status=r.status, body=r.body, headers=r.headers)
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
                                      "path": path, "status": resp.status,
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
    socks = _bind_all(ips, args.port)
    port = socks[0].getsockname()[1]
    base_urls = [f"http://{ip}:{port}" for ip in ips]
    state["port"] = port
    state["base_by_ip"] = dict(zip(ips, base_urls))
    startup: dict[str, object] = {"port": port, "base_urls": base_urls}
    if args.hidden is not None:   # the last address is the hidden site's
        hidden_url = base_urls.pop()
        state["hidden_url"] = startup["hidden_url"] = hidden_url
        state["hidden"] = HiddenSite(HiddenConfig(**json.loads(args.hidden)), hidden_url)
    state["web"] = DemoWeb(config, base_urls, start_epoch=start_epoch)
    for sock in socks:
        await aioweb.SockSite(runner, sock, backlog=1024, shutdown_timeout=1.0).start()
    if config.changing is not None:
        startup["start_epoch"] = start_epoch
    sys.stdout.write(json.dumps(startup) + "\n")
    sys.stdout.flush()

    async def watch_parent() -> None:
        while not stop.is_set():
            if args.parent_pid and os.getppid() != args.parent_pid:
                stop.set()
            await asyncio.sleep(0.5)

    tasks = [asyncio.ensure_future(watch_parent())]
    if args.watch_stdin:
        def watch_stdin() -> None:   # a daemon thread: it never holds up the exit
            try:
                sys.stdin.buffer.read()
            except (OSError, ValueError):
                pass
            try:
                loop.call_soon_threadsafe(stop.set)
            except RuntimeError:   # the loop is already closed
                pass
        threading.Thread(target=watch_stdin, name="watch-stdin", daemon=True).start()
    try:
        await stop.wait()
    finally:
        for t in tasks:
            t.cancel()
        try:
            await asyncio.wait_for(runner.cleanup(), 2.0)
        except (asyncio.TimeoutError, Exception):
            pass
        if log is not None:
            log.close()


class _Flaky:
    """Transient refusals: on the flaky hosts, a share of the paths (chosen by a hash, so the
    same ones every run) answer their FIRST request with 503 (even host indexes) or 429 (odd),
    Retry-After: 1, and 200 afterwards. A polite crawler that retries gets the same URL set as
    from a server that never refuses. robots.txt is never refused."""

    def __init__(self, hosts: list[int], share: float) -> None:
        self.hosts = set(hosts)
        self.share = share
        self.seen: set[tuple[int, str]] = set()

    def refuse(self, g: int, path: str) -> int | None:
        if g not in self.hosts or path == "/robots.txt" or (g, path) in self.seen:
            return None
        self.seen.add((g, path))
        bucket = int.from_bytes(hashlib.blake2b(f"{g}:{path}".encode(), digest_size=4).digest(), "big")
        if bucket / 2**32 >= self.share:
            return None
        return 503 if g % 2 == 0 else 429


def _change_config(args: argparse.Namespace) -> ChangeConfig | None:
    if not args.changing:
        return None
    return ChangeConfig(speed=args.change_speed, static_share=args.static_share,
                        min_interval=args.min_interval, max_interval=args.max_interval,
                        noise_share=args.noise_share, new_per_hour=args.new_per_hour,
                        link_share=args.link_share)


def _parse_args(argv: list[str] | None) -> argparse.Namespace:
    d = DemoConfig()
    c = ChangeConfig()
    p = argparse.ArgumentParser(prog="python -m skitter.demo.server",
                                description="Serve the skitter demo web on loopback addresses.")
    p.add_argument("--hosts", type=int, default=d.hosts)
    p.add_argument("--pages", type=int, default=d.pages)
    p.add_argument("--seed", type=int, default=d.seed)
    p.add_argument("--page-kb", type=lambda s: [int(x) for x in s.split(",")],
                   default=list(d.page_kb), help="body size range in KiB, e.g. 2,12")
    p.add_argument("--topics", type=int, default=d.topics)
    p.add_argument("--cross-host-links", type=float, default=d.cross_host_links)
    p.add_argument("--popular-links", type=float, default=d.popular_links,
                   help="share of content links to the popular articles")
    p.add_argument("--crawl-delay", type=float, default=d.crawl_delay)
    p.add_argument("--latency-ms", type=float, default=0.0, help="sleep this long per request")
    p.add_argument("--flaky", type=lambda s: [int(x) for x in s.split(",") if x], default=[],
                   help="host indexes (e.g. 2,5) where a share of paths first answer 503/429 with Retry-After")
    p.add_argument("--flaky-share", type=float, default=0.1, help="share of a flaky host's paths refused once")
    p.add_argument("--access-log", type=Path, default=None)
    p.add_argument("--ip-base", default="127.0.0.2")
    p.add_argument("--port", type=int, default=0, help="0: pick a free port")
    p.add_argument("--parent-pid", type=int, default=0, help="exit when this parent dies")
    p.add_argument("--watch-stdin", action="store_true", help="exit at EOF on stdin")
    ch = p.add_argument_group("the changing web (docs/recrawl.md)")
    ch.add_argument("--changing", action="store_true", help="pages change as Poisson processes")
    ch.add_argument("--change-speed", type=float, default=c.speed,
                    help="time compression: model seconds per wall-clock second")
    ch.add_argument("--static-share", type=float, default=c.static_share,
                    help="share of pages that never change")
    ch.add_argument("--min-interval", type=float, default=c.min_interval,
                    help="mean seconds between changes of the fastest pages (model time)")
    ch.add_argument("--max-interval", type=float, default=c.max_interval,
                    help="mean seconds between changes of the slowest changing pages (model time)")
    ch.add_argument("--noise-share", type=float, default=c.noise_share,
                    help="share of pages with per-request noise that is no change")
    ch.add_argument("--new-per-hour", type=float, default=c.new_per_hour,
                    help="new articles per host and model hour")
    ch.add_argument("--link-share", type=float, default=c.link_share,
                    help="share of changes that also link another article")
    ch.add_argument("--start-epoch", type=float, default=None,
                    help="the clock's start (default: now)")
    p.add_argument("--hidden", nargs="?", const="{}", default=None, metavar="JSON",
                   help="also serve the hidden site (hidden.py) on the next address; optional "
                        "HiddenConfig fields as a JSON object")
    args = p.parse_args(argv)
    try:
        _change_config(args)
    except ValueError as exc:
        p.error(str(exc))
    return args


def main(argv: list[str] | None = None) -> None:
    args = _parse_args(argv)
    try:
        import uvloop  # type: ignore[import-not-found]
        uvloop.install()
    except ImportError:
        pass
    try:
        asyncio.run(_serve(args))
    except KeyboardInterrupt:
        pass
    # the stdin watcher thread may still sit in read(): do not wait for it
    sys.stdout.flush()
    os._exit(0)


# ----------------------------------------------------------------------------------------------
# the parent side


def read_access_log(path: Path | str) -> list[dict]:
    """The access log's records (complete lines only)."""
    out = []
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


def _stop_process(proc: subprocess.Popen) -> None:
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


def _with_changes(config: DemoConfig, changing: bool | ChangeConfig, **overrides: float | None) -> DemoConfig:
    """``config`` with the changing web ``DemoServer``'s keywords ask for."""
    change = changing if isinstance(changing, ChangeConfig) else config.changing
    if changing is True and change is None:
        change = ChangeConfig()
    given = {k: v for k, v in overrides.items() if v is not None}
    if given and change is None:
        raise ValueError(f"{', '.join(given)}: only for a changing web (changing=True)")
    if change is not None and given:
        change = replace(change, **given)
    return config if change is config.changing else replace(config, changing=change)


class DemoServer:
    """The demo web served by a subprocess while the context is open.

    >>> with DemoServer(DemoConfig(pages=500)) as srv:
    ...     srv.base_urls        # ["http://127.0.0.2:P", ...]
    ...     srv.web              # a local DemoWeb with the same config and base URLs: ground truth

    ``hidden=True`` (or a ``HiddenConfig``) also serves the hidden site on the next address:
    ``srv.hidden_url`` and ``srv.hidden_site`` (its ground truth) are then set.
    """

    def __init__(self, config: DemoConfig = DemoConfig(), *, latency_ms: float = 0,
                 access_log: Path | str | None = None, ip_base: str = "127.0.0.2",
                 port: int = 0, start_timeout: float = 30.0, flaky: tuple[int, ...] = (),
                 flaky_share: float = 0.1,
                 changing: bool | ChangeConfig = False, change_speed: float | None = None,
                 static_share: float | None = None, min_interval: float | None = None,
                 max_interval: float | None = None, start_epoch: float | None = None,
                 hidden: bool | HiddenConfig = False) -> None:
        """The changing web: ``config.changing``, or ``changing=True`` (the defaults) or a
        ``ChangeConfig``, with the server flags' overrides (``change_speed`` ...); ``start_epoch``
        pins its clock (default: the server's start). ``self.start_epoch`` is the one it used.
        ``hidden``: also serve the hidden site (``HiddenConfig``) on the next address."""
        self.config = _with_changes(config, changing, speed=change_speed, static_share=static_share,
                                    min_interval=min_interval, max_interval=max_interval)
        self.start_epoch = start_epoch
        self.hidden_config = (HiddenConfig() if hidden is True
                              else hidden if isinstance(hidden, HiddenConfig) else None)
        self.hidden_url: str | None = None
        self.hidden_site: HiddenSite | None = None
        self.latency_ms = latency_ms
        self.flaky = tuple(flaky)
        self.flaky_share = flaky_share
        self.access_log = Path(access_log) if access_log is not None else None
        self.ip_base = ip_base
        self.start_timeout = start_timeout
        self._port_req = port
        self.port: int | None = None
        self.base_urls: list[str] = []
        self.web: DemoWeb | None = None
        self.proc: subprocess.Popen | None = None
        self._finalizer: weakref.finalize | None = None

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc else None

    def command(self) -> list[str]:
        c = self.config
        cmd = [sys.executable, "-m", "skitter.demo.server", "--hosts", str(c.hosts),
               "--pages", str(c.pages), "--seed", str(c.seed),
               "--page-kb", f"{c.page_kb[0]},{c.page_kb[1]}", "--topics", str(c.topics),
               "--cross-host-links", repr(c.cross_host_links), "--popular-links", repr(c.popular_links),
               "--crawl-delay", repr(c.crawl_delay),
               "--latency-ms", repr(float(self.latency_ms)), "--ip-base", self.ip_base,
               "--port", str(self._port_req), "--parent-pid", str(os.getpid()), "--watch-stdin"]
        if self.access_log is not None:
            cmd += ["--access-log", str(self.access_log)]
        if self.flaky:
            cmd += ["--flaky", ",".join(map(str, self.flaky)), "--flaky-share", repr(self.flaky_share)]
        ch = c.changing
        if ch is not None:
            cmd += ["--changing", "--change-speed", repr(ch.speed), "--static-share", repr(ch.static_share),
                    "--min-interval", repr(ch.min_interval), "--max-interval", repr(ch.max_interval),
                    "--noise-share", repr(ch.noise_share), "--new-per-hour", repr(ch.new_per_hour),
                    "--link-share", repr(ch.link_share)]
            if self.start_epoch is not None:
                cmd += ["--start-epoch", repr(self.start_epoch)]
        if self.hidden_config is not None:
            cmd += ["--hidden", json.dumps(dataclasses.asdict(self.hidden_config))]
        return cmd

    def start(self) -> "DemoServer":
        if self.proc is not None:
            raise RuntimeError("DemoServer already started")
        env = dict(os.environ)
        src = str(Path(__file__).resolve().parents[2])   # make `-m skitter...` work uninstalled
        env["PYTHONPATH"] = src + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
        self._stderr = tempfile.TemporaryFile()
        self.proc = subprocess.Popen(self.command(), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self._stderr, env=env, close_fds=True)
        # stops the process if the object is dropped unstopped, or at interpreter exit
        self._finalizer = weakref.finalize(self, _stop_process, self.proc)
        try:
            line = self._read_line(self.start_timeout)
            info = json.loads(line)
        except Exception as exc:
            _stop_process(self.proc)
            self._stderr.seek(0)
            err = self._stderr.read().decode(errors="replace")[-2000:]
            self.stop()
            self.proc = None
            raise RuntimeError(f"demo server did not start: {exc}\n{err}") from None
        self.port = info["port"]
        self.base_urls = info["base_urls"]
        self.start_epoch = info.get("start_epoch", self.start_epoch)
        self.web = DemoWeb(self.config, self.base_urls, start_epoch=self.start_epoch)
        if self.hidden_config is not None:
            self.hidden_url = info["hidden_url"]
            self.hidden_site = HiddenSite(self.hidden_config, info["hidden_url"])
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
        _stop_process(self.proc)
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

    def __enter__(self) -> "DemoServer":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def access_records(self) -> list[dict]:
        return read_access_log(self.access_log) if self.access_log else []


if __name__ == "__main__":
    main()
