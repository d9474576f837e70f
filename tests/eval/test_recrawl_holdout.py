"""Evaluation: the recrawl floor on changing webs of another shape than tests/eval/test_recrawl_eval.py's
(issue #20: "a web nobody on the team wrote will also judge it: rates between a few seconds and
tens of minutes, many static pages, a budget far below fetch-everything-every-cycle").

Two seeds of a web of 4 hosts and 90 URLs (80 pages): 60 % of the pages never change, the others
change every 5 s to 40 min (log-uniform: every 2 minutes on the median); a budget of 0.02 fetches
a second, i.e. each URL about once every 75 minutes; 4 hours in fake time, the first not scored. Nothing here was tuned on these seeds: the policy's parameters are
the defaults tuned on the other test's web.

Measured when written (freshness; seed 2 / seed 5): uniform with the true rates 0.743 / 0.828,
optimal with the true rates 0.795 / 0.865, skitter's ``optimal`` on its own estimates 0.780 / 0.859,
so 71 % / 84 % of the true optimum's gain over uniform (the floor is 50 %)."""

from __future__ import annotations

from pathlib import Path

import pytest

from skitter.demo.changing import ChangeConfig
from skitter.demo.web import DemoConfig, DemoWeb
from skitter.recrawl.evaluate import run_fake_recrawl
from skitter.testing import EPOCH

pytestmark = pytest.mark.slow

CHANGE = ChangeConfig(speed=1.0, static_share=0.6, min_interval=5.0, max_interval=40 * 60.0, new_per_hour=0.0)


@pytest.mark.parametrize("seed", [2, 5])
def test_optimal_earns_half_the_true_optimum_gain_on_another_web(tmp_path: Path, seed: int) -> None:
    web = DemoWeb(DemoConfig(seed=seed, pages=80, hosts=4, changing=CHANGE),
                  [f"http://127.0.0.{2 + i}:8000" for i in range(4)], start_epoch=EPOCH)
    s = run_fake_recrawl(tmp_path / "c", web, hours=4, rate=0.02, policy="optimal", warmup_hours=1)["scores"]
    f = s["recrawl"]["freshness"]
    u, o = s["uniform (true rates)"]["freshness"], s["optimal (true rates)"]["freshness"]
    assert o > u + 0.02   # a web where the policy matters
    assert f >= u + 0.5 * (o - u), (f, u, o)
