"""The bundled demo web: generated, deterministic multi-host content served on loopback.

``DemoWeb`` (web.py) is the pure generator and the ground truth; ``DemoServer`` (server.py) serves
it from a subprocess on 127.0.0.2, 127.0.0.3, ... (one port) for ``skitter demo``, the tests and
the benchmark. With ``DemoConfig(changing=ChangeConfig(...))`` (server: ``--changing``) its pages
change as Poisson processes, with noise, validators, new articles and a ground-truth change log
(changing.py; docs/recrawl.md). ``WildWeb`` (wild.py) is a second web of another shape, served by
``WildServer`` (wild_server.py); both servers share serving.py (docs/webs.md).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .changing import ChangeConfig
from .web import Change, DemoConfig, DemoWeb, Response

if TYPE_CHECKING:
    from .server import DemoServer, read_access_log

__all__ = ["Change", "ChangeConfig", "DemoConfig", "DemoServer", "DemoWeb", "Response",
           "read_access_log"]


def __getattr__(name: str) -> Any:
    # lazy, so that `python -m skitter.demo.server` does not import the module twice
    if name in ("DemoServer", "read_access_log"):
        from . import server
        return getattr(server, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
