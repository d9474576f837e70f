"""The form crawler's coverage curve: the share of the hidden site's records reached against the
number of form submissions, for the demo's hidden site, harder variants of it and the film archive
of tests/hidden_variant.py.

    .venv/bin/python bench/forms_curve.py [--budget 500] [--no-write]

Each site is crawled for real: ``skitter crawl --forms`` (skitter.api.crawl, the crawl loop) over
HTTP on loopback, the demo server (``--hidden``) or tests/hidden_variant.py's ModelServer serving
it, no politeness delay; the curve is ``skitter eval-forms``'s (skitter.eval.forms.form_coverage).
Writes its table into docs/forms.md (between ``<!-- bench:forms:start -->`` and
``<!-- bench:forms:end -->``) and the plot docs/forms-coverage.png.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "src"), str(ROOT / "tests"), str(ROOT / "bench")]

from docsection import write_section  # noqa: E402
from hidden_variant import ModelServer, VariantSite  # noqa: E402
from skitter.api import crawl  # noqa: E402
from skitter.demo.hidden import HiddenConfig  # noqa: E402
from skitter.demo.server import DemoServer  # noqa: E402
from skitter.demo.web import DemoConfig  # noqa: E402
from skitter.eval.forms import form_coverage  # noqa: E402
from skitter.forms import DEFAULT_BUDGET  # noqa: E402

SITES = [
    ("the demo's hidden site (3,000 records, 100 a query)", HiddenConfig()),
    ("seed 3, 5,000 records", HiddenConfig(seed=3, records=5000)),
    ("8,000 records", HiddenConfig(records=8000)),
    ("50 a query (25 a page)", HiddenConfig(cap=50, per_page=25)),
    ("20 a query (one page)", HiddenConfig(cap=20, per_page=20)),
    ("the film archive (tests/hidden_variant.py, 4,000 records, 45 a query)", None),
]
MARKS = (25, 50, 100, 150, 200, 300, 400, 500)


def _crawl(seeds: list[str], directory: Path, budget: int) -> None:
    crawl(seeds, directory, forms=True, form_budget=budget, delay=0, adaptive_delay=0, allow_private=True,
          index_interval=-1)


def run(budget: int) -> list[dict]:
    out = []
    with tempfile.TemporaryDirectory(prefix="forms-curve-") as tmp:
        for i, (name, config) in enumerate(SITES):
            directory = Path(tmp) / f"c{i}"
            t0 = time.perf_counter()
            if config is None:
                with ModelServer(None) as srv:
                    site = srv.model = VariantSite(srv.base)
                    _crawl(site.seeds(), directory, budget)
                    truth = set(site.record_urls())
            else:
                with DemoServer(DemoConfig(hosts=1, pages=60), hidden=config) as srv:
                    assert srv.hidden_site is not None and srv.hidden_url is not None
                    _crawl([srv.hidden_url + "/"], directory, budget)
                    truth = set(srv.hidden_site.record_urls())
            cov = form_coverage(directory, truth)
            curve = [(n, 100 * r / cov.records) for n, r in enumerate(cov.reached)]
            out.append({"name": name, "curve": curve, "requests": cov.requests, "submitted": cov.submissions,
                        "reached": f"{cov.total:,} of {cov.records:,}", "seconds": time.perf_counter() - t0,
                        "at90": cov.first_reaching(0.9)})
            print(f"{name}: {curve[-1][1]:.1f} % in {cov.submissions} submissions, {cov.requests} requests, "
                  f"{time.perf_counter() - t0:.0f} s")
    return out


def table(results: list[dict], budget: int) -> str:
    marks = [m for m in MARKS if m <= budget]
    head = ("| site | " + " | ".join(str(m) for m in marks)
            + " | submissions made | records reached | requests | 90 % at |")
    rows = [head, "|" + " --- |" * (len(marks) + 5)]
    for r in results:
        at = dict(r["curve"])
        last = r["curve"][-1][1]
        cells = [f"{at[m]:.1f}" if m in at else f"({last:.1f})" for m in marks]
        rows.append(f"| {r['name']} | " + " | ".join(cells)
                    + f" | {r['submitted']} | {r['reached']} | {r['requests']} | {r['at90'] or '—'} |")
    return "\n".join(rows)


def plot(results: list[dict], budget: int, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 4.5), dpi=100)
    for r in results:
        ax.plot([n for n, _ in r["curve"]], [p for _, p in r["curve"]], label=r["name"])
    ax.axhline(90, color="grey", linestyle="--", linewidth=0.8)
    ax.axvline(DEFAULT_BUDGET, color="grey", linestyle=":", linewidth=0.8)
    ax.set_xlim(0, budget * 1.03)
    ax.set_ylim(0, 100)
    ax.set_xlabel("form submissions")
    ax.set_ylabel("hidden records reached (%)")
    ax.set_title("skitter crawl --forms (dashed: 90 %, dotted: the default budget)")
    ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--budget", type=int, default=DEFAULT_BUDGET)
    ap.add_argument("--no-write", action="store_true", help="print only")
    args = ap.parse_args()
    results = run(args.budget)
    text = table(results, args.budget)
    print(text)
    if args.no_write:
        return
    section = (f"<!-- bench:forms:start -->\nRecords reached (%) after N submissions, budget {args.budget} "
               "(in brackets: the planner stopped earlier, at the last figure), by `skitter crawl --forms` over "
               "loopback HTTP; written by `bench/forms_curve.py`.\n\n" + text
               + "\n\n![coverage against submissions](forms-coverage.png)\n<!-- bench:forms:end -->")
    write_section(ROOT / "docs" / "forms.md", section)
    plot(results, args.budget, ROOT / "docs" / "forms-coverage.png")


if __name__ == "__main__":
    main()
