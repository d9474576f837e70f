"""The recrawl's freshness against the ground truth of the changing demo web (docs/recrawl.md).

Each policy recrawls the same changing web in fake time (the real crawl loop, store and recrawl
part; skitter.recrawl.evaluate.run_fake_recrawl) with the same budget; each run is scored over
the same window next to the schedules of uniform, proportional, optimal and age-optimal computed
with the true rates and as many fetches. Prints a Markdown table.

    .venv/bin/python bench/recrawl_eval.py            # about 2 minutes
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from skitter.demo.changing import ChangeConfig
from skitter.demo.web import DemoConfig, DemoWeb
from skitter.recrawl.evaluate import run_fake_recrawl
from skitter.testing import EPOCH


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pages", type=int, default=150)
    ap.add_argument("--hosts", type=int, default=3)
    ap.add_argument("--hours", type=float, default=10.0)
    ap.add_argument("--warmup", type=float, default=3.0, help="hours left out of the score")
    ap.add_argument("--rate", type=float, default=0.04, help="revisits a second (the budget)")
    ap.add_argument("--min-interval", type=float, default=30.0, help="seconds, the fastest pages' mean interval")
    ap.add_argument("--max-interval", type=float, default=3 * 3600.0, help="seconds, the slowest changing pages'")
    ap.add_argument("--importance", default="none")
    ap.add_argument("--policies", default="optimal,age-optimal,uniform,proportional")
    args = ap.parse_args(argv)
    change = ChangeConfig(speed=1.0, static_share=0.3, min_interval=args.min_interval,
                          max_interval=args.max_interval, new_per_hour=0.0)
    web = DemoWeb(DemoConfig(pages=args.pages, hosts=args.hosts, changing=change),
                  [f"http://127.0.0.{2 + i}:8000" for i in range(args.hosts)], start_epoch=EPOCH)
    print(f"{args.pages} pages on {args.hosts} hosts, 30 % static, the rest changing every {args.min_interval:.0f} s to {args.max_interval / 3600:.0f} h "
          f"(log-uniform), noise on 30 %; budget {args.rate} fetches/s; {args.hours} h, the first "
          f"{args.warmup} h not scored; --importance {args.importance}\n")
    key = "freshness" if args.importance == "none" else "weighted_freshness"
    print(f"| policy (own estimates) | pages | fetches scored | freshness | weighted | age (min) |"
          f" uniform, true rates | proportional, true rates | optimal, true rates | age-optimal, true rates |"
          f" share of the optimum's gain{'' if key == 'freshness' else ' (weighted)'} |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for name in args.policies.split(","):
        with tempfile.TemporaryDirectory() as tmp:
            t = time.time()
            r = run_fake_recrawl(Path(tmp) / "crawl", web, hours=args.hours, rate=args.rate, policy=name,
                                 importance=args.importance, warmup_hours=args.warmup)
            s = r["scores"]
            u, p, o, a, f = (s["uniform (true rates)"][key], s["proportional (true rates)"][key],
                             s["optimal (true rates)"][key], s["age-optimal (true rates)"][key], s["recrawl"][key])
            share = (f - u) / (o - u) if o > u else float("nan")
            print(f"| {name} | {r['pages']} | {s['recrawl']['fetches']} | {s['recrawl']['freshness']:.3f} |"
                  f" {s['recrawl']['weighted_freshness']:.3f} | {s['recrawl']['age'] / 60:.1f} | {u:.3f} | {p:.3f} |"
                  f" {o:.3f} | {a:.3f} | {share:+.2f} |", flush=True)
            print(f"  ({time.time() - t:.0f} s)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
