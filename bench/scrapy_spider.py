"""The Scrapy side of the benchmark: follow every link within the served hosts.

    python bench/scrapy_spider.py --seeds-file SEEDS --out FEED.jsonl
        [--max-pages N] [--concurrency C] [--per-host P] [--max-depth 10]

Run by bench/run.py in a subprocess of its own. Settings mirror skitter's benchmark flags:
robots.txt obeyed (with skitter's product token, so both read the same robots.txt group), no
delay, C requests in flight and P per host (Scrapy's download slots are keyed by host; with IP
hosts, one slot per host), CLOSESPIDER_PAGECOUNT=N, DEPTH_LIMIT=10, breadth-first queues (like
skitter's default strategy), no AutoThrottle, no HTTP cache, no cookies.

Link following mirrors skitter's rules so that both fetch the same URL set: links of ``<a href>``
and ``<area href>`` (every extension, PDFs included), honouring ``<base href>``; a link with
rel=nofollow/ugc/sponsored is not followed (a URL is followed when at least one link to it is
followable); a page whose meta robots (or X-Robots-Tag) says nofollow has no links followed.
Non-2xx responses (404s) reach the callback so they are counted, as skitter counts them.

Each response that reaches the callback becomes one feed item (JSON lines): ``{"url", "status"}``.
Redirect responses never reach a callback (and a hop to an already-seen URL ends in the dupe
filter), so a small downloader middleware writes every 3xx response to FEED.hops: skitter records
each hop as a fetch of its own, and pages = feed items + hops for both.
"""

from __future__ import annotations

import argparse
import json
import os
from urllib.parse import urlsplit

import scrapy
from scrapy.crawler import CrawlerProcess
from scrapy.http import TextResponse

NOFOLLOW_RELS = {"nofollow", "ugc", "sponsored"}


def _robots_nofollow(value: str | None) -> bool:
    if not value:
        return False
    words = {w.strip().lower() for w in value.replace(";", ",").split(",")}
    return "nofollow" in words or "none" in words


class RedirectHopRecorder:
    """Downloader middleware below RedirectMiddleware: writes the URL of every 3xx response."""

    def __init__(self, path: str) -> None:
        self.file = open(path, "w", encoding="utf-8")

    @classmethod
    def from_crawler(cls, crawler):
        mw = cls(crawler.settings.get("BENCH_HOPS_FILE"))
        crawler.signals.connect(mw.close, signal=scrapy.signals.spider_closed)
        return mw

    def close(self) -> None:
        self.file.close()

    def process_response(self, request, response, spider=None):
        if 300 <= response.status < 400 and b"Location" in response.headers:
            self.file.write(json.dumps({"url": response.url, "status": response.status}) + "\n")
        return response


class FollowAllSpider(scrapy.Spider):
    name = "skitter-bench"

    def __init__(self, seeds: list[str], seen_set: bool = False, **kw) -> None:
        super().__init__(**kw)
        self.seeds = seeds
        # off by default (the idiomatic spider leaves de-duplication to Scrapy's dupe filter);
        # on, the spider yields each URL once, which spares Scrapy's per-request overhead
        self.seen: set[str] | None = set(seeds) if seen_set else None
        hosts = sorted({urlsplit(s).hostname for s in seeds if urlsplit(s).hostname})
        self.allowed_domains = hosts  # the loopback IPs (Scrapy keys offsite checks by host)
        self.allowed_netlocs = {urlsplit(s).netloc for s in seeds}

    async def start(self):
        for url in self.seeds:
            yield scrapy.Request(url, callback=self.parse)

    def start_requests(self):  # Scrapy < 2.13
        for url in self.seeds:
            yield scrapy.Request(url, callback=self.parse)

    def parse(self, response):
        yield {"url": response.url, "status": response.status}
        if response.status != 200 or not isinstance(response, TextResponse):
            return
        ctype = response.headers.get(b"Content-Type", b"").decode("latin-1").lower()
        if "html" not in ctype:
            return
        xrt = response.headers.getlist(b"X-Robots-Tag")
        if any(_robots_nofollow(v.decode("latin-1")) for v in xrt):
            return
        for content in response.xpath(
                "//meta[translate(@name,'ROBTS','robts')='robots' or "
                "translate(@name,'SKITER','skiter')='skitter']/@content").getall():
            if _robots_nofollow(content):
                return
        follow: dict[str, None] = {}
        for a in response.xpath("//a[@href] | //area[@href]"):
            rel = (a.attrib.get("rel") or "").lower().split()
            if NOFOLLOW_RELS.intersection(rel):
                continue
            href = a.attrib["href"].strip()
            if not href or href.startswith(("javascript:", "mailto:", "#")):
                continue
            url = response.urljoin(href).split("#", 1)[0]
            if urlsplit(url).netloc in self.allowed_netlocs:
                follow[url] = None
        seen = self.seen
        for url in follow:
            if seen is not None:
                if url in seen:
                    continue
                seen.add(url)
            yield scrapy.Request(url, callback=self.parse)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds-file", required=True)
    ap.add_argument("--out", required=True, help="JSON-lines feed of the fetched URLs")
    ap.add_argument("--max-pages", type=int, default=0)
    ap.add_argument("--concurrency", type=int, default=32)
    ap.add_argument("--per-host", type=int, default=4)
    ap.add_argument("--max-depth", type=int, default=10)
    ap.add_argument("--seen-set", action="store_true",
                    help="yield each URL once (a seen set in the spider) instead of relying on the dupe filter alone")
    ap.add_argument("--robots-token", default="skitter",
                    help="user-agent token matched against robots.txt groups (skitter's, for the same rules)")
    args = ap.parse_args()
    seeds = [s.strip() for s in open(args.seeds_file) if s.strip()]
    settings = {
        "BOT_NAME": "skitter-bench",
        "ROBOTSTXT_OBEY": True,
        "ROBOTSTXT_USER_AGENT": args.robots_token,
        "DOWNLOAD_DELAY": 0,
        "CONCURRENT_REQUESTS": args.concurrency,
        "CONCURRENT_REQUESTS_PER_DOMAIN": args.per_host,
        "CONCURRENT_REQUESTS_PER_IP": 0,
        "CLOSESPIDER_PAGECOUNT": args.max_pages,
        "DEPTH_LIMIT": args.max_depth,
        "DEPTH_PRIORITY": 1,
        "SCHEDULER_DISK_QUEUE": "scrapy.squeues.PickleFifoDiskQueue",
        "SCHEDULER_MEMORY_QUEUE": "scrapy.squeues.FifoMemoryQueue",
        "AUTOTHROTTLE_ENABLED": False,
        "HTTPCACHE_ENABLED": False,
        "COOKIES_ENABLED": False,
        "TELNETCONSOLE_ENABLED": False,
        "REMOTE_CONTROL_ENABLED": False,  # Scrapy >= 2.14: a control port; nothing to do with crawling
        # every 3xx response, which the redirect middleware (600) turns into a new request before
        # any callback sees it: recorded like skitter's redirect records
        "DOWNLOADER_MIDDLEWARES": {RedirectHopRecorder: 650},
        "BENCH_HOPS_FILE": args.out + ".hops",
        "HTTPERROR_ALLOW_ALL": True,
        "REDIRECT_MAX_TIMES": 5,
        "LOG_LEVEL": os.environ.get("BENCH_SCRAPY_LOG_LEVEL", "WARNING"),
        "FEEDS": {args.out: {"format": "jsonlines", "encoding": "utf-8", "overwrite": True}},
    }
    process = CrawlerProcess(settings=settings)
    process.crawl(FollowAllSpider, seeds=seeds, seen_set=args.seen_set)
    process.start()


if __name__ == "__main__":
    main()
