"""Serve the demo web over HTTP on loopback addresses (127.0.0.2, 127.0.0.3, ...), one port.

    python -m skitter.demo.server --hosts 8 --pages 3000 --seed 1 [--latency-ms 0]
                                  [--access-log FILE] [--ip-base 127.0.0.2] [--port 0]
                                  [--changing [--change-speed X] [--static-share S]
                                   [--min-interval SECONDS] [--max-interval SECONDS]
                                   [--noise-share S] [--new-per-hour N] [--link-share S]
                                   [--start-epoch T] [--change-log FILE]]
                                  [--hidden [JSON]]

One aiohttp server is bound on ``hosts`` consecutive loopback addresses, all on the same port (the
first bind picks a free port, the others reuse it; if one fails, everything is retried with a new
port). The host is chosen by the local address a request arrived on, not by its Host header. When
listening, it prints ONE JSON line ``{"port": P, "base_urls": [...]}`` to stdout and flushes; with
``--changing`` (the changing web, docs/recrawl.md) the line also has ``"start_epoch"``, the
wall-clock time its pages' versions count from (``--start-epoch``, or the time it started), so
that ``DemoWeb(config, base_urls, start_epoch=...)`` reproduces its ground truth in-process.
``--change-log FILE``: when it stops (SIGTERM, SIGINT, EOF on stdin, its parent gone; not
SIGKILL), the server writes the ground truth of its whole run there, the JSON ``skitter eval-fresh
--changes`` reads (``DemoWeb.change_log_document(start_epoch, stop time)``).

Access log (``--access-log``): one JSON line per request, written and flushed when the response
has been written: ``{"t0", "t1", "host": "127.0.0.3:P", "method", "path", "status", "ua"}``
(t0/t1 are time.time() at request start and response end; ``path`` includes the query).

``--hidden`` adds one host after the others (127.0.0.10 by default) serving the hidden site of
``hidden.py`` (a search-form-only catalogue), configured by an optional JSON object of
``HiddenConfig`` fields (``--hidden '{"records": 500}'``); the startup line then also has
``"hidden_url"``. Without it nothing changes.

It exits on SIGTERM/SIGINT, when its parent process dies (--parent-pid, polled), and with
``--watch-stdin`` when stdin reaches EOF. Only 127.0.0.0/8 addresses are accepted.

``--ignore-conditional 1,3`` makes those hosts answer conditional requests (If-None-Match,
If-Modified-Since) as plain GETs, never 304, as many real servers do: an unchanged page comes back
whole, with the same bytes (what a recrawl benchmark wants beside the 304s of the others).

``--flaky 2,3`` makes those hosts refuse the first request of a share of their paths (503 on even,
429 on odd host indexes, Retry-After: 1): transient failures a polite crawler retries through.

``DemoServer`` runs this in a subprocess, as a context manager, for tests and ``skitter demo``. The
serving machinery is shared with the wild web's server (``serving.py``).
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import sys
import time
from dataclasses import replace
from pathlib import Path

from .changing import ChangeConfig
from .hidden import HiddenConfig, HiddenSite
from .serving import ServerProcess, accepts_gzip, addresses, read_access_log, run_main, serve
from .web import DemoConfig, DemoWeb

__all__ = ["DemoServer", "read_access_log", "main"]


# ----------------------------------------------------------------------------------------------
# the subprocess side


async def _serve(args: argparse.Namespace) -> None:
    from aiohttp import web as aioweb

    config = _config(args)
    start_epoch = args.start_epoch if args.start_epoch is not None else time.time()
    ips = addresses(args.ip_base, args.hosts + (1 if args.hidden is not None else 0))
    latency = max(0.0, args.latency_ms) / 1000.0

    state: dict[str, DemoWeb] = {}

    def setup(base_urls: list[str]):
        urls = list(base_urls)
        info: dict[str, object] = {}
        hidden = None
        if args.hidden is not None:   # the last address is the hidden site's
            hidden_url = urls.pop()
            info.update(hidden_url=hidden_url, base_urls=urls)
            hidden = HiddenSite(args.hidden_config, hidden_url)
        if config.changing is not None:
            info["start_epoch"] = start_epoch
        web = state["web"] = DemoWeb(config, urls, start_epoch=start_epoch)
        flaky = _Flaky(args.flaky, args.flaky_share)
        plain = set(args.ignore_conditional)
        index_of = {u: g for g, u in enumerate(urls)}

        async def respond(request: aioweb.BaseRequest, base: str) -> aioweb.StreamResponse:
            path = request.raw_path
            if hidden is not None and base == hidden.base_url:
                r = hidden.respond(path)
            elif (refusal := flaky.refuse(index_of[base], path)) is not None:
                return aioweb.Response(status=refusal, headers={"Retry-After": "1"}, text="try again later\n")
            else:
                hdr = request.headers
                conditional = index_of[base] not in plain
                r = web.respond(base, path, accept_gzip=accepts_gzip(hdr.get("Accept-Encoding")),
                                if_none_match=hdr.get("If-None-Match") if conditional else None,
                                if_modified_since=hdr.get("If-Modified-Since") if conditional else None,
                                now=time.time())
            # (for HEAD, aiohttp sends the headers and Content-Length but no body)
            return aioweb.Response(status=r.status, body=r.body, headers=r.headers)

        return respond, lambda base: latency, info

    await serve(ips, args.port, setup, access_log=args.access_log, parent_pid=args.parent_pid,
                watch_stdin=args.watch_stdin)
    if args.change_log is not None and config.changing is not None and "web" in state:
        write_change_log(state["web"], args.change_log, start_epoch, time.time())


def write_change_log(web: DemoWeb, path: Path | str, t0: float, t1: float) -> None:
    """The changing web's ground truth of ``(t0, t1]`` as ``skitter eval-fresh --changes`` reads it,
    written to ``path`` (atomically: a reader never sees half a file)."""
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(web.change_log_document(t0, t1)), encoding="utf-8")
    tmp.replace(path)


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


def _config(args: argparse.Namespace) -> DemoConfig:
    return DemoConfig(seed=args.seed, hosts=args.hosts, pages=args.pages, page_kb=tuple(args.page_kb),
                      topics=args.topics, cross_host_links=args.cross_host_links,
                      popular_links=args.popular_links, crawl_delay=args.crawl_delay,
                      changing=_change_config(args))


def check_config(config: DemoConfig) -> None:
    """ValueError (one line) for a demo web that cannot be generated, e.g. too few pages for its
    hosts and topics: the generator is cheap (0.3 s for 20,000 pages), so build it once to see."""
    DemoWeb(config, [f"http://127.0.0.1:{i + 1}" for i in range(config.hosts)])


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
    p.add_argument("--ignore-conditional", type=lambda s: [int(x) for x in s.split(",") if x], default=[],
                   help="host indexes (e.g. 1,3) that answer conditional requests in full, never 304")
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
    ch.add_argument("--change-log", type=Path, default=None,
                    help="on exit, write the ground-truth change log of the run to this file (JSON, "
                         "skitter eval-fresh --changes)")
    p.add_argument("--hidden", nargs="?", const="{}", default=None, metavar="JSON",
                   help="also serve the hidden site (hidden.py) on the next address; optional "
                        "HiddenConfig fields as a JSON object")
    args = p.parse_args(argv)
    try:
        check_config(_config(args))
    except ValueError as exc:
        p.error(str(exc))
    if args.hidden is not None:
        args.hidden_config = _hidden_config(p, args.hidden)
    return args


def _hidden_config(p: argparse.ArgumentParser, text: str) -> HiddenConfig:
    """``--hidden``'s JSON object of HiddenConfig fields, or a one-line usage error."""
    try:
        fields = json.loads(text)
        if not isinstance(fields, dict):
            raise ValueError("not a JSON object")
        return HiddenConfig(**fields)
    except json.JSONDecodeError as exc:
        p.error(f"--hidden: not JSON: {exc.msg}")
    except (TypeError, ValueError) as exc:
        p.error(f"--hidden: {exc}")
    raise AssertionError("unreachable")


def main(argv: list[str] | None = None) -> None:
    run_main(_serve(_parse_args(argv)))


# ----------------------------------------------------------------------------------------------
# the parent side


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


class DemoServer(ServerProcess):
    """The demo web served by a subprocess while the context is open.

    >>> with DemoServer(DemoConfig(pages=500)) as srv:
    ...     srv.base_urls        # ["http://127.0.0.2:P", ...]
    ...     srv.web              # a local DemoWeb with the same config and base URLs: ground truth
    """

    def __init__(self, config: DemoConfig = DemoConfig(), *, latency_ms: float = 0,
                 access_log: Path | str | None = None, ip_base: str = "127.0.0.2",
                 port: int = 0, start_timeout: float = 30.0, flaky: tuple[int, ...] = (),
                 flaky_share: float = 0.1, ignore_conditional: tuple[int, ...] = (),
                 changing: bool | ChangeConfig = False, change_speed: float | None = None,
                 static_share: float | None = None, min_interval: float | None = None,
                 max_interval: float | None = None, start_epoch: float | None = None,
                 change_log: Path | str | None = None, hidden: bool | HiddenConfig = False) -> None:
        """The changing web: ``config.changing``, or ``changing=True`` (the defaults) or a
        ``ChangeConfig``, with the server flags' overrides (``change_speed`` ...); ``start_epoch``
        pins its clock (default: the server's start). ``self.start_epoch`` is the one it used.
        ``change_log``: the server writes its run's ground truth there when it stops.
        ``hidden``: also serve the hidden site (``HiddenConfig``) on the next address. ``flaky``:
        host indexes refusing first requests, ``ignore_conditional`` hosts never answering 304 (see
        the module docstring)."""
        super().__init__(access_log=access_log, ip_base=ip_base, port=port, start_timeout=start_timeout)
        self.config = _with_changes(config, changing, speed=change_speed, static_share=static_share,
                                    min_interval=min_interval, max_interval=max_interval)
        self.start_epoch = start_epoch
        self.change_log = change_log
        self.latency_ms = latency_ms
        self.flaky = tuple(flaky)
        self.flaky_share = flaky_share
        self.ignore_conditional = tuple(ignore_conditional)
        self.hidden_config = (HiddenConfig() if hidden is True
                              else hidden if isinstance(hidden, HiddenConfig) else None)
        self.hidden_url: str | None = None
        self.hidden_site: HiddenSite | None = None
        self.web: DemoWeb | None = None

    def command(self) -> list[str]:
        c = self.config
        cmd = [sys.executable, "-m", "skitter.demo.server", "--hosts", str(c.hosts),
               "--pages", str(c.pages), "--seed", str(c.seed),
               "--page-kb", f"{c.page_kb[0]},{c.page_kb[1]}", "--topics", str(c.topics),
               "--cross-host-links", repr(c.cross_host_links), "--popular-links", repr(c.popular_links),
               "--crawl-delay", repr(c.crawl_delay),
               "--latency-ms", repr(float(self.latency_ms)), *self.process_args()]
        if self.flaky:
            cmd += ["--flaky", ",".join(map(str, self.flaky)), "--flaky-share", repr(self.flaky_share)]
        if self.ignore_conditional:
            cmd += ["--ignore-conditional", ",".join(map(str, self.ignore_conditional))]
        ch = c.changing
        if ch is not None:
            cmd += ["--changing", "--change-speed", repr(ch.speed), "--static-share", repr(ch.static_share),
                    "--min-interval", repr(ch.min_interval), "--max-interval", repr(ch.max_interval),
                    "--noise-share", repr(ch.noise_share), "--new-per-hour", repr(ch.new_per_hour),
                    "--link-share", repr(ch.link_share)]
            if self.start_epoch is not None:
                cmd += ["--start-epoch", repr(self.start_epoch)]
            if self.change_log is not None:
                cmd += ["--change-log", str(self.change_log)]
        if self.hidden_config is not None:
            cmd += ["--hidden", json.dumps(dataclasses.asdict(self.hidden_config))]
        return cmd

    def started(self) -> None:
        self.start_epoch = self.info.get("start_epoch", self.start_epoch)
        self.web = DemoWeb(self.config, self.base_urls, start_epoch=self.start_epoch)
        if self.hidden_config is not None:
            self.hidden_url = self.info["hidden_url"]
            self.hidden_site = HiddenSite(self.hidden_config, self.hidden_url)


if __name__ == "__main__":
    main()
