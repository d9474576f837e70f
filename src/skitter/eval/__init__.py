"""Evaluation: a crawl's order against topic and importance labels (:mod:`.crawl`), search
results against relevance judgments (:mod:`.search`), the files they read (:mod:`.files`) and
their plots (:mod:`.plots`)."""
