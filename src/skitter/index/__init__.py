"""The full-text index of a crawl (``DIR/index.db``): see :mod:`skitter.index.indexer`.

The names below are imported on first use (PEP 562): the crawl process imports
:mod:`skitter.index.live` to drive the live index, and the indexer, its analyzer and the stemmer
are then loaded only in the process that runs the steps, not in the crawl's (issue #18)."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .indexer import (COLUMNS, INDEX_NAME, IndexMissingError, Indexer, UpdateStats, index_path,
                          open_index, update_index)

__all__ = ["COLUMNS", "INDEX_NAME", "IndexMissingError", "Indexer", "UpdateStats", "index_path",
           "open_index", "update_index"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        return getattr(importlib.import_module(".indexer", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
