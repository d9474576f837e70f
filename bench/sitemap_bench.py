"""Sitemap parsing: skitter.sitemaps (the standard library's expat, streamed, DTDs refused) against
the two libraries that could replace its XML layer, lxml (``iterparse``, ``resolve_entities=False``,
``no_network``) and defusedxml (``ElementTree.fromstring``, ``forbid_dtd=True``).

    python bench/sitemap_bench.py [--urls 50000] [--repeat 5]

The document: a 50,000-URL urlset with lastmod, changefreq and priority (about 7 MB). Each
contender extracts the same (loc, lastmod, changefreq, priority) strings; "+ canonicalize" adds
what skitter.sitemaps does to every loc (skitter.urls.canonicalize and the origin check), which is
the same for all three. Missing libraries are skipped (neither is a skitter dependency).
Prints the best of ``--repeat`` runs, in ms and URLs/s.
"""

from __future__ import annotations

import argparse
import io
import time

from skitter.sitemaps import parse_sitemap
from skitter.urls import canonicalize

NS = "{http://www.sitemaps.org/schemas/sitemap/0.9}"


def document(n: int) -> bytes:
    rows = "".join(f"<url><loc>https://example.org/articles/{i}.html?ref=a&amp;p={i % 7}</loc>"
                   f"<lastmod>2024-0{1 + i % 9}-1{i % 10}T12:{i % 60:02d}:00+00:00</lastmod>"
                   f"<changefreq>daily</changefreq><priority>0.{i % 10}</priority></url>\n"
                   for i in range(n))
    return ('<?xml version="1.0" encoding="UTF-8"?>\n<urlset xmlns="http://www.sitemaps.org/'
            f'schemas/sitemap/0.9">\n{rows}</urlset>\n').encode()


def with_lxml(body: bytes) -> list[tuple]:
    from lxml import etree
    out = []
    for _, el in etree.iterparse(io.BytesIO(body), events=("end",), tag=NS + "url",
                                 resolve_entities=False, no_network=True, load_dtd=False):
        out.append((el.findtext(NS + "loc"), el.findtext(NS + "lastmod"),
                    el.findtext(NS + "changefreq"), el.findtext(NS + "priority")))
        el.clear()
    return out


def with_defusedxml(body: bytes) -> list[tuple]:
    from defusedxml import ElementTree
    root = ElementTree.fromstring(body, forbid_dtd=True)
    return [(u.findtext(NS + "loc"), u.findtext(NS + "lastmod"), u.findtext(NS + "changefreq"),
             u.findtext(NS + "priority")) for u in root.iter(NS + "url")]


def canonical(rows: list[tuple]) -> int:
    return sum(canonicalize(r[0].strip()).startswith("https://example.org/") for r in rows)


def best(fn, body: bytes, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn(body)
        times.append(time.perf_counter() - t0)
    return min(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--urls", type=int, default=50_000)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    body = document(args.urls)
    url = "https://example.org/sitemap.xml"
    print(f"document: {args.urls} URLs, {len(body) / 1e6:.1f} MB")
    contenders = {"skitter.sitemaps (expat, streamed, canonical URLs)": lambda b: parse_sitemap(b, url)}
    for name, fn in (("lxml iterparse", with_lxml), ("defusedxml ElementTree", with_defusedxml)):
        try:
            fn(document(2))
        except ImportError:
            print(f"{name}: not installed, skipped")
            continue
        contenders[name] = fn
        contenders[name + " + canonicalize"] = lambda b, fn=fn: canonical(fn(b))
    for name, fn in contenders.items():
        t = best(fn, body, args.repeat)
        print(f"{name:55s} {t * 1000:8.1f} ms  {args.urls / t:10,.0f} URLs/s")


if __name__ == "__main__":
    main()
