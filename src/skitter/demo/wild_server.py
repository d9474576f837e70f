"""Serve the wild web (``wild.py``) over HTTP on consecutive loopback addresses, one port.

    python -m skitter.demo.wild_server [--config JSON] [--names a.test,b.test,...]
                                       [--access-log FILE] [--ip-base 127.0.10.1] [--port 0]

The same machinery as the demo web's server (``serving.py``: one aiohttp server bound on every
address, the host chosen by the local address a request arrived on, the one-line JSON startup
``{"port": P, "base_urls": [...]}``, the access log ``{"t0", "t1", "host", "method", "path",
"status", "ua"}``, exit on SIGTERM, parent death or EOF on stdin). What the pure model cannot do, the
server adds:

* transient failures: a per-path request counter; the first request of a URL that
  ``WildWeb.first_failure`` names gets 503 with ``Retry-After: 1`` or 429 with ``Retry-After``
  as an HTTP-date 2 s ahead, every later one the real response;
* latency: requests to a slow host wait ``WildWeb.latency`` seconds before the answer;
* no Content-Type where the model sends none (aiohttp would add application/octet-stream).

``--config`` is ``WildConfig`` as JSON (``dataclasses.asdict``); ``--names`` puts host names in
the base URLs instead of the addresses (a crawler then needs ``--resolve name:ip``), so that the
web's links can spell hosts in upper case.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from dataclasses import asdict, fields
from email.utils import formatdate
from pathlib import Path
from typing import Any

from .serving import ServerProcess, addresses, read_access_log, run_main, serve
from .wild import WildConfig, WildWeb

__all__ = ["WildServer", "config_from_json", "main", "read_access_log"]

NAME = "wild server"


def config_from_json(text: str) -> WildConfig:
    """A ``WildConfig`` from its ``asdict`` JSON (lists back to tuples)."""
    data = json.loads(text)
    known = {f.name for f in fields(WildConfig)}
    kw: dict[str, Any] = {k: tuple(v) if isinstance(v, list) else v for k, v in data.items() if k in known}
    return WildConfig(**kw)


# ----------------------------------------------------------------------------------------------
# the subprocess side


async def _serve(args: argparse.Namespace) -> None:
    from aiohttp import web as aioweb

    class Untyped(aioweb.Response):
        """A response with no Content-Type: aiohttp adds one to any body (RFC 9110 8.3 says a
        sender SHOULD), but servers that do not are what a crawler meets."""

        async def _prepare_headers(self) -> None:
            await super()._prepare_headers()
            self.headers.popall("Content-Type", None)

    config = config_from_json(args.config)
    ips = addresses(args.ip_base, config.hosts, NAME)
    names = args.names.split(",") if args.names else None
    if names is not None and len(names) != config.hosts:
        raise SystemExit(f"{NAME}: --names needs {config.hosts} names")
    requests: Counter[tuple[str, str]] = Counter()

    def setup(base_urls: list[str]):
        web = WildWeb(config, base_urls)

        async def respond(request: aioweb.BaseRequest, base: str) -> aioweb.StreamResponse:
            path = request.raw_path
            requests[(base, path)] += 1
            failure = web.first_failure(base + path) if requests[(base, path)] == 1 else None
            if failure is not None:
                status, seconds = failure
                retry = str(int(seconds)) if status == 503 else formatdate(time.time() + seconds, usegmt=True)
                return aioweb.Response(status=status, text=f"busy, come back in {seconds:g} s\n",
                                       headers={"Retry-After": retry})
            r = web.respond(base, path, request.headers)
            kind = aioweb.Response if r.header("Content-Type") else Untyped
            return kind(status=r.status, body=r.body, headers=r.headers)

        return respond, web.latency

    await serve(ips, args.port, setup, access_log=args.access_log, parent_pid=args.parent_pid,
                watch_stdin=args.watch_stdin, name=NAME, hostnames=names)


def _parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m skitter.demo.wild_server",
                                description="Serve the skitter wild web on loopback addresses.")
    p.add_argument("--config", default=json.dumps(asdict(WildConfig())), help="WildConfig as JSON")
    p.add_argument("--names", default="", help="comma-separated host names for the base URLs")
    p.add_argument("--access-log", type=Path, default=None)
    p.add_argument("--ip-base", default="127.0.10.1")
    p.add_argument("--port", type=int, default=0, help="0: pick a free port")
    p.add_argument("--parent-pid", type=int, default=0, help="exit when this parent dies")
    p.add_argument("--watch-stdin", action="store_true", help="exit at EOF on stdin")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    run_main(_serve(_parse_args(argv)))


# ----------------------------------------------------------------------------------------------
# the parent side


class WildServer(ServerProcess):
    """The wild web served by a subprocess while the context is open.

    >>> with WildServer(WildConfig(hosts=12, pages=1500), access_log="access.jsonl") as srv:
    ...     srv.base_urls        # ["http://127.0.10.1:P", ...]
    ...     srv.web              # a local WildWeb with the same config and base URLs: ground truth
    ...     srv.resolve_args()   # ["--resolve", "name:ip", ...] when the base URLs use names
    """

    name = NAME

    def __init__(self, config: WildConfig = WildConfig(), *, names: list[str] | None = None,
                 access_log: Path | str | None = None, ip_base: str = "127.0.10.1", port: int = 0,
                 start_timeout: float = 30.0) -> None:
        super().__init__(access_log=access_log, ip_base=ip_base, port=port, start_timeout=start_timeout)
        if names is not None and len(names) != config.hosts:
            raise ValueError(f"need {config.hosts} names, got {len(names)}")
        self.config = config
        self.names = names
        self.web: WildWeb | None = None

    def command(self) -> list[str]:
        cmd = [sys.executable, "-m", "skitter.demo.wild_server", "--config", json.dumps(asdict(self.config))]
        if self.names:
            cmd += ["--names", ",".join(self.names)]
        return cmd + self.process_args()

    def started(self) -> None:
        self.web = WildWeb(self.config, self.base_urls)

    def addresses(self) -> list[str]:
        return addresses(self.ip_base, self.config.hosts, NAME)

    def resolve_args(self) -> list[str]:
        """``skitter crawl`` options that resolve the host names to the addresses ([] without names)."""
        return [arg for name, ip in zip(self.names or [], self.addresses()) for arg in ("--resolve", f"{name}:{ip}")]


if __name__ == "__main__":
    main()
