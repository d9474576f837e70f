"""Evaluation: the recrawl's freshness on the changing demo web against the ground truth, with the
issue's floor (docs/recrawl.md, bench/recrawl_eval.py).

A whole crawl and recrawl in fake time (the real loop, store and recrawl part; the web in-process):
85 URLs on 3 hosts, 30 % static, the others changing every 30 s to 3 h (log-uniform, 30 % with
noise), a budget of 0.01 fetches a second (one fetch per page every 2.4 hours: far below "every
page every cycle"), 10 hours, the first 3 not scored. Deterministic (fake time, seeded web).

Floor: with the same number of fetches, ``optimal`` on its own estimates earns at least half of
what the optimal policy computed with the true rates adds over uniform:
F ≥ F_uniform + ½ (F_true-optimum − F_uniform). Gains, not ratios (static pages are fresh under any
policy). And the uniform policy, run for real, scores what its simulation scores."""

from __future__ import annotations

from pathlib import Path

import pytest

from skitter.demo.changing import ChangeConfig
from skitter.demo.web import DemoConfig, DemoWeb
from skitter.recrawl.evaluate import run_fake_recrawl
from skitter.testing import EPOCH

pytestmark = pytest.mark.slow

CHANGE = ChangeConfig(speed=1.0, static_share=0.3, min_interval=30.0, max_interval=3 * 3600.0, new_per_hour=0.0)


def web() -> DemoWeb:
    return DemoWeb(DemoConfig(pages=60, hosts=3, changing=CHANGE),
                   [f"http://127.0.0.{2 + i}:8000" for i in range(3)], start_epoch=EPOCH)


def run(tmp_path: Path, policy: str) -> dict:
    return run_fake_recrawl(tmp_path / policy, web(), hours=10, rate=0.01, policy=policy, warmup_hours=3)["scores"]


def test_optimal_earns_half_the_true_optimum_gain_over_uniform(tmp_path: Path) -> None:
    s = run(tmp_path, "optimal")
    f = s["recrawl"]["freshness"]
    u, o = s["uniform (true rates)"]["freshness"], s["optimal (true rates)"]["freshness"]
    assert o > u + 0.03   # a web where the policy matters
    assert f >= u + 0.5 * (o - u), (f, u, o)


def test_uniform_scores_what_its_simulation_does(tmp_path: Path) -> None:
    s = run(tmp_path, "uniform")
    assert abs(s["recrawl"]["freshness"] - s["uniform (true rates)"]["freshness"]) < 0.03
