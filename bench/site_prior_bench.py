"""Site priors against the two ways they went wrong (docs/recrawl.md, "Site priors on a mixed
site"): a prior fitted before any page was seen changing, and a fast page on a site of slower ones.

    .venv/bin/python bench/site_prior_bench.py [--seeds 20]

Prints Markdown. The fast page changes every 10 s (Poisson) and is visited every 30 s; its site
is 300 pages visited 5 times about 5 minutes apart: "mixed" (half change every 5 minutes, a
quarter hourly, a quarter never) or "hourly" (all about hourly, gamma shape 4). After k visits
of the fast page the site's prior is fitted on the site's pages and the fast page, and the fast
page is estimated under it. Each cell: the median of its estimate over the true rate, and the
share of seeds in which the estimate lies inside the page's own 95 % interval (`estimate` with
no prior). Seeded: the same arguments give the same figures.
"""

from __future__ import annotations

import argparse

import numpy as np

from skitter.recrawl.estimate import History, estimate, fit_site_prior

FAST, GAP = 0.1, 30.0


def history(rng: np.random.Generator, rate: float, gaps: np.ndarray) -> History:
    visits = np.concatenate([[0.0], np.cumsum(gaps)])
    changes = np.sort(rng.random(rng.poisson(rate * visits[-1])) * visits[-1])
    return History(visits, np.diff(np.searchsorted(changes, visits, side="right")) > 0)


def site(rng: np.random.Generator, kind: str) -> list[History]:
    if kind == "mixed":
        rates = np.array([1 / 300] * 150 + [1 / 3600] * 75 + [0.0] * 75)
    else:
        rates = rng.gamma(4.0, 1 / (4.0 * 3600), 300)
    return [history(rng, r, rng.uniform(0.5, 1.5, 5) * 300) for r in rates]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, default=20)
    args = ap.parse_args()

    pages = [History((0.0, 5.0 + i), (False,)) for i in range(5)]
    prior = fit_site_prior(pages)
    seen = History((0.0, 18.0), (True,))
    print(f"Five pages, one unchanged interval of 5-9 s each: prior {prior}; a page seen changing within 18 s:"
          f" {estimate(seen, prior).per_day:.4g} a day under it, {estimate(seen).per_day:.4g} without.\n")

    visits = (1, 2, 3, 5, 10, 20)
    print("| site | " + " | ".join(f"{k} visits" for k in visits) + " |")
    print("| --- |" + " --- |" * len(visits))
    for kind in ("mixed", "hourly"):
        cells = []
        for k in visits:
            ratio, inside = [], []
            for seed in range(args.seeds):
                rng = np.random.default_rng(seed)
                pages = site(rng, kind)
                fast = history(rng, FAST, np.full(k, GAP))
                e, alone = estimate(fast, fit_site_prior(pages + [fast])), estimate(fast)
                ratio.append(e.rate_per_second / FAST)
                inside.append(alone.low <= e.rate_per_second <= alone.high)
            cells.append(f"{np.median(ratio):.2f} / {np.mean(inside):.0%}")
        print(f"| {kind} | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
