"""The changing demo web (skitter.demo.changing and DemoWeb's changing mode): Poisson change
counts, determinism, noise that is never a change, 304s, ETag and Last-Modified, new articles and
the sitemaps."""

from __future__ import annotations

import math
import random
import statistics
from email.utils import formatdate, parsedate_to_datetime
from urllib.parse import urlsplit

import pytest

from skitter.demo.changing import ChangeConfig, ChangeModel, _binomial, _half, _poisson, changefreq
from skitter.demo.web import DemoConfig, DemoWeb
from skitter.parse import parse_with_main_text
from skitter.sitemaps import parse_sitemap

S = 1_800_000_000.0          # the start epoch of every test web
CFG = DemoConfig(pages=400, hosts=4, changing=ChangeConfig(speed=10))


def make(config: DemoConfig = CFG, start: float = S) -> DemoWeb:
    return DemoWeb(config, [f"http://127.0.0.{i + 2}:8123" for i in range(config.hosts)], start_epoch=start)


@pytest.fixture(scope="module")
def web() -> DemoWeb:
    return make()


def get(web: DemoWeb, url: str, **kw):
    p = urlsplit(url)
    return web.respond(f"{p.scheme}://{p.netloc}", p.path, **kw)


def main_text(url: str, body: bytes) -> str:
    return parse_with_main_text(body, url)[1]


def changing_pages(web: DemoWeb, host: int | None = None) -> list[str]:
    return [u for u in web.pages() if web.change_rate(u) > 0
            and (host is None or u.startswith(web.base_urls[host] + "/"))]


# ---------------------------------------------------------------------------------------------
# the process


def test_variates_are_exact_in_distribution() -> None:
    rng = random.Random(5)
    for mu in (0.3, 7.0, 45.0, 2_000.0):
        xs = [_poisson(rng, mu) for _ in range(3000)]
        assert abs(statistics.mean(xs) - mu) < 4 * math.sqrt(mu / 3000)
        assert abs(statistics.variance(xs) / mu - 1) < 0.12
    for n in (10, 300, 9_000, 200_000):
        xs = [_half(f"t:{n}:{i}", n) for i in range(2000)]
        assert abs(statistics.mean(xs) - n / 2) < 4 * math.sqrt(n / 4 / 2000)
        assert abs(statistics.variance(xs) / (n / 4) - 1) < 0.15
    xs = [_binomial(rng, 1000, 0.13) for _ in range(2000)]
    assert abs(statistics.mean(xs) - 130) < 4 * math.sqrt(113.1 / 2000)


def test_change_counts_are_poisson() -> None:
    m = ChangeModel(ChangeConfig(), S)
    key = next(k for k in (f"0:/a/{i}.html" for i in range(500)) if 0.02 < m.rate(k) < 0.05)
    rate = m.rate(key)
    window = 20 / rate                                   # 20 changes expected a window
    counts = [len(m.change_times(key, S + i * window, S + (i + 1) * window)) for i in range(400)]
    assert abs(statistics.mean(counts) - 20) < 4 * math.sqrt(20 / 400)
    assert 0.8 < statistics.variance(counts) / statistics.mean(counts) < 1.2   # dispersion index
    # neighbouring windows are independent
    a, b = counts[:-1], counts[1:]
    assert abs(statistics.correlation(a, b)) < 0.15
    # inter-arrival times are exponential: Kolmogorov-Smirnov against 1 - exp(-rate x)
    times = m.change_times(key, S, S + 400 * window)
    gaps = sorted(y - x for x, y in zip(times, times[1:]))
    d = max(abs((i + 1) / len(gaps) - (1 - math.exp(-rate * g))) for i, g in enumerate(gaps))
    assert d < 1.63 / math.sqrt(len(gaps))               # the 1 % critical value


def test_rates_follow_the_mix() -> None:
    c = ChangeConfig(static_share=0.4, min_interval=10, max_interval=10_000)
    m = ChangeModel(c, S)
    rates = [m.rate(f"{i % 4}:/a/{i}.html") for i in range(4000)]
    assert abs(sum(r == 0 for r in rates) / 4000 - 0.4) < 0.03
    logs = sorted((math.log(1 / r) - math.log(10)) / math.log(1000) for r in rates if r)
    assert min(logs) >= 0 and max(logs) <= 1
    d = max(abs((i + 1) / len(logs) - x) for i, x in enumerate(logs))   # log-uniform: KS
    assert d < 1.63 / math.sqrt(len(logs))
    assert [changefreq(r) for r in (0, 1 / 30, 1 / 600, 1 / 7200, 1 / 86400 / 3, 1 / 86400 / 20,
                                   1 / 86400 / 90)] == ["never", "always", "hourly", "daily",
                                                         "weekly", "monthly", "yearly"]


def test_versions_times_and_last_change_agree() -> None:
    m = ChangeModel(ChangeConfig(speed=3.0), S)
    for i in range(60):
        key = f"1:/a/{i}.html"
        times = m.change_times(key, S, S + 3000)
        assert times == sorted(times) and all(S < x <= S + 3000 for x in times)
        assert m.version(key, S + 3000) == len(times)
        assert m.version(key, S) == 0 and m.version(key, S - 100) == 0
        for t in (S + 1000, S + 2999.5):
            before = [x for x in times if x <= t]
            assert m.version(key, t) == len(before)
            if before:
                assert m.last_changed(key, t) == before[-1]
        if m.rate(key) == 0:
            assert times == [] and m.last_changed(key, S + 3000) is None
        elif m.rate(key) > 0.01:   # the process runs before the start too
            assert m.last_changed(key, S) < S


def test_deterministic_and_the_same_at_every_speed() -> None:
    a, b = ChangeModel(ChangeConfig(), S), ChangeModel(ChangeConfig(), S)
    fast = ChangeModel(ChangeConfig(speed=50), S)
    other = ChangeModel(ChangeConfig(), S, seed=2)
    keys = [f"2:/a/{i}.html" for i in range(80)]
    assert a.log(keys, S, S + 5000) == b.log(keys, S, S + 5000)
    assert [(x, k) for x, k in a.log(keys, S, S + 5000)] != other.log(keys, S, S + 5000)
    for k in keys:
        assert fast.rate(k) == pytest.approx(50 * a.rate(k))
        assert fast.change_times(k, S, S + 100) == pytest.approx(
            [S + (x - S) / 50 for x in a.change_times(k, S, S + 5000)], abs=1e-6)
    assert a.births(0, S, S + 7200) == b.births(0, S, S + 7200)


# ---------------------------------------------------------------------------------------------
# the web: changes, noise, validators


def test_a_change_alters_the_main_text_and_noise_never_does(web: DemoWeb) -> None:
    seen_change = seen_noise = seen_link = 0
    for url in changing_pages(web)[:120]:
        t = [x for x in web.change_times(url, S, S + 600)][:1]
        if t:   # just before and just after the first change
            r0, r1 = get(web, url, now=t[0] - 1e-3), get(web, url, now=t[0] + 1e-3)
            assert main_text(url, r0.body) != main_text(url, r1.body)
            assert r0.header("ETag") != r1.header("ETag")
            seen_change += 1
            seen_link += b"See also <a " in r1.body
        # two requests in one version: the same main text and ETag, different bytes when noisy
        v_t = S + 0.25
        later = v_t + 1e-4
        if web.version(url, v_t) != web.version(url, later):
            continue
        a, b = get(web, url, now=v_t), get(web, url, now=later)
        assert main_text(url, a.body) == main_text(url, b.body)
        assert a.header("ETag") == b.header("ETag")
        noisy = web.changes.noisy(web._live_url(url).key)
        assert (a.body != b.body) == noisy
        assert a.header("ETag").startswith("W/") == noisy
        if noisy:
            seen_noise += 1
            assert get(web, url, now=later, if_none_match=a.header("ETag")).status == 304
    assert seen_change > 20 and seen_noise > 10
    assert 0.2 < seen_link / seen_change < 0.8    # link_share 0.5: some changes add a link


def test_noise_kinds_are_always_there_on_their_share_of_pages(web: DemoWeb) -> None:
    kinds: dict[str, int] = {}
    live = [u for u in web.pages() if web._live_url(u) is not None]
    for url in live:
        if not web.changes.noisy(web._live_url(url).key):
            continue
        found = set()
        for now in (S + 1, S + 2.5, S + 400):
            body = get(web, url, now=now).body.decode()
            found.add("ad" if 'class="ad"' in body else "served" if "Served at" in body
                      else "session" if "#s=" in body else "none")
        assert len(found) == 1 and "none" not in found, url   # one kind a page, on every request
        kind = found.pop()
        kinds[kind] = kinds.get(kind, 0) + 1
    assert set(kinds) == {"ad", "served", "session"}
    assert sum(kinds.values()) == pytest.approx(0.3 * len(live), rel=0.25)


def test_etag_and_last_modified_semantics(web: DemoWeb) -> None:
    policies = {web.last_modified_policy(b + "/"): g for g, b in enumerate(web.base_urls)}
    assert set(policies) == {"true", "none", "now"}
    for url in changing_pages(web)[:200]:
        now = S + 300
        r = get(web, url, now=now)
        policy = web.last_modified_policy(url)
        lm = r.header("Last-Modified")
        if policy == "none":
            assert lm is None
        elif policy == "now":
            assert lm == formatdate(now, usegmt=True)
        else:
            assert lm == formatdate(web.last_changed(url, now), usegmt=True)
        assert get(web, url, now=now, if_none_match=r.header("ETag")).status == 304
        assert get(web, url, now=now, if_none_match='"other", ' + r.header("ETag")).status == 304
        assert get(web, url, now=now, if_none_match='"other"').status == 200
        nxt = [x for x in web.change_times(url, now, now + 600)]
        if nxt:   # after the next change the old ETag no longer matches
            assert get(web, url, now=nxt[0] + 1e-3, if_none_match=r.header("ETag")).status == 200
        if policy == "true":
            assert get(web, url, now=now, if_modified_since=lm).status == 304
            if nxt and int(nxt[0]) > int(web.last_changed(url, now)):
                assert get(web, url, now=nxt[0] + 1e-3, if_modified_since=lm).status == 200
        elif policy == "now":   # "now" is newer than anything a client has: never a 304 by date
            assert get(web, url, now=now + 5, if_modified_since=lm).status == 200
        else:
            assert get(web, url, now=now, if_modified_since=formatdate(now, usegmt=True)).status == 200


def test_last_modified_is_the_last_real_change(web: DemoWeb) -> None:
    url = next(u for u in changing_pages(web, host=0) if web.change_rate(u) > 0.1)
    times = web.change_times(url, S, S + 100)
    for x, y in zip(times, times[1:]):
        mid = (x + y) / 2
        lm = parsedate_to_datetime(get(web, url, now=mid).header("Last-Modified")).timestamp()
        assert lm == int(x)
        assert web.version(url, mid) == times.index(x) + 1


def test_static_parts_unchanged_and_now_ignored_by_a_static_web(tmp_path) -> None:
    static, live = DemoWeb(DemoConfig(pages=400, hosts=4), make().base_urls), make()
    for url in static.pages()[::11]:
        a = get(static, url)
        assert get(static, url, now=S + 99) == a
        if live.change_rate(url) == 0 and live.kind(url) not in ("home", "category", "page", "duplicate"):
            assert get(live, url, now=S + 99) == a      # specials, binaries: the static response
    assert get(live, live.base_urls[0] + "/robots.txt") == get(static, static.base_urls[0] + "/robots.txt")
    with pytest.raises(ValueError):
        live.write_static(tmp_path)


def test_copies_follow_their_article(web: DemoWeb) -> None:
    copies = [u for u in web.pages() if web.kind(u) == "duplicate"]
    for u in copies:
        art = web.duplicate_of(u)
        assert web.change_times(u, S, S + 600) == web.change_times(art, S, S + 600)
        assert get(web, u, now=S + 77).header("ETag") == get(web, art, now=S + 77).header("ETag")


# ---------------------------------------------------------------------------------------------
# new articles


def test_new_articles_appear_and_are_linked_from_the_home_page() -> None:
    web = make(DemoConfig(pages=400, hosts=4,
                          changing=ChangeConfig(speed=600, new_per_hour=20, min_interval=60)))
    new = web.new_articles(S, S + 10)
    assert len(new) > 10 and new == sorted(new)
    born, url = new[0]
    assert get(web, url, now=born - 0.01).status == 404
    r = get(web, url, now=born + 0.01)
    assert r.status == 200 and web.last_changed(url, born + 0.01) == pytest.approx(born)
    home = url.split("/a/")[0] + "/"
    assert url not in [l for l in _links(home, get(web, home, now=born - 0.01).body)]
    after = get(web, home, now=born + 0.01)
    assert url in _links(home, after.body)
    assert web.version(home, born + 0.01) == web.version(home, born - 0.01) + 1
    assert born in web.change_times(home, S, S + 10)
    assert url in web.pages_at(born + 0.01) and url not in web.pages_at(born - 0.01)
    log = web.change_log(S, S + 10)
    assert [(c.time, c.url) for c in log if c.kind == "new"] == new
    assert all(S < c.time <= S + 10 for c in log) and log == sorted(log)
    assert len(log) == len(new) + sum(len(web.change_times(u, S, S + 10)) for u in web.pages_at(S + 10))


def _links(url: str, body: bytes) -> list[str]:
    return [l.url for l in parse_with_main_text(body, url)[0].links]


# ---------------------------------------------------------------------------------------------
# sitemaps


def test_sitemaps_give_lastmod_changefreq_and_an_index_with_a_gzip_child(web: DemoWeb) -> None:
    now = S + 120
    for base in web.base_urls:
        sm = parse_sitemap(get(web, base + "/sitemap.xml", now=now).body, base + "/sitemap.xml")
        assert sm.error is None and sm.kind == "urlset"
        policy = web.last_modified_policy(base + "/")
        for e in sm.entries:
            assert e.changefreq == changefreq(web.change_rate(e.loc))
            if policy == "true":
                assert e.lastmod == int(web.last_changed(e.loc, now))
            elif policy == "none":
                assert e.lastmod is None
            else:
                assert e.lastmod == int(now)
        assert {e.loc for e in sm.entries} >= {u for u in web.pages_at(now)
                                              if u.startswith(base + "/") and web.kind(u) in ("home", "page")}
    base = web.base_urls[1]
    robots = get(web, base + "/robots.txt").body.decode()
    assert f"Sitemap: {base}/sitemap-index.xml" in robots
    index = parse_sitemap(get(web, base + "/sitemap-index.xml", now=now).body, base + "/sitemap-index.xml")
    assert index.kind == "sitemapindex"
    children = [parse_sitemap(get(web, s.loc, now=now).body, s.loc) for s in index.sitemaps]
    assert [c.compressed for c in children] == [True, False]
    whole = parse_sitemap(get(web, base + "/sitemap.xml", now=now).body, base + "/sitemap.xml")
    assert sorted(e.loc for c in children for e in c.entries) == sorted(e.loc for e in whole.entries)
