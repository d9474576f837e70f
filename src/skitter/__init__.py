"""skitter: a polite, fast, crash-safe web crawler and search engine.

The Python API (lazily imported, so ``import skitter`` stays light for the processes that only
need a part of it): :func:`crawl` runs a crawl, :func:`build_crawler` builds one with parts of your
own (a scorer, a frontier, a transport, a clock), :func:`open_crawl` reads a crawl directory,
:class:`CrawlConfig` holds the settings, and :class:`Scorer` / :class:`ParentContext` are what a
crawl strategy of your own implements and receives. README.md has a runnable example.
"""

from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["__version__", "crawl", "build_crawler", "open_crawl", "CrawlConfig", "Scorer", "ParentContext",
           "Candidate", "Link", "Page"]

_LAZY = {
    "crawl": "api", "build_crawler": "api", "open_crawl": "api", "CrawlConfig": "config",
    "Scorer": "strategies.base", "ParentContext": "strategies.base",
    "Candidate": "models", "Link": "models", "Page": "models",
}


def __getattr__(name: str):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'skitter' has no attribute {name!r}")
    from importlib import import_module

    value = getattr(import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value
