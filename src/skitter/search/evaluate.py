"""Evaluation against relevance judgments (TREC formats), for ``skitter eval``.

Files:

- queries: one query a line, ``id<TAB>query text`` (blank lines and lines starting with ``#``
  are skipped);
- qrels: ``qid 0 docid rel`` (whitespace-separated, TREC), where docid is the page's URL and
  rel an integer grade (> 0 relevant).

Per query, over the ranked list the engine returns (at most ``limit`` results; every matching
page, near duplicates included — a page folded into its family's hit is still a page the user
was given — unless ``collapse``, which ranks only the family representatives):

- precision = relevant retrieved / retrieved; recall = relevant retrieved / relevant (seed 004's
  two measures);
- P@10 = relevant among the first 10 / 10;
- AP = mean over the relevant pages of the precision at the rank each is found (0 if not
  found); MAP is its mean over the queries;
- nDCG@10 = DCG@10 / ideal DCG@10 with gain = rel and discount log2(rank + 1) (trec_eval's).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from ..errors import UsageError

__all__ = ["read_queries", "read_qrels", "metrics", "evaluate", "EvalRow", "METRICS"]

METRICS = ("precision", "recall", "P@10", "AP", "nDCG@10")


class EvalFileError(UsageError):
    """A queries or qrels file that cannot be read or parsed."""


def _lines(path: Path | str) -> list[str]:
    try:
        return Path(path).read_text(encoding="utf-8").splitlines()
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


def metrics(ranked: list[str], rels: dict[str, int], k: int = 10) -> dict[str, float]:
    """The measures of one ranked list of docids against one query's judgments."""
    relevant = {d for d, r in rels.items() if r > 0}
    hits = 0
    ap = 0.0
    for i, d in enumerate(ranked, 1):
        if d in relevant:
            hits += 1
            ap += hits / i
    dcg = sum(rels.get(d, 0) / math.log2(i + 1) for i, d in enumerate(ranked[:k], 1) if rels.get(d, 0) > 0)
    ideal = sorted((r for r in rels.values() if r > 0), reverse=True)[:k]
    idcg = sum(r / math.log2(i + 1) for i, r in enumerate(ideal, 1))
    return {
        "precision": hits / len(ranked) if ranked else 0.0,
        "recall": hits / len(relevant) if relevant else 0.0,
        "P@10": sum(1 for d in ranked[:k] if d in relevant) / k,
        "AP": ap / len(relevant) if relevant else 0.0,
        "nDCG@10": dcg / idcg if idcg > 0 else 0.0,
        "retrieved": float(len(ranked)),
        "relevant": float(len(relevant)),
        "relevant_retrieved": float(hits),
    }


@dataclass
class EvalRow:
    qid: str
    query: str
    values: dict[str, float]


def evaluate(searcher, queries: list[tuple[str, str]], qrels: dict[str, dict[str, int]], *,
             limit: int | None = 1000, collapse: bool = False) -> tuple[list[EvalRow], dict[str, float], list[str]]:
    """(one row per judged query, the means, the ids of queries without judgments)."""
    rows: list[EvalRow] = []
    unjudged = []
    for qid, text in queries:
        if qid not in qrels:
            unjudged.append(qid)
            continue
        res = searcher.search(text, limit=limit, snippets=False, suggest=False, collapse=collapse)
        rows.append(EvalRow(qid, text, metrics([h.url for h in res.hits], qrels[qid])))
    mean = {m: (sum(r.values[m] for r in rows) / len(rows) if rows else 0.0) for m in METRICS}
    return rows, mean, unjudged
