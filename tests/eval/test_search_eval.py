"""Search quality on the demo web: `skitter eval` with the judgments the generator gives for free
(skitter.demo.qrels). Floors are what was measured (docs/search.md) minus a margin."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from skitter.demo.server import DemoServer
from skitter.demo.web import DemoConfig
from skitter.demo.qrels import demo_queries, write_demo_qrels
from skitter.eval.search import metrics

pytestmark = pytest.mark.slow

_MAIN = ("import sys\nfrom skitter.cli import cli, main\nfrom skitter.cli_search import COMMANDS\n"
         "for c in COMMANDS:\n    cli.commands.get(c.name) or cli.add_command(c)\nmain()\n")

# measured on this crawl (4 hosts, 800 pages, seed 2): see docs/search.md
FLOORS = {"precision": 0.75, "recall": 0.88, "P@10": 0.95, "AP": 0.85, "nDCG@10": 0.95}


def skitter(*args: str, timeout: float = 180) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", _MAIN, *args], capture_output=True, text=True, timeout=timeout)


def test_metrics_by_hand():
    rels = {"a": 1, "b": 1, "c": 2, "z": 0}
    m = metrics(["a", "x", "c", "y"], rels)
    assert m["precision"] == 0.5 and m["recall"] == 2 / 3 and m["P@10"] == 0.2
    assert m["AP"] == pytest.approx((1 / 1 + 2 / 3) / 3)
    dcg = 1 / 1 + 2 / 2            # ranks 1 and 3: log2(2) = 1, log2(4) = 2
    idcg = 2 / 1 + 1 / 1.584962500721156 + 1 / 2
    assert m["nDCG@10"] == pytest.approx(dcg / idcg)
    assert metrics([], rels)["precision"] == 0.0


def test_eval_on_the_demo_web(tmp_path):
    out = tmp_path / "crawl"
    with DemoServer(DemoConfig(hosts=4, pages=800, seed=2, crawl_delay=0)) as srv:
        res = subprocess.run([sys.executable, "-m", "skitter", "crawl", *srv.web.seeds(), "-o", str(out),
                              "--delay", "0", "--adaptive-delay", "0", "--max-crawl-delay", "0", "--quiet"],
                             capture_output=True, text=True, timeout=180)
        assert res.returncode == 0, res.stderr
        nq, nrel = write_demo_qrels(srv.web, tmp_path / "queries.tsv", tmp_path / "qrels.txt")
        assert nq == len(demo_queries(srv.web)) == 40 and nrel > 1000
    res = skitter("index", str(out))
    assert res.returncode == 0, res.stderr
    res = skitter("eval", str(out), "--queries", str(tmp_path / "queries.tsv"), "--qrels", str(tmp_path / "qrels.txt"))
    assert res.returncode == 0, res.stderr
    print("\n" + res.stdout)
    assert "mean" in res.stdout and "nDCG@10" in res.stdout
    res = skitter("eval", str(out), "--queries", str(tmp_path / "queries.tsv"), "--qrels", str(tmp_path / "qrels.txt"),
                  "--json")
    figures = json.loads(res.stdout)
    mean = figures["mean"]
    print("mean:", {k: round(v, 4) for k, v in mean.items()})
    assert len(figures["queries"]) == 40
    for name, floor in FLOORS.items():
        assert mean[name] >= floor, f"{name} {mean[name]:.4f} < {floor}"
    # the easy queries (two frequent topic words) are nearly perfect
    easy = [q for q in figures["queries"] if q["id"].endswith("-and")]
    assert min(q["P@10"] for q in easy) >= 0.9
    # as `skitter search` shows them (one page per near-duplicate family): the top stays right,
    # recall drops by the folded pages (the demo web's near-duplicate families and mirror host)
    res = skitter("eval", str(out), "--queries", str(tmp_path / "queries.tsv"), "--qrels", str(tmp_path / "qrels.txt"),
                  "--json", "--collapse")
    collapsed = json.loads(res.stdout)["mean"]
    print("mean, collapsed:", {k: round(v, 4) for k, v in collapsed.items()})
    assert collapsed["P@10"] >= FLOORS["P@10"] and collapsed["nDCG@10"] >= FLOORS["nDCG@10"]
    assert collapsed["precision"] >= FLOORS["precision"]
