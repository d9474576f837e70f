"""The form crawler's coverage curve: the share of the hidden site's records reached against the
number of form submissions, for the demo's hidden site and harder variants of it.

    .venv/bin/python bench/forms_curve.py [--budget 500] [--no-write]

The planner (skitter.forms) is driven in process against skitter.demo.hidden by tests/forms_sim.py,
as the crawl loop will drive it (robots.txt, URL-seen, result pages followed and reported). Writes
its table into docs/forms.md (between ``<!-- bench:forms:start -->`` and ``<!-- bench:forms:end -->``)
and the plot docs/forms-coverage.png.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "src"), str(ROOT / "tests"), str(ROOT / "bench")]

from docsection import write_section  # noqa: E402
from forms_sim import simulate  # noqa: E402
from skitter.demo.hidden import HiddenConfig, HiddenSite  # noqa: E402
from skitter.forms import DEFAULT_BUDGET  # noqa: E402

SITES = [
    ("the demo's hidden site (3,000 records, 100 a query)", HiddenConfig()),
    ("seed 3, 5,000 records", HiddenConfig(seed=3, records=5000)),
    ("8,000 records", HiddenConfig(records=8000)),
    ("50 a query (25 a page)", HiddenConfig(cap=50, per_page=25)),
    ("20 a query (one page)", HiddenConfig(cap=20, per_page=20)),
]
MARKS = (25, 50, 100, 150, 200, 300, 400, 500)


def run(budget: int) -> list[dict]:
    out = []
    for name, config in SITES:
        site = HiddenSite(config, "http://127.0.0.10:8080")
        t0 = time.perf_counter()
        sim = simulate(site, budget=budget)
        total = len(site.record_urls())
        curve = [(n, 100 * r / total) for n, r in sim.curve]
        out.append({"name": name, "curve": curve, "requests": len(sim.requested),
                    "submitted": len(curve), "seconds": time.perf_counter() - t0,
                    "at90": next((n for n, pct in curve if pct >= 90), None)})
        print(f"{name}: {curve[-1][1]:.1f} % in {len(curve)} submissions, {len(sim.requested)} requests")
    return out


def table(results: list[dict], budget: int) -> str:
    marks = [m for m in MARKS if m <= budget]
    head = "| site | " + " | ".join(str(m) for m in marks) + " | submissions made | requests | 90 % at |"
    rows = [head, "|" + " --- |" * (len(marks) + 4)]
    for r in results:
        at = dict(r["curve"])
        last = r["curve"][-1][1]
        cells = [f"{at[m]:.1f}" if m in at else f"({last:.1f})" for m in marks]
        rows.append(f"| {r['name']} | " + " | ".join(cells)
                    + f" | {r['submitted']} | {r['requests']} | {r['at90'] or '—'} |")
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
    ax.set_title("skitter.forms on the demo's hidden site (dashed: 90 %, dotted: default budget)")
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
               "(in brackets: the planner stopped earlier, at the last figure); written by "
               "`bench/forms_curve.py`.\n\n" + text
               + "\n\n![coverage against submissions](forms-coverage.png)\n<!-- bench:forms:end -->")
    write_section(ROOT / "docs" / "forms.md", section)
    plot(results, args.budget, ROOT / "docs" / "forms-coverage.png")


if __name__ == "__main__":
    main()
