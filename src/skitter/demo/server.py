"""Serve the demo web over HTTP on loopback addresses (127.0.0.2, 127.0.0.3, ...), one port.

    python -m skitter.demo.server --hosts 8 --pages 3000 --seed 1 [--latency-ms 0]
                                  [--access-log FILE] [--ip-base 127.0.0.2] [--port 0]

One aiohttp server is bound on ``hosts`` consecutive loopback addresses, all on the same port (the
first bind picks a free port, the others reuse it; if one fails, everything is retried with a new
port). The host is chosen by the local address a request arrived on, not by its Host header. When
listening, it prints ONE JSON line ``{"port": P, "base_urls": [...]}`` to stdout and flushes.

Access log (``--access-log``): one JSON line per request, written and flushed when the response
has been written: ``{"t0", "t1", "host": "127.0.0.3:P", "path", "status", "ua"}`` (t0/t1 are
time.time() at request start and response end; ``path`` includes the query).

It exits on SIGTERM/SIGINT, when its parent process dies (--parent-pid, polled), and with
``--watch-stdin`` when stdin reaches EOF. Only 127.0.0.0/8 addresses are accepted.

``DemoServer`` runs this in a subprocess, as a context manager, for tests and ``skitter demo``. The
serving machinery is shared with the wild web's server (``serving.py``).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .serving import ServerProcess, accepts_gzip, addresses, read_access_log, run_main, serve
from .web import DemoConfig, DemoWeb

__all__ = ["DemoServer", "read_access_log", "main"]


# ----------------------------------------------------------------------------------------------
# the subprocess side


async def _serve(args: argparse.Namespace) -> None:
    from aiohttp import web as aioweb

    config = DemoConfig(seed=args.seed, hosts=args.hosts, pages=args.pages,
                        page_kb=tuple(args.page_kb), topics=args.topics,
                        cross_host_links=args.cross_host_links, popular_links=args.popular_links,
                        crawl_delay=args.crawl_delay)
    ips = addresses(args.ip_base, args.hosts)
    latency = max(0.0, args.latency_ms) / 1000.0

    def setup(base_urls: list[str]):
        web = DemoWeb(config, base_urls)

        async def respond(request: aioweb.BaseRequest, base: str) -> aioweb.StreamResponse:
            hdr = request.headers
            r = web.respond(base, request.raw_path, accept_gzip=accepts_gzip(hdr.get("Accept-Encoding")),
                            if_none_match=hdr.get("If-None-Match"),
                            if_modified_since=hdr.get("If-Modified-Since"))
            # (for HEAD, aiohttp sends the headers and Content-Length but no body)
            return aioweb.Response(status=r.status, body=r.body, headers=r.headers)

        return respond, lambda base: latency

    await serve(ips, args.port, setup, access_log=args.access_log, parent_pid=args.parent_pid,
                watch_stdin=args.watch_stdin)


def _parse_args(argv: list[str] | None) -> argparse.Namespace:
    d = DemoConfig()
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
    p.add_argument("--access-log", type=Path, default=None)
    p.add_argument("--ip-base", default="127.0.0.2")
    p.add_argument("--port", type=int, default=0, help="0: pick a free port")
    p.add_argument("--parent-pid", type=int, default=0, help="exit when this parent dies")
    p.add_argument("--watch-stdin", action="store_true", help="exit at EOF on stdin")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    run_main(_serve(_parse_args(argv)))


# ----------------------------------------------------------------------------------------------
# the parent side


class DemoServer(ServerProcess):
    """The demo web served by a subprocess while the context is open.

    >>> with DemoServer(DemoConfig(pages=500)) as srv:
    ...     srv.base_urls        # ["http://127.0.0.2:P", ...]
    ...     srv.web              # a local DemoWeb with the same config and base URLs: ground truth
    """

    def __init__(self, config: DemoConfig = DemoConfig(), *, latency_ms: float = 0,
                 access_log: Path | str | None = None, ip_base: str = "127.0.0.2",
                 port: int = 0, start_timeout: float = 30.0) -> None:
        super().__init__(access_log=access_log, ip_base=ip_base, port=port, start_timeout=start_timeout)
        self.config = config
        self.latency_ms = latency_ms
        self.web: DemoWeb | None = None

    def command(self) -> list[str]:
        c = self.config
        return [sys.executable, "-m", "skitter.demo.server", "--hosts", str(c.hosts),
                "--pages", str(c.pages), "--seed", str(c.seed),
                "--page-kb", f"{c.page_kb[0]},{c.page_kb[1]}", "--topics", str(c.topics),
                "--cross-host-links", repr(c.cross_host_links), "--popular-links", repr(c.popular_links),
                "--crawl-delay", repr(c.crawl_delay),
                "--latency-ms", repr(float(self.latency_ms)), *self.process_args()]

    def started(self) -> None:
        self.web = DemoWeb(self.config, self.base_urls)


if __name__ == "__main__":
    main()
