"""Search evaluation against relevance judgments (TREC qrels, read by :mod:`.files`), for
``skitter eval``.

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

from ..errors import QuerySyntaxError

__all__ = ["metrics", "evaluate", "EvalRow", "METRICS"]

METRICS = ("precision", "recall", "P@10", "AP", "nDCG@10")


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
        try:
            res = searcher.search(text, limit=limit, snippets=False, suggest=False, collapse=collapse)
        except QuerySyntaxError as exc:   # which of the file's queries it is
            raise QuerySyntaxError(f"query {qid} of the queries file: {exc.message}", exc.query,
                                   exc.position) from None
        rows.append(EvalRow(qid, text, metrics([h.url for h in res.hits], qrels[qid])))
    mean = {m: (sum(r.values[m] for r in rows) / len(rows) if rows else 0.0) for m in METRICS}
    return rows, mean, unjudged
