"""Main text: skitter's own boilerplate rules (skitter.boilerplate, on the parser's tree) against
resiliparse's ``extract_plain_text(main_content=True)`` (a second parse), which skitter used before.

    .venv/bin/python bench/maintext_bench.py [--html-dir DIR ...] [--max-files 400] [--no-write]

Corpora: the benchmark's demo web (``DemoWeb``, 2,000 pages, 5-50 KB) and any directory of real
HTML given with ``--html-dir`` (for example a machine's /usr/share/doc/python3*/html: Sphinx pages
with navigation bars, side bars and footers). For each page: the words of skitter's main text
against the words of resiliparse's (multisets of lower-case words of letters and digits):
precision, recall and F1 taking resiliparse as the reference (the parser's whole text where it
finds none, as skitter's fallback was), and the same for the parser's whole
body text (``Page.text``, no boilerplate removed) to show what the rules take out. Time: CPU ms
a page for resiliparse (parse + extraction, the second parse skitter no longer does) and for
skitter's ``parse_with_main_text`` and ``parse_html`` (the parse without the main text): their
difference is what the rules cost.

Writes its section of docs/benchmarks.md between ``<!-- bench:maintext:start -->`` and
``<!-- bench:maintext:end -->``.
"""

from __future__ import annotations

import argparse
import collections
import datetime as _dt
import re
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if (ROOT / "src").is_dir():
    sys.path.insert(0, str(ROOT / "src"))

from docsection import write_section  # noqa: E402
from skitter.demo.web import DemoConfig, DemoWeb  # noqa: E402
from skitter.parse import parse_html, parse_with_main_text  # noqa: E402

START, END = "<!-- bench:maintext:start -->", "<!-- bench:maintext:end -->"
_WORD = re.compile(r"\w+")


def words(text: str) -> collections.Counter:
    return collections.Counter(w for w in _WORD.findall(text.lower()) if w != "_")


def prf(got: collections.Counter, ref: collections.Counter) -> tuple[float, float, float]:
    common = sum((got & ref).values())
    p = common / max(1, sum(got.values()))
    r = common / max(1, sum(ref.values()))
    return p, r, (2 * p * r / (p + r) if p + r else 0.0)


def demo_pages(n: int) -> list[tuple[str, bytes]]:
    web = DemoWeb(DemoConfig(hosts=8, pages=n, page_kb=(5, 50)),
                  [f"http://127.0.0.{i + 2}:8431" for i in range(8)])
    out = []
    for url in web.pages()[:n]:
        scheme_host, path = url.split("/", 3)[:3], "/" + url.split("/", 3)[3]
        resp = web.respond("/".join(scheme_host), path)
        if resp.status == 200 and b"<html" in resp.body[:300].lower():
            out.append((url, resp.body))
    return out


def dir_pages(path: Path, limit: int) -> list[tuple[str, bytes]]:
    files = sorted(p for p in path.rglob("*.htm*") if p.is_file() and p.stat().st_size > 2048)
    step = max(1, len(files) // limit)
    return [(f"http://localhost/{p.relative_to(path)}", p.read_bytes()) for p in files[::step][:limit]]


def measure(name: str, pages: list[tuple[str, bytes]]) -> dict:
    from resiliparse.extract.html2text import extract_plain_text
    from resiliparse.parse.html import HTMLTree

    ctype = "text/html; charset=utf-8"

    def timed(fn):
        t0 = time.process_time()
        out = [fn(url, body) for url, body in pages]
        return out, time.process_time() - t0

    def resiliparse(url, body):
        return extract_plain_text(HTMLTree.parse_from_bytes(body, "utf-8"), main_content=True,
                                  list_bullets=False, alt_texts=False)

    t_ref = t_ours = t_parse = float("inf")
    for _ in range(3):   # interleaved, the fastest of three: this machine's speed drifts
        ref, t = timed(resiliparse)
        t_ref = min(t_ref, t)
        ours, t = timed(lambda url, body: parse_with_main_text(body, url, ctype))
        t_ours = min(t_ours, t)
        _, t = timed(lambda url, body: parse_html(body, url, ctype))
        t_parse = min(t_parse, t)
    # what skitter did with resiliparse: its text, or the parser's whole text when it found none
    ref = [r if any(c.isalnum() for c in r) else p.text for r, (p, _) in zip(ref, ours)]
    main = [prf(words(m), words(r)) for (_, m), r in zip(ours, ref)]
    full = [prf(words(p.text), words(r)) for (p, _), r in zip(ours, ref)]
    n = len(pages)

    def mean(rows, i):
        return sum(r[i] for r in rows) / n

    return {"name": name, "pages": n,
            "ms_ref": 1000 * t_ref / n, "ms_ours": 1000 * t_ours / n, "ms_parse": 1000 * t_parse / n,
            "main": tuple(mean(main, i) for i in range(3)), "full": tuple(mean(full, i) for i in range(3))}


def render(rows: list[dict], argv: str) -> str:
    now = _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    L = [START, "## Main text: skitter's boilerplate rules vs resiliparse", "",
         f"Written by `bench/maintext_bench.py` on {now} — `python bench/maintext_bench.py {argv}`. "
         "Real pages: HTML documentation installed on the benchmark machine (Python's Sphinx pages, Node.js's API pages, rustdoc pages, "
         "with navigation bars, side bars and footers). Words of each page's main text (lower-case runs of letters and digits, as multisets) against "
         "resiliparse's `extract_plain_text(main_content=True)` as the reference (or, where it finds no text, the "
         "parser's whole text: what skitter fingerprinted then); means over pages. "
         "\"whole text\" is the parser's body text with nothing removed: what the rules take out. CPU times: the "
         "fastest of three interleaved passes (this machine's speed drifts by ±15 %); the difference between skitter's "
         "two columns is what the rules cost, resiliparse's time what a second parse for the main text cost.", "",
         "| corpus | pages | main text P / R / F1 | whole text P / R / F1 | resiliparse ms/page | skitter ms/page: parse with main text / parse alone |",
         "| --- | ---: | --- | --- | ---: | ---: |"]
    for r in rows:
        m, f = r["main"], r["full"]
        L.append(f"| {r['name']} | {r['pages']:,} | {m[0]:.3f} / {m[1]:.3f} / {m[2]:.3f} | "
                 f"{f[0]:.3f} / {f[1]:.3f} / {f[2]:.3f} | {r['ms_ref']:.2f} | {r['ms_ours']:.2f} / "
                 f"{r['ms_parse']:.2f} |")
    L += ["", END]
    return "\n".join(L)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--html-dir", action="append", default=[], type=Path,
                    help="a directory of real HTML pages (repeatable)")
    ap.add_argument("--max-files", type=int, default=400, help="pages taken from each directory")
    ap.add_argument("--demo-pages", type=int, default=2000)
    ap.add_argument("--docs", type=Path, default=ROOT / "docs" / "benchmarks.md")
    ap.add_argument("--no-write", action="store_true")
    args = ap.parse_args()
    rows = [measure("demo web", demo_pages(args.demo_pages))]
    for d in args.html_dir:
        pages = dir_pages(d, args.max_files)
        if pages:
            rows.append(measure(f"{d.parent.name}/{d.name}", pages))
    # the directories by their last two names: no machine's paths in the docs
    shown = " ".join([f"--html-dir .../{d.parent.name}/{d.name}" for d in args.html_dir]
                     + [f"--max-files {args.max_files}"] * bool(args.html_dir))
    section = render(rows, shown)
    print(section)
    if not args.no_write:
        write_section(args.docs, section)


if __name__ == "__main__":
    main()
