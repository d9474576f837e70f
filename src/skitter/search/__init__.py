"""Searching a crawl: the query language (:mod:`.query`), its compilation to FTS5 and SQL
(:mod:`.compile`), evaluation and ranking (:mod:`.engine`), snippets (:mod:`.snippets`) and
evaluation against relevance judgments (:mod:`.evaluate`)."""

from .engine import DEFAULT_PAGERANK_WEIGHT, WEIGHTS, Hit, Results, Searcher, search
from .query import QuerySyntaxError, parse, unparse

__all__ = ["DEFAULT_PAGERANK_WEIGHT", "WEIGHTS", "Hit", "Results", "Searcher", "search",
           "QuerySyntaxError", "parse", "unparse"]
