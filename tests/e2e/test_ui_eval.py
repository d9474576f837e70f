"""End-to-end: the crawl's evaluation on the web UI's crawl page (`skitter serve DIR --labels FILE
[--topic NAME]`), driven by Debian's chromium (headless, through Playwright), as test_web_ui.py.

`skitter demo` crawls a small demo web and writes its labels next to queries.tsv; `skitter serve`
with those labels shows the harvest rate, topic recall at budgets and the importance figures that
skitter.eval computes for the same crawl, and their plots. Without --topic (the demo crawl has
none) the page says how to give one; without --labels the page has no evaluation. Screenshots go
to tests/artifacts/.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

CHROMIUM = "/usr/bin/chromium"
if not os.path.exists(CHROMIUM):
    pytest.skip(f"{CHROMIUM} is not installed (apt-get install chromium)", allow_module_level=True)
playwright_sync = pytest.importorskip("playwright.sync_api")

from skitter.eval.crawl import BUDGETS  # noqa: E402
from skitter.eval.files import evaluate_crawl, load_labels  # noqa: E402

from sites import CHROMIUM_ARGS, Served  # noqa: E402

pytestmark = pytest.mark.slow

ARTIFACTS = Path(__file__).resolve().parents[1] / "artifacts"
TOPIC = "astronomy"
EVAL_PLOTS = ["eval-harvest", "eval-recall", "eval-top", "eval-pagerank"]






@pytest.fixture(scope="module")
def demo_crawl(tmp_path_factory):
    out = tmp_path_factory.mktemp("ui_eval") / "crawl"
    res = subprocess.run([sys.executable, "-m", "skitter", "demo", "--pages", "300", "--hosts", "3", "-o", str(out)],
                         capture_output=True, text=True, timeout=180)
    assert res.returncode == 0, res.stderr
    assert (out / "labels.jsonl").exists(), "skitter demo writes the demo web's labels"
    assert f"--labels {out}/labels.jsonl" in res.stdout
    return out


@pytest.fixture(scope="module")
def browser():
    with playwright_sync.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        yield b
        b.close()


@pytest.fixture
def page(browser):
    ctx = browser.new_context(viewport={"width": 1100, "height": 900})
    pg = ctx.new_page()
    pg.set_default_timeout(10_000)
    yield pg
    ctx.close()


def shot(page, name: str) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"web_ui_{name}.png"), full_page=True)


def pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def wait_for_images(page) -> None:
    page.wait_for_function("() => [...document.images].every(i => i.complete && i.naturalWidth > 0)")


def test_crawl_page_shows_the_evaluation(demo_crawl, page):
    labels = load_labels(demo_crawl / "labels.jsonl")
    assert TOPIC in labels.topics and len(labels) >= 300
    ev = evaluate_crawl(demo_crawl, labels, TOPIC)
    assert ev.fetched > 0 and ev.relevant_total > 0 and ev.harvest_rate > 0

    served = Served(demo_crawl, "--labels", str(demo_crawl / "labels.jsonl"), "--topic", TOPIC)
    try:
        page.goto(served.base + "/crawl")
        assert page.locator("#stats").count() == 1            # the statistics are still there
        assert page.inner_text("#eval-topic") == TOPIC
        assert page.inner_text("#eval-harvest-rate") == pct(ev.harvest_rate)
        assert page.inner_text("#eval-recall") == pct(ev.recall_curve[-1])
        budgets = page.locator("#eval-focused tr.eval-budget").all_inner_texts()
        assert len(budgets) == len(BUDGETS)
        for b, text in zip(BUDGETS, budgets):
            assert text.startswith(f"recall at {b:.0%}")
            assert text.endswith(pct(ev.recall_at[b]) if b in ev.recall_at else "—"), text
        tops = page.locator("#eval-importance .eval-top").all_inner_texts()
        assert tops == [f"{s:.0%}: {pct(v)}" for s, v in sorted(ev.top_share_at.items())]
        avgs = page.locator("#eval-importance .eval-avg").all_inner_texts()
        assert avgs == [f"{v:.2f}" for v in ev.avg_pagerank] and len(avgs) == 10
        # the plots: the four crawl plots, then the four of the evaluation, all real PNGs
        assert page.locator("img.plot").count() == 8
        srcs = page.eval_on_selector_all("img.eval-plot", "els => els.map(e => e.getAttribute('src'))")
        assert srcs == [f"/plot/{n}.png" for n in EVAL_PLOTS]
        wait_for_images(page)
        widths = page.eval_on_selector_all("img.eval-plot", "els => els.map(e => e.naturalWidth)")
        assert all(w >= 400 for w in widths), widths
        assert page.locator("script").count() == 0
        shot(page, "crawl_eval")
        for n in EVAL_PLOTS:
            resp = page.request.get(f"{served.base}/plot/{n}.png")
            assert resp.status == 200 and resp.headers["content-type"] == "image/png"
            assert resp.body()[:8] == b"\x89PNG\r\n\x1a\n"
    finally:
        served.stop()


def test_without_topic_or_labels(demo_crawl, page):
    # --labels without --topic: the demo crawl has no --topic, so no harvest rate; importance stays
    served = Served(demo_crawl, "--labels", str(demo_crawl / "labels.jsonl"))
    try:
        page.goto(served.base + "/crawl")
        note = page.inner_text("#eval-no-topic")
        assert "--topic NAME" in note and TOPIC in note
        assert page.locator("#eval-harvest-rate").count() == 0
        assert page.locator("#eval-importance .eval-avg").count() == 10
        srcs = page.eval_on_selector_all("img.eval-plot", "els => els.map(e => e.getAttribute('src'))")
        assert srcs == ["/plot/eval-top.png", "/plot/eval-pagerank.png"]
        wait_for_images(page)
        assert page.request.get(served.base + "/plot/eval-harvest.png").status == 404
    finally:
        served.stop()
    # without --labels the page is as before
    served = Served(demo_crawl)
    try:
        page.goto(served.base + "/crawl")
        assert page.locator("#evaluation").count() == 0
        assert page.locator("img.plot").count() == 4
        assert page.request.get(served.base + "/plot/eval-top.png").status == 404
    finally:
        served.stop()
    # bad options are usage errors
    res = subprocess.run([sys.executable, "-m", "skitter", "serve", str(demo_crawl), "--labels",
                          str(demo_crawl / "labels.jsonl"), "--topic", "nope"], capture_output=True, text=True,
                         timeout=60)
    assert res.returncode == 2 and "not a topic" in res.stderr
