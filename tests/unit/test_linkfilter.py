"""LinkFilter (skitter.linkfilter): every rejection reason, its counter, and the budgets."""

from __future__ import annotations

from collections import Counter

import pytest

from skitter.config import CrawlConfig
from skitter.linkfilter import LinkFilter


def lf(seeds=("http://www.example.co.uk/",), admitted=None, **config) -> LinkFilter:
    return LinkFilter(CrawlConfig(**config), list(seeds), admitted)


def test_a_plain_in_scope_link_is_admitted():
    f = lf()
    assert f.reject_reason("http://www.example.co.uk/about", 1) is None
    assert f.admit("http://www.example.co.uk/about", 1)
    assert not f.rejected


# -- depth -----------------------------------------------------------------------------------

def test_depth():
    f = lf(max_depth=2)
    assert f.admit("http://www.example.co.uk/a", 2)
    assert f.reject_reason("http://www.example.co.uk/a", 3) == "depth"
    assert not f.admit("http://www.example.co.uk/a", 3)
    assert f.rejected == Counter({"depth": 1})


def test_depth_zero_keeps_only_the_seeds():
    f = lf(max_depth=0)
    assert f.admit("http://www.example.co.uk/", 0)
    assert f.reject_reason("http://www.example.co.uk/x", 1) == "depth"


# -- URL length ------------------------------------------------------------------------------

def test_url_length():
    base = "http://www.example.co.uk/"
    f = lf(max_url_length=40)
    ok = base + "a" * (40 - len(base))
    assert len(ok) == 40 and f.admit(ok, 1)
    assert f.reject_reason(ok + "b", 1) == "url-length"


# -- repeated segments ------------------------------------------------------------------------

def test_repeated_segments():
    f = lf(max_repeated_segments=3)
    assert f.admit("http://www.example.co.uk/a/b/a/b/a/", 1)             # "a" three times: allowed
    assert f.reject_reason("http://www.example.co.uk/a/b/a/b/a/b/a", 1) == "repeated-segments"
    assert f.reject_reason("http://www.example.co.uk/x/x/x/x", 1) == "repeated-segments"


def test_repeated_segments_zero_turns_the_check_off():
    f = lf(max_repeated_segments=0)
    assert f.admit("http://www.example.co.uk/x/x/x/x/x/x/x", 1)


# -- scope -------------------------------------------------------------------------------------

def test_scope_host():
    f = lf(seeds=["http://a.example.co.uk/"], scope="host")
    assert f.admit("http://a.example.co.uk/page", 1)
    assert f.admit("http://a.example.co.uk:8080/page", 1)               # the port does not matter
    assert f.reject_reason("http://b.example.co.uk/page", 1) == "scope"
    assert f.reject_reason("http://example.co.uk/page", 1) == "scope"
    assert f.reject_reason("http://other.test/", 1) == "scope"


def test_scope_domain_takes_sibling_subdomains_of_the_registrable_domain():
    f = lf(seeds=["http://a.example.co.uk/"], scope="domain")
    assert f.admit("http://b.example.co.uk/page", 1)
    assert f.admit("http://example.co.uk/", 1)
    assert f.admit("http://deep.er.example.co.uk/", 1)
    assert f.reject_reason("http://b.other.co.uk/", 1) == "scope"       # co.uk is a public suffix
    assert f.reject_reason("http://co.uk/", 1) == "scope"
    assert f.reject_reason("http://example.com/", 1) == "scope"


def test_scope_domain_respects_private_public_suffixes():
    f = lf(seeds=["https://alice.github.io/"], scope="domain")
    assert f.admit("https://alice.github.io/x", 1)
    assert f.reject_reason("https://bob.github.io/x", 1) == "scope"     # different sites


def test_scope_any():
    f = lf(seeds=["http://a.example.co.uk/"], scope="any")
    assert f.admit("http://elsewhere.test/", 1)
    assert f.admit("https://203.0.113.9:8443/x", 1)


def test_several_seeds_make_one_scope():
    f = lf(seeds=["http://a.test/", "http://b.test/"], scope="host")
    assert f.admit("http://a.test/x", 1) and f.admit("http://b.test/y", 1)
    assert f.reject_reason("http://c.test/", 1) == "scope"


# -- per-host budget ---------------------------------------------------------------------------

def test_host_budget():
    f = lf(seeds=["http://a.test/"], scope="any", max_pages_per_host=2)
    for i in range(2):
        assert f.admit(f"http://a.test/{i}", 1)
        f.admitted_new(f"http://a.test/{i}")
    assert f.reject_reason("http://a.test/2", 1) == "host-budget"
    assert f.admit("http://b.test/0", 1)                                  # per host
    assert f.admit("http://a.test:8080/0", 1)                             # another port: another host key


def test_host_budget_counts_what_a_previous_run_admitted():
    f = lf(seeds=["http://a.test/"], max_pages_per_host=3, admitted=Counter({"a.test": 3}))
    assert f.reject_reason("http://a.test/new", 1) == "host-budget"


def test_host_budget_zero_is_unlimited():
    f = lf(seeds=["http://a.test/"], max_pages_per_host=0, admitted=Counter({"a.test": 10**6}))
    assert f.admit("http://a.test/new", 1)


# -- the seed-002 burst throttle ---------------------------------------------------------------

def test_host_burst_and_its_window():
    f = lf(seeds=["http://a.test/"], scope="any", host_burst=2, host_window=5)
    for i in range(2):
        assert f.admit(f"http://a.test/{i}", 1)
        f.admitted_new(f"http://a.test/{i}")
    assert f.reject_reason("http://a.test/2", 1) == "host-burst"
    assert f.admit("http://b.test/0", 1)                                  # other hosts are not throttled
    for _ in range(4):
        f.processed()
    assert f.reject_reason("http://a.test/2", 1) == "host-burst"          # 4 processed: window not over
    f.processed()                                                         # the 5th: a new window
    assert f.admit("http://a.test/2", 1)
    f.admitted_new("http://a.test/2")
    f.admitted_new("http://a.test/3")
    assert f.reject_reason("http://a.test/4", 1) == "host-burst"
    for _ in range(5):
        f.processed()
    assert f.admit("http://a.test/4", 1)
    assert f.admitted["a.test"] == 4                                      # the budget is not reset


def test_host_burst_zero_is_off():
    f = lf(seeds=["http://a.test/"], host_burst=0, host_window=1)
    for i in range(50):
        f.admitted_new(f"http://a.test/{i}")
        f.processed()
    assert f.admit("http://a.test/x", 1)


def test_host_window_zero_does_not_crash():
    """--host-window 0 with --host-burst: the burst counters start again after every URL."""
    f = lf(seeds=["http://a.test/"], host_burst=1, host_window=0)
    f.admitted_new("http://a.test/0")
    assert f.reject_reason("http://a.test/1", 1) == "host-burst"
    f.processed()
    assert f.admit("http://a.test/1", 1)


# -- order of checks and counters ---------------------------------------------------------------

def test_first_failing_check_names_the_reason():
    f = lf(seeds=["http://a.test/"], max_depth=1, max_url_length=30)
    long_offsite = "http://elsewhere.test/" + "x" * 40
    assert f.reject_reason(long_offsite, 5) == "depth"
    assert f.reject_reason(long_offsite, 1) == "url-length"
    assert f.reject_reason("http://elsewhere.test/x/x/x/x", 1) == "repeated-segments"
    assert f.reject_reason("http://elsewhere.test/", 1) == "scope"


def test_rejected_counters():
    f = lf(seeds=["http://a.test/"], max_depth=2, max_url_length=60, max_pages_per_host=1,
           host_burst=0)
    f.admitted_new("http://a.test/")
    links = [
        ("http://a.test/deep", 3),
        ("http://a.test/deeper", 4),
        ("http://a.test/" + "y" * 60, 1),
        ("http://a.test/t/t/t/t", 1),
        ("http://b.test/", 1),
        ("http://c.test/", 1),
        ("http://d.test/", 1),
        ("http://a.test/over-budget", 1),
    ]
    results = [f.admit(u, d) for u, d in links]
    assert results == [False] * len(links)
    assert f.rejected == Counter({"depth": 2, "url-length": 1, "repeated-segments": 1, "scope": 3,
                                  "host-budget": 1})
    # reject_reason alone does not count
    f.reject_reason("http://b.test/", 1)
    assert f.rejected["scope"] == 3


@pytest.mark.parametrize("scope", ["host", "domain", "any"])
def test_the_seed_itself_is_in_every_scope(scope):
    f = lf(seeds=["http://www.example.co.uk/start"], scope=scope)
    assert f.admit("http://www.example.co.uk/start", 0)
