"""The full-text index of a crawl (``DIR/index.db``): see :mod:`skitter.index.indexer`."""

from .indexer import (COLUMNS, INDEX_NAME, IndexMissingError, Indexer, UpdateStats, index_path,
                      open_index, update_index)

__all__ = ["COLUMNS", "INDEX_NAME", "IndexMissingError", "Indexer", "UpdateStats", "index_path",
           "open_index", "update_index"]
