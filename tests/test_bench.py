"""Smoke runs of the benchmark scripts at tiny sizes: they run and report every measurement."""

import json
import sys

from conftest import ROOT

sys.path.insert(0, str(ROOT / "bench"))
import accumulation  # noqa: E402
import parameters  # noqa: E402


def test_accumulation_benchmark_reports_every_method(tmp_path, capsys):
    report = accumulation.main(["--sizes", "6", "12", "--batch", "2", "--dim", "16", "--heads", "2",
                                "--rows", "8", "--repeats", "1", "--device", "cpu",
                                "--json", str(tmp_path / "out.json")])
    assert json.loads((tmp_path / "out.json").read_text()) == report
    assert [row["n"] for row in report["results"]] == [6, 12]
    for row in report["results"]:
        for method in ("ours", "ours/layer", "dense", "mha", "tree-attn"):
            assert row[method]["ms"] > 0 and row[method]["peak_mb"] > 0, (row, method)
    printed = capsys.readouterr().out.splitlines()
    assert printed[0].split()[:2] == ["n", "m"] and len(printed) == 3


def test_parameter_report_matches_the_models(tmp_path):
    rows = parameters.main(["--vocabulary", "1000", "--json", str(tmp_path / "p.json")])
    assert [r["tree2seq"] for r in rows] == [pair[0] for pair in parameters.PAIRS]
    for row in rows:
        assert 0 < row["tree2seq_parameters"] - row["transformer_parameters"] < 200_000
