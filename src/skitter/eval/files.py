"""The evaluation's inputs, read from files: topic labels (``skitter eval-crawl``), TREC queries
and qrels (``skitter eval``), and a crawl directory's fetch order.

Labels: JSON lines ``{"url", "topic", "pagerank"[, "reachable"]}``. Queries: one a line,
``id<TAB>query text`` (blank lines and lines starting with ``#`` skipped). Qrels: ``qid 0 docid rel``
(whitespace-separated, TREC), docid the page's URL, rel an integer grade (> 0 relevant).
"""

from __future__ import annotations

import json
from pathlib import Path

from ..errors import UsageError
from ..store.db import CrawlDB
from ..urls import URLError, canonicalize
from .crawl import Evaluation, Labels, evaluate, guess_topic


class EvalFileError(UsageError):
    """A queries or qrels file that cannot be read or parsed."""


def _canon(url: str) -> str:
    try:
        return canonicalize(url)
    except URLError:
        return url


def load_labels_for(path: Path | str, topic: str | None = None) -> Labels:
    """``load_labels`` for the command line: a bad file or a topic it lacks is a UsageError."""
    try:
        labels = load_labels(path)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    if topic is not None and topic not in labels.topics:
        raise UsageError(f"--topic {topic!r} is not a topic of {path} "
                         f"({', '.join(sorted(labels.topics)) or 'it has none'})")
    return labels


def load_labels(path: Path | str) -> Labels:
    topic: dict[str, str | None] = {}
    pagerank: dict[str, float] = {}
    unreachable: set[str] = set()
    for n, line in enumerate(_lines(path), 1):
        line = line.strip()
        if not line:
            continue
        try:
            rec = json.loads(line)
            url = _canon(rec["url"])
        except (ValueError, KeyError, TypeError) as exc:
            raise ValueError(f"{path}:{n}: not a label record ({exc})") from None
        topic[url] = rec.get("topic")
        if rec.get("pagerank") is not None:
            pagerank[url] = float(rec["pagerank"])
        if rec.get("reachable") is False:
            unreachable.add(url)
    if not topic:
        raise EvalFileError(f"{path} holds no label records (one JSON object a line, with a url)")
    return Labels(topic, pagerank, unreachable)


def crawl_order(directory: Path | str) -> tuple[list[str], dict]:
    """The URLs a crawl requested, in fetch order, and its config."""
    db = CrawlDB(Path(directory), readonly=True)
    try:
        urls = [r[0] for r in db.conn.execute(
            "SELECT url FROM fetches WHERE fetch_order IS NOT NULL ORDER BY fetch_order")]
        config = db.config()
    finally:
        db.conn.close()
    return urls, config


def evaluate_crawl(directory: Path | str, labels: Labels, topic: str | None = None) -> Evaluation:
    urls, config = crawl_order(directory)
    if topic is None:
        topic = guess_topic(config, labels)
    return evaluate(urls, labels, topic)


def _lines(path: Path | str) -> list[str]:
    try:
        return Path(path).read_text(encoding="utf-8-sig").splitlines()   # (a BOM, as Windows editors write)
    except OSError as exc:
        raise EvalFileError(f"cannot read {path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise EvalFileError(f"{path} is not UTF-8 text") from None


def read_queries(path: Path | str) -> list[tuple[str, str]]:
    out = []
    for n, line in enumerate(_lines(path), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        qid, sep, text = line.partition("\t")
        if not sep or not qid.strip() or not text.strip():
            raise EvalFileError(f"{path}:{n}: expected 'id<TAB>query text'")
        out.append((qid.strip(), text.strip()))
    if not out:
        raise EvalFileError(f"{path} has no queries")
    return out


def read_qrels(path: Path | str) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for n, line in enumerate(_lines(path), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        parts = line.split()
        if len(parts) != 4:
            raise EvalFileError(f"{path}:{n}: expected 'qid 0 docid rel'")
        qid, _, doc, rel = parts
        try:
            out.setdefault(qid, {})[doc] = int(rel)
        except ValueError:
            raise EvalFileError(f"{path}:{n}: relevance {rel!r} is not an integer") from None
    return out
