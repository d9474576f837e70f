"""The web UI: ``skitter serve DIR`` (starlette + jinja2 on uvicorn): search, advanced search,
crawl statistics and plots. See :mod:`.app`."""

from .app import build_query, create_app

__all__ = ["create_app", "build_query"]
