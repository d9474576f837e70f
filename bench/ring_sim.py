"""The ring by simulation: pick the points per member (vnodes) and check the scale figures of
issue #21: hosts per worker within ±10% of the mean with 100 and with 1,000 workers, and the
share of hosts moved when one of N workers leaves (or one joins) about 1/N, only the leaver's
(only to the joiner).

Two sources of imbalance add up: the ring's own (a member's share of the circle, computed
exactly by ``Ring.shares()``, the limit for infinitely many hosts) and the sampling of a finite
number of hosts (binomial: with m hosts per worker on average, a relative spread of 1/sqrt(m),
so about 3% at 1,000 hosts a worker and 1% at 10,000). Host counts are simulated with 10,000
hosts per worker on average (1 M hosts for 100 workers, 10 M for 1,000), where the sampling part
is small, and at the chosen vnodes also with 1,000 per worker (100,000 and 1 M hosts) to show it.
Every host count goes through ``Ring.owner``, the lookup the crawler uses.

    .venv/bin/python bench/ring_sim.py            # about two minutes on 2 cores

Writes its section of docs/distributed.md (between the bench:ring markers).
"""

from __future__ import annotations

import argparse
import json
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import docsection

from skitter.distributed.ring import DEFAULT_VNODES, Ring

ROOT = Path(__file__).resolve().parents[1]
CHUNK = 1_000_000
LIMIT = 0.10   # the bound on hosts per worker: ±10% of the mean
RING_LIMIT = 0.08   # what the ring itself may take of it, leaving room for the sampling part


def hosts(n: int, offset: int = 0) -> Iterator[list[str]]:
    """``n`` distinct host keys in chunks, some with ports as ``host_key`` gives them."""
    for start in range(offset, offset + n, CHUNK):
        yield [f"www.site{i}.example" if i % 7 else f"site{i}.example:8080"
               for i in range(start, min(offset + n, start + CHUNK))]


def members(n: int, name_set: int = 0) -> list[str]:
    return [f"worker-{name_set}-{i}" for i in range(n)]


def max_deviation(values: list[float], mean: float) -> float:
    return max(abs(v / mean - 1.0) for v in values)


def arc_deviation(n: int, vnodes: int, name_sets: int) -> float:
    """Worst, over ``name_sets`` sets of member names, of the largest |share·N − 1|."""
    return max(max_deviation(list(Ring(members(n, s), vnodes=vnodes).shares().values()), 1 / n)
               for s in range(name_sets))


def host_deviation(ring: Ring, n_hosts: int) -> float:
    counts: Counter[str] = Counter()
    for chunk in hosts(n_hosts):
        counts.update(map(ring.owner, chunk))
    return max_deviation([counts[m] for m in ring], n_hosts / len(ring))


def sweep(candidates: list[int], sizes: list[tuple[int, int]], name_sets: int) -> list[dict]:
    rows = []
    for vnodes in candidates:
        for n, n_hosts in sizes:
            t0 = time.perf_counter()
            ring = Ring(members(n), vnodes=vnodes)
            built = time.perf_counter() - t0
            row = {"vnodes": vnodes, "workers": n, "hosts": n_hosts, "build_s": built,
                   "arc_dev": arc_deviation(n, vnodes, name_sets),
                   "host_dev": host_deviation(ring, n_hosts)}
            rows.append(row)
            print(json.dumps(row), flush=True)
    return rows


def moved(n: int, n_hosts: int, vnodes: int, trials: int) -> dict:
    """Remove one member (``trials`` different ones) and add one; count hosts that move."""
    names = members(n)
    ring = Ring(names, vnodes=vnodes)
    shares = ring.shares()
    out: dict = {"workers": n, "hosts": n_hosts, "leave": [], "join": None}
    for leaver in names[:: max(1, n // trials)][:trials]:
        smaller = Ring([m for m in names if m != leaver], vnodes=vnodes)
        moved_hosts = others_moved = 0
        for chunk in hosts(n_hosts):
            for before, after in zip(map(ring.owner, chunk), map(smaller.owner, chunk)):
                if before != after:
                    moved_hosts += 1
                    others_moved += before != leaver
        out["leave"].append({"moved": moved_hosts / n_hosts, "leaver_share": shares[leaver],
                             "others_moved": others_moved})
    bigger = Ring([*names, "joiner"], vnodes=vnodes)
    moved_hosts = not_to_joiner = 0
    for chunk in hosts(n_hosts):
        for before, after in zip(map(ring.owner, chunk), map(bigger.owner, chunk)):
            if before != after:
                moved_hosts += 1
                not_to_joiner += after != "joiner"
    out["join"] = {"moved": moved_hosts / n_hosts, "not_to_joiner": not_to_joiner}
    print(json.dumps(out), flush=True)
    return out


def smallest_passing(rows: list[dict]) -> int | None:
    """The fewest vnodes whose ring stays within RING_LIMIT on the circle and whose host counts
    stay within LIMIT, at every size simulated."""
    for vnodes in sorted({r["vnodes"] for r in rows}):
        mine = [r for r in rows if r["vnodes"] == vnodes]
        if all(r["arc_dev"] <= RING_LIMIT and r["host_dev"] <= LIMIT for r in mine):
            return vnodes
    return None


def lookup_rate(n: int, vnodes: int, n_hosts: int = CHUNK) -> float:
    ring = Ring(members(n), vnodes=vnodes)
    chunk = next(hosts(n_hosts, offset=10**9))
    t0 = time.perf_counter()
    for key in chunk:
        ring.owner(key)
    return n_hosts / (time.perf_counter() - t0)


def pct(x: float) -> str:
    return f"{100 * x:.3g}%"


def section(rows: list[dict], floor: list[dict], moves: list[dict], rates: dict[int, float],
            name_sets: int) -> str:
    lines = ["<!-- bench:ring:start -->", "## The ring", "",
             "`src/skitter/distributed/ring.py`: consistent hashing with virtual nodes (UbiCrawler). "
             "Measured by `bench/ring_sim.py`; every host count goes through `Ring.owner`.", "",
             f"**Points per member.** The largest deviation of a worker's host count from the mean, "
             f"on the circle (exact arc shares, worst of {name_sets} sets of worker names: the limit "
             f"for infinitely many hosts) and by counting simulated hosts "
             f"({rows[0]['hosts'] // rows[0]['workers']:,} a worker on average):", "",
             "| vnodes | workers | hosts simulated | on the circle | hosts per worker | ring build |",
             "| ---: | ---: | ---: | ---: | ---: | ---: |"]
    for r in rows:
        lines.append(f"| {r['vnodes']:,} | {r['workers']:,} | {r['hosts']:,} | ±{pct(r['arc_dev'])} | "
                     f"±{pct(r['host_dev'])} | {r['build_s']:.2f} s |")
    lines += ["", f"The rule: the fewest vnodes whose worst deviation on the circle is at most "
              f"±{pct(RING_LIMIT)} (leaving room for the sampling part) and whose host counts stay "
              f"within ±{pct(LIMIT)}, at both sizes: {smallest_passing(rows)}. "
              f"`DEFAULT_VNODES = {DEFAULT_VNODES}`. The ring takes 12 bytes a point "
              f"({DEFAULT_VNODES * 12 * 100 / 2**20:.1f} MiB at 100 workers, "
              f"{DEFAULT_VNODES * 12 * 1000 / 2**20:.1f} MiB at 1,000, in every worker).", "",
              "With fewer hosts per worker the sampling spread (1/sqrt(hosts per worker)) "
              "dominates, whatever the ring does:", "",
              "| vnodes | workers | hosts simulated | hosts per worker |", "| ---: | ---: | ---: | ---: |"]
    for r in floor:
        lines.append(f"| {r['vnodes']:,} | {r['workers']:,} | {r['hosts']:,} | ±{pct(r['host_dev'])} |")
    lines += ["", f"**Hosts moved** (vnodes = {DEFAULT_VNODES}) when one of N workers leaves, "
              "against 1/N and against the leaver's own share of the circle; and when one joins:", "",
              "| workers | hosts | leaves: moved (each trial) | 1/N | leaver's share | moved that were not the leaver's | joins: moved | 1/(N+1) | moved not to the joiner |",
              "| ---: | ---: | --- | ---: | --- | ---: | ---: | ---: | ---: |"]
    for m in moves:
        n = m["workers"]
        lines.append(
            f"| {n:,} | {m['hosts']:,} | {', '.join(pct(x['moved']) for x in m['leave'])} | {pct(1 / n)} | "
            f"{', '.join(pct(x['leaver_share']) for x in m['leave'])} | "
            f"{sum(x['others_moved'] for x in m['leave'])} | {pct(m['join']['moved'])} | "
            f"{pct(1 / (n + 1))} | {m['join']['not_to_joiner']} |")
    lines += ["", "**Lookups** (`Ring.owner`: xxh3 of the host key, the top-16-bit index and a bisect, a Python loop over "
              "1 M host keys), one process: " +
              ", ".join(f"{rate / 1e6:.2f} M/s at {n:,} workers" for n, rate in rates.items()) + ".",
              "<!-- bench:ring:end -->"]
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--vnodes", type=int, nargs="+", default=[256, 512, 1024, 2048, 3072, 4096])
    ap.add_argument("--name-sets", type=int, default=10)
    ap.add_argument("--trials", type=int, default=3, help="members removed one at a time")
    ap.add_argument("--quick", action="store_true", help="a tenth of the hosts; no docs written")
    args = ap.parse_args()
    scale = 10 if args.quick else 1
    sizes = [(100, 1_000_000 // scale), (1000, 10_000_000 // scale)]
    rows = sweep(args.vnodes, sizes, args.name_sets)
    if smallest_passing(rows) != DEFAULT_VNODES:
        print(f"note: the rule picks {smallest_passing(rows)} vnodes, DEFAULT_VNODES is {DEFAULT_VNODES}")
    floor = [{"vnodes": DEFAULT_VNODES, "workers": n, "hosts": h // 10,
              "host_dev": host_deviation(Ring(members(n)), h // 10)} for n, h in sizes]
    moves = [moved(n, h, DEFAULT_VNODES, args.trials) for n, h in sizes]
    rates = {n: lookup_rate(n, DEFAULT_VNODES) for n, _ in sizes}
    text = section(rows, floor, moves, rates, args.name_sets)
    out = ROOT / "bench" / "out"
    out.mkdir(parents=True, exist_ok=True)
    (out / "ring-sim.json").write_text(json.dumps({"sweep": rows, "floor": floor, "moves": moves,
                                                   "rates": rates}, indent=1))
    if args.quick:
        print(text)
    else:
        docsection.write_section(ROOT / "docs" / "distributed.md", text)
        print(text)


if __name__ == "__main__":
    main()
