"""The bare ceiling client: aiohttp + selectolax and nothing else.

    python bench/bare_client.py --seeds-file SEEDS --out URLS.txt
        [--max-pages N] [--concurrency C] [--per-host P] [--max-depth 10]

Fetch, extract ``<a href>``/``<area href>`` links, follow those within the seeds' hosts (host and
port), at most C requests in flight and P per host, up to N requests and depth 10. No robots.txt,
no nofollow, no storage beyond one line per fetched URL, no retries: the fastest a Python crawler
built on the same libraries as skitter can go on this machine. It writes the fetched URLs (one a
line, redirect hops included) to --out.
"""

from __future__ import annotations

import argparse
import asyncio
from collections import deque
from urllib.parse import urldefrag, urljoin, urlsplit

import aiohttp
from selectolax.lexbor import LexborHTMLParser


class Bare:
    def __init__(self, seeds: list[str], max_pages: int, concurrency: int, per_host: int,
                 max_depth: int) -> None:
        self.netlocs = {urlsplit(s).netloc for s in seeds}
        self.queue: deque[tuple[str, int]] = deque((s, 0) for s in seeds)
        self.seen: set[str] = set(seeds)
        self.max_pages = max_pages or 10**12
        self.concurrency = concurrency
        self.per_host = per_host
        self.max_depth = max_depth
        self.host_sem: dict[str, asyncio.Semaphore] = {}
        self.started = 0
        self.active = 0
        self.fetched: list[str] = []
        self.errors = 0
        self.wake = asyncio.Event()

    async def run(self) -> None:
        conn = aiohttp.TCPConnector(limit=self.concurrency, limit_per_host=self.per_host, ttl_dns_cache=None)
        timeout = aiohttp.ClientTimeout(total=60, connect=10, sock_read=20)
        async with aiohttp.ClientSession(connector=conn, timeout=timeout, auto_decompress=True,
                                         headers={"User-Agent": "bare-bench/1"}) as session:
            self.session = session
            await asyncio.gather(*(self.worker() for _ in range(self.concurrency)))

    async def worker(self) -> None:
        while True:
            if self.started >= self.max_pages:
                return
            if not self.queue:
                if self.active == 0:
                    self.wake.set()
                    return
                self.wake.clear()
                await self.wake.wait()
                continue
            url, depth = self.queue.popleft()
            self.started += 1
            self.active += 1
            try:
                await self.fetch(url, depth)
            finally:
                self.active -= 1
                self.wake.set()

    async def fetch(self, url: str, depth: int) -> None:
        netloc = urlsplit(url).netloc
        sem = self.host_sem.get(netloc)
        if sem is None:
            sem = self.host_sem[netloc] = asyncio.Semaphore(self.per_host)
        async with sem:
            try:
                async with self.session.get(url, max_redirects=5) as resp:
                    body = await resp.read()
                    final = str(resp.url)
                    for hop in resp.history:
                        self.fetched.append(str(hop.url))
                    self.fetched.append(final)
                    ctype = resp.headers.get("Content-Type", "")
            except (TimeoutError, aiohttp.ClientError):
                self.errors += 1
                return
        if resp.status != 200 or "html" not in ctype or depth >= self.max_depth:
            return
        tree = LexborHTMLParser(body)
        base = final
        b = tree.css_first("base[href]")
        if b is not None:
            base = urljoin(final, b.attributes.get("href") or "")
        for node in tree.css("a[href], area[href]"):
            href = node.attributes.get("href")
            if not href:
                continue
            link = urldefrag(urljoin(base, href.strip()))[0]
            if link in self.seen or urlsplit(link).netloc not in self.netlocs:
                continue
            self.seen.add(link)
            self.queue.append((link, depth + 1))
        self.wake.set()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds-file", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--max-pages", type=int, default=0)
    ap.add_argument("--concurrency", type=int, default=32)
    ap.add_argument("--per-host", type=int, default=4)
    ap.add_argument("--max-depth", type=int, default=10)
    args = ap.parse_args()
    seeds = [s.strip() for s in open(args.seeds_file) if s.strip()]
    bare = Bare(seeds, args.max_pages, args.concurrency, args.per_host, args.max_depth)
    try:
        import uvloop

        uvloop.run(bare.run())
    except ImportError:
        asyncio.run(bare.run())
    with open(args.out, "w", encoding="utf-8") as f:
        for u in bare.fetched:
            f.write(u + "\n")
    print(f"bare: {len(bare.fetched)} fetched, {bare.errors} errors")


if __name__ == "__main__":
    main()
