"""configs/, scripts/train.sh and scripts/evaluate.sh (configs/runner,
fairseq_tree.checkpoint_averaging).

The dry runs check the commands the paper's experiments run; one real run trains tiny tree2seq and
Transformer models on the Bible sample laid out like a recipe's output, evaluates them, and checks
the reported BLEU against fairseq-score and the sacrebleu command line, and the averaged model
against the mean of the checkpoints it names.
"""

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from conftest import BIBLE, BIN, ROOT, run_cli, write_lines
from fairseq.models import ARCH_MODEL_REGISTRY

from fairseq_tree.checkpoint_averaging import average_states, last_checkpoints
from fairseq_tree.cli import bpe
from fairseq_tree.errors import CliError, FairseqTreeError

from configs.runner import experiment
from configs.runner.config import known_pairs, load_experiment

CONFIGS = ROOT / "configs"
PAIRS = ["iwslt13-en-fr", "iwslt13-fr-en", "iwslt14-de-en", "iwslt14-en-de", "wmt14-en-de"]
BIBLE_MODELS = ["tree2seq", "transformer", "transformer-linearized"]
BENCHMARKS = {"bible-en-fr": BIBLE_MODELS, "bible-en-fr-sample": BIBLE_MODELS,
              "bible-fr-en": BIBLE_MODELS, "bible-en-fr-induced": BIBLE_MODELS,
              "bible-fr-en-induced": BIBLE_MODELS, "bible-en-fr-spacy": BIBLE_MODELS,
              "bible-fr-en-spacy": BIBLE_MODELS, "bible-en-fr-contrastive": BIBLE_MODELS,
              "bible-en-fr-contrastive-spacy": BIBLE_MODELS,
              "synthetic": ["tree2seq", "transformer", "transformer-linearized",
                            "tree2seq-no-hier-embed", "tree2seq-no-subtree-mask",
                            "tree2seq-released"],
              "bible-en-fr-sample-target-spacy": BIBLE_MODELS,
              "hierarchical-tense": ["tree2seq", "transformer", "transformer-linearized",
                                     "tree2seq-nodes-only", "tree2seq-no-subtree-mask",
                                     "tree2seq-multi-leaf-nodes"],
              "hierarchical-tense-output-trees": ["tree2seq", "transformer",
                                                  "tree2seq-syntactic-decoder",
                                                  "transformer-syntactic-decoder"],
              "hierarchical-tense-right-branching": ["tree2seq"],
              "hierarchical-tense-spacy": ["tree2seq"],
              "hierarchical-question": ["tree2seq", "transformer", "transformer-linearized",
                                        "tree2seq-nodes-only"],
              "hierarchical-question-right-branching": ["tree2seq"]}
LANGUAGE_MODELS = {"hierarchical-tense-lm": "transformer-lm"}
# What the benchmarks' baselines read of the same data-bin (tree2seq: the tree).
BASELINE_INPUT = {"transformer": "leaves-only", "transformer-linearized": "linearized",
                  "transformer-syntactic-decoder": "leaves-only"}
# Models whose architecture is not plain tree2seq's or fairseq's Transformer's.
ARCHS = {"tree2seq-syntactic-decoder": "tree2seq_syntactic_decoder",
         "transformer-syntactic-decoder": "transformer_syntactic_decoder"}
PAPER_BLEU = {"iwslt14-en-de": 29.47, "iwslt14-de-en": 35.96, "iwslt13-en-fr": 45.53,
              "iwslt13-fr-en": 44.34, "wmt14-en-de": 28.40}
# Table 2 (and Table 3's SST-5 ablations): tree model, the paper's Transformer.
CLASSIFICATION = {"sst5": (47.4, 37.6), "sst2": (84.3, 74.8), "imdb": (90.1, 86.5),
                  "sva": (98.0, 94.4)}
SENTIMENT_BENCHMARKS = ["rt-snippets-2", "rt-snippets-5"]
# Ahmed et al. (2019), CTT: Table 1 (PE off; MSRP: Table 2), Table 2 (PE on), Table 3 (one head,
# several heads): SICK-E accuracy, SICK-R mse, MSRP accuracy.
PAIR_TASKS = {"sick-e": ("accuracy", [82.72, 81.83, 80.17, 79.66]),
              "sick-r": ("mse", [0.3012, 0.3088, 0.4657, 0.4346]),
              "msrp": ("accuracy", [68.62, 71.73, 69.35, 70.01])}
MULTIBRANCH = ["recursive_multibranch_classifier",
               "recursive_multibranch_classifier-positional-encoding",
               "recursive_multibranch_classifier-single-head",
               "recursive_multibranch_classifier-multi-head"]


def run_experiment(capsys, monkeypatch, *argv, **env):
    """cli_main in this process (no fairseq start-up per call): exit status, stdout, stderr."""
    for name, value in {"CONFIG_DIR": str(CONFIGS), **env}.items():
        monkeypatch.setenv(name, str(value))
    with pytest.raises(SystemExit) as exit_info:
        experiment.cli_main(list(map(str, argv)))
    out = capsys.readouterr()
    code = exit_info.value.code
    return (code if isinstance(code, int) else 1 if code else 0), out.out, out.err + str(code or "")


def dry_run(capsys, monkeypatch, pair, model, gpus, *extra):
    code, out, err = run_experiment(capsys, monkeypatch, "train", pair, model, "--dry-run",
                                    "--num-gpus", gpus, *extra)
    assert code == 0, err
    command = out.strip().splitlines()[-1].split()
    return out, command


def option(command, name):
    assert command.count(name) == 1, (name, command)
    return command[command.index(name) + 1]


# ---------------------------------------------------------------------------------------------
# Configs and commands


def test_every_pair_has_both_models_and_the_papers_numbers():
    others = (set(BENCHMARKS) | set(CLASSIFICATION) | set(SENTIMENT_BENCHMARKS) | set(PAIR_TASKS)
              | set(LANGUAGE_MODELS) | {"agreement"})
    assert sorted(set(known_pairs(CONFIGS)) - others) == PAIRS
    for pair in PAIRS:
        big = ["tree2seq-big", "transformer-big"] if pair.startswith("wmt") else []
        for model in ["tree2seq", "transformer", *big]:
            exp = load_experiment(CONFIGS, pair, model)
            assert exp.train["arch"] in ARCH_MODEL_REGISTRY, exp.train["arch"]
            assert (exp.task.get("tree-input") == "leaves-only") == model.startswith("transformer")
            assert exp.train["criterion"] == "label_smoothed_cross_entropy"
            assert exp.train["label-smoothing"] == 0.1 and exp.train["share-all-embeddings"]
            assert exp.generate["remove-bpe"] is True and exp.generate["beam"] == 5
    iwslt = load_experiment(CONFIGS, "iwslt14-de-en", "tree2seq")
    train = iwslt.train
    assert (iwslt.tokens_per_update, train["max-update"], train["dropout"]) == (4096, 60000, 0.3)
    assert (train["lr"], train["weight-decay"], train["warmup-updates"]) == ("5e-4", "1e-4", 4000)
    assert (iwslt.average, iwslt.checkpoints, iwslt.compound_split) == (10, "epochs", False)
    assert [load_experiment(CONFIGS, p, "tree2seq").generate["lenpen"]
            for p in PAIRS] == [0.7, 0.7, 1.0, 1.0, 0.6]
    assert {p: load_experiment(CONFIGS, p, "tree2seq").paper_bleu for p in PAIRS} == PAPER_BLEU
    base = load_experiment(CONFIGS, "wmt14-en-de", "transformer")
    train = base.train
    assert (base.tokens_per_update, train["max-update"], train["lr"]) == (32768, 200000, "7e-4")
    assert (train["dropout"], base.average, base.checkpoints) == (0.1, 5, "updates")
    assert base.compound_split
    assert base.train["keep-interval-updates"] == base.average
    big = load_experiment(CONFIGS, "wmt14-en-de", "tree2seq-big")
    assert (big.tokens_per_update, big.train["max-update"]) == (524288, 20000)
    assert big.paper_bleu == 29.95
    assert big.train["arch"] == "tree2seq_vaswani_wmt_en_de_big"


def test_benchmark_configs_compare_models_of_one_size_at_one_budget():
    """The benchmarks' configs: every model has tree2seq's size, batches and updates; only the
    model (and each ablation's one flag) differs."""
    for pair, models in BENCHMARKS.items():
        base = load_experiment(CONFIGS, pair, "tree2seq")
        for model in models:
            exp = load_experiment(CONFIGS, pair, model)
            train = dict(exp.train)
            arch, flag = train.pop("arch"), {"tree2seq-no-hier-embed": "no-hier-embed",
                                             "tree2seq-no-subtree-mask": "no-subtree-mask",
                                             "tree2seq-released": "released-accumulation",
                                             "tree2seq-nodes-only": "cross-attention-nodes-only"}
            assert train.pop(flag.get(model, "-"), True) is True
            assert train == {k: v for k, v in base.train.items() if k != "arch"}, (pair, model)
            assert arch == ARCHS.get(model, "transformer" if model in BASELINE_INPUT else "tree2seq")
            assert exp.task.get("tree-input") == BASELINE_INPUT.get(model)
            assert (exp.generate, exp.average, exp.checkpoints) == \
                (base.generate, 1, base.checkpoints)
        assert isinstance(base.train["max-update"], int) and base.train["batch-size"] == 64
        # an early-stopped benchmark is evaluated at its best valid loss, the others at the end
        assert base.checkpoints == ("best" if base.train.get("patience") else "last"), pair
    for pair in ("bible-en-fr", "bible-fr-en"):  # other trees: the same budget as the base pair's
        for trees in ("induced", "spacy"):
            other = load_experiment(CONFIGS, f"{pair}-{trees}", "tree2seq")
            assert other.train == load_experiment(CONFIGS, pair, "tree2seq").train
    for pair, others in {"hierarchical-tense": ("right-branching", "spacy"),
                         "hierarchical-question": ("right-branching",)}.items():
        base = load_experiment(CONFIGS, pair, "tree2seq")
        assert base.generate["beam"] == 1  # greedy, as McCoy et al.
        for trees in others:
            other = load_experiment(CONFIGS, f"{pair}-{trees}", "tree2seq")
            assert (other.train, other.generate) == (base.train, base.generate)


def test_configs_that_change_the_data_not_the_model_say_so_in_their_task_only():
    """Output trees and trees without one-leaf nodes are task options over the same model;
    fairseq's language model shares the sequence-to-sequence models' budget."""
    for pair in ("hierarchical-tense-output-trees", "bible-en-fr-sample-target-spacy"):
        for model in BENCHMARKS[pair]:
            assert load_experiment(CONFIGS, pair, model).task["target-trees"] is True
    dropped = load_experiment(CONFIGS, "hierarchical-tense", "tree2seq-multi-leaf-nodes")
    assert dropped.task == {"drop-single-leaf-nodes": True}
    assert load_experiment(CONFIGS, "bible-en-fr-sample-target-spacy", "tree2seq").train == (
        load_experiment(CONFIGS, "bible-en-fr-sample", "tree2seq").train)
    seq2seq = load_experiment(CONFIGS, "hierarchical-tense", "tree2seq")
    for pair, model in LANGUAGE_MODELS.items():
        lm = load_experiment(CONFIGS, pair, model)
        assert (lm.kind, lm.fairseq_task, lm.train["arch"]) == (
            "language_model", "language_modeling", "transformer_lm")
        shared = ("batch-size", "lr", "lr-scheduler", "warmup-updates", "max-update", "patience",
                  "validate-interval-updates", "decoder-embed-dim", "decoder-ffn-embed-dim")
        assert {k: lm.train[k] for k in shared} == {k: seq2seq.train[k] for k in shared}
        assert lm.train["encoder-layers"] is None and lm.train["criterion"] == "cross_entropy"


def test_classification_configs_hold_the_papers_settings():
    """Table 2's tasks: tiny models, 15,000 updates of 2,048 tokens, SST's and IMDB/SVA's
    learning rates, warm-ups and dropouts (Appendix 7.4), the paper's accuracies."""
    for name, (tree, transformer) in CLASSIFICATION.items():
        sst = name.startswith("sst")
        for model in ("tree_classifier", "roberta", "tree_classifier-no-hier-embed",
                      "tree_classifier-no-subtree-mask"):
            exp = load_experiment(CONFIGS, name, model)
            assert (exp.kind, exp.fairseq_task) == ("classification", "tree_classification")
            assert (exp.tokens_per_update, exp.train["max-update"]) == (2048, 15000)
            assert (exp.train["lr"], exp.train["warmup-updates"], exp.train["dropout"]) == (
                ("7e-4", 8000, 0.5) if sst else (0.01, 20, 0.2))
            assert exp.train["arch"] in ARCH_MODEL_REGISTRY
            assert (exp.task.get("tree-input") == "leaves-only") == (model == "roberta")
            assert exp.train.get("no-hier-embed", False) == model.endswith("hier-embed")
            assert exp.train.get("no-subtree-mask", False) == model.endswith("subtree-mask")
            # SST's tree models learn every node's label; SST-2 is scored from five classes
            per_node = sst and model != "roberta"
            assert bool(exp.task.get("node-targets")) == per_node
            assert exp.train["criterion"] == (
                "node_classification" if per_node else "sentence_prediction")
            assert (exp.train.get("class-groups") == "0,1/3,4") == (per_node and name == "sst2")
            assert (exp.average, exp.checkpoints) == (1, "best")
            assert exp.data_bin == f"data-bin/{name}"
        assert load_experiment(CONFIGS, name, "tree_classifier").paper_accuracy == tree
        assert load_experiment(CONFIGS, name, "roberta").paper_accuracy == transformer
        roberta = load_experiment(CONFIGS, name, "roberta").train
        assert (roberta["encoder-layers"], roberta["encoder-embed-dim"],
                roberta["encoder-ffn-embed-dim"], roberta["encoder-attention-heads"]) == (
            2, 64, 128, 4)  # = tree_classifier_tiny
    ablations = [load_experiment(CONFIGS, "sst5", f"tree_classifier-no-{x}").paper_accuracy
                 for x in ("hier-embed", "subtree-mask")]
    assert ablations == [46.1, 45.7]  # Table 3


def test_agreement_config_holds_the_papers_sva_settings_for_every_encoder():
    """Agreement from the Bibles: every encoder at SVA's settings (Appendix 7.4) and one budget;
    roberta on the leaves, DTT on the dependency parses; no paper accuracy beside it (Table 2's
    is on other data)."""
    base = load_experiment(CONFIGS, "agreement", "tree_classifier")
    for model in ("tree_classifier", "roberta", "recursive_tree_attention_classifier",
                  "recursive_multibranch_classifier",
                  "recursive_multibranch_classifier-dependency"):
        exp = load_experiment(CONFIGS, "agreement", model)
        assert (exp.train["lr"], exp.train["warmup-updates"], exp.train["dropout"]) == (0.01, 20,
                                                                                       0.2)
        assert (exp.tokens_per_update, exp.train["max-update"]) == (
            base.tokens_per_update, base.train["max-update"])
        assert exp.train["arch"].endswith("_tiny") or model == "roberta"
        assert (exp.task.get("tree-input") == "leaves-only") == (model == "roberta")
        assert bool(exp.train.get("dependency")) == model.endswith("-dependency")
        assert exp.paper_accuracy is None and exp.data_bin == "data-bin/agreement"


def test_agreement_coordinations_model_is_the_measured_setting():
    """The config's model for coordinated verbs trains with the flags of the job list whose
    3 seeds bench/RESULTS.md reports, over the config's Recursive Tree Attention, and nothing
    else differs."""
    jobs = (ROOT / "bench" / "jobs"
            / "agreement-coordination-past-root-queried-frontier-d128-lr003-cpu.tsv")
    line = next(line for line in jobs.read_text().splitlines()
                if "\t" in line and not line.startswith("#"))
    extra = re.search(r"bench\.sentiment .*? -- (.*?);", line).group(1).split()
    measured = {name[2:]: value for name, value in zip(extra[::2], extra[1::2], strict=True)}
    base = load_experiment(CONFIGS, "agreement", "recursive_tree_attention_classifier").train
    exp = load_experiment(CONFIGS, "agreement", "recursive_tree_attention_classifier-coordinations")
    assert {name: str(exp.train[name]) for name in measured} == measured
    assert {k: v for k, v in exp.train.items() if k not in measured} == \
        {k: v for k, v in base.items() if k not in measured}
    assert measured["head-reads"] == "root-and-root-queried-right-frontier"


def test_recursive_encoder_configs_hold_their_papers_settings(tmp_path):
    """Ahmed et al.'s CTT on SST-2 and the pair tasks (Adagrad 2e-4, 300-d, its ablations and
    numbers); Recursive Tree Attention on SST-5, SST-2 and IMDB (10,000 steps; batches of 256
    sentences on SST; its Table 1 with ablations)."""
    for name, (metric, paper) in PAIR_TASKS.items():
        for model, number in zip(MULTIBRANCH, paper, strict=True):
            exp = load_experiment(CONFIGS, name, model)
            assert (exp.metric, exp.paper_result, exp.data_bin) == (
                metric, number, f"data-bin/{name}")
            assert (exp.train["optimizer"], exp.train["lr"], exp.train["batch-size"]) == (
                "adagrad", "2e-4", 25)
            assert exp.train["arch"] == "recursive_multibranch_classifier"
            assert exp.train.get("positional-encoding", False) == model.endswith("encoding")
            assert exp.train.get("composition-attention", "multi-branch") == (
                model.rsplit("-", 2)[-2] + "-head" if model.endswith("head") else "multi-branch")
    sick_r = load_experiment(CONFIGS, "sick-r", MULTIBRANCH[0])
    assert (sick_r.train["criterion"], sick_r.task["num-classes"]) == ("score_distribution", 5)
    assert (sick_r.train["best-checkpoint-metric"], sick_r.train["maximize-best-checkpoint-metric"]
            ) == ("mse", False)
    sst2 = [load_experiment(CONFIGS, "sst2", model) for model in MULTIBRANCH]
    assert [exp.paper_accuracy for exp in sst2] == [86.66, 83.96, 84.58, 83.74]
    assert all(exp.train["optimizer"] == "adagrad" and exp.train["adam-betas"] is None
               for exp in sst2)
    rta = "recursive_tree_attention_classifier"
    ablations = {"sst5": [48.7, 36.7, 47.7, 46.0], "sst2": [89.1, 80.2, 87.5, 87.1]}
    for name, paper in ablations.items():
        for flag, number in zip(["", "plain-attention", "no-node-positions",
                                 "no-label-embeddings"], paper, strict=True):
            exp = load_experiment(CONFIGS, name, f"{rta}-{flag}" if flag else rta)
            assert exp.paper_accuracy == number and exp.train["arch"] == rta
            assert (exp.train["batch-size"], exp.train["max-update"]) == (256, 10000)
            assert [k for k in ("plain-attention", "no-node-positions", "no-label-embeddings")
                    if exp.train.get(k)] == ([flag] if flag else [])
    imdb = load_experiment(CONFIGS, "imdb", rta)
    assert (imdb.paper_accuracy, imdb.train["max-update"]) == (91.2, 10000)
    for exp in [*sst2, imdb]:
        assert exp.train["arch"] in ARCH_MODEL_REGISTRY
    (tmp_path / "bad.yaml").write_text("base: %s\nmetric: f1\n" % (CONFIGS / "sick-e.yaml"))
    with pytest.raises(CliError, match="metric is 'f1', not one of"):
        load_experiment(tmp_path, "bad", MULTIBRANCH[0])


# (pair, model, GPUs) -> (--update-freq, per-GPU --max-tokens): processes x max-tokens x
# update-freq is the paper's batch, and no GPU gets more than 4096 tokens.
BATCHES = [
    ("iwslt14-en-de", "tree2seq", 0, 1, 4096), ("iwslt14-en-de", "transformer", 1, 1, 4096),
    ("iwslt13-fr-en", "tree2seq", 2, 1, 2048), ("iwslt14-de-en", "transformer", 8, 1, 512),
    ("wmt14-en-de", "tree2seq", 0, 8, 4096), ("wmt14-en-de", "transformer", 1, 8, 4096),
    ("wmt14-en-de", "tree2seq", 2, 4, 4096), ("wmt14-en-de", "transformer", 8, 1, 4096),
    ("wmt14-en-de", "tree2seq", 3, 3, 3640),  # 3 x 3640 x 3 = 32760: rounded down
    ("wmt14-en-de", "tree2seq-big", 8, 16, 4096), ("wmt14-en-de", "transformer-big", 1, 128, 4096),
    ("wmt14-en-de", "tree2seq-big", 0, 128, 4096),
]


@pytest.mark.parametrize("pair,model,gpus,update_freq,max_tokens", BATCHES)
def test_dry_run_spreads_the_papers_batch_over_the_gpus(capsys, monkeypatch, pair, model, gpus,
                                                        update_freq, max_tokens):
    out, cmd = dry_run(capsys, monkeypatch, pair, model, gpus)
    assert cmd[0] == str(BIN / "fairseq-tree-train") and cmd[1].endswith(f"{pair}/data-bin")
    assert option(cmd, "--update-freq") == str(update_freq)
    assert option(cmd, "--max-tokens") == str(max_tokens)
    effective = max(1, gpus) * max_tokens * update_freq
    assert f"update-freq {update_freq} = {effective} tokens per update" in out
    assert ("--distributed-world-size" in cmd) == (gpus > 1)
    if gpus > 1:
        assert option(cmd, "--distributed-world-size") == str(gpus)
    assert ("--fp16" in cmd) == (gpus > 0)
    assert option(cmd, "--task") == "tree_translation"
    assert option(cmd, "--user-dir") == str(ROOT / "fairseq_tree")
    assert option(cmd, "--arch") == load_experiment(CONFIGS, pair, model).train["arch"]
    assert ("--tree-input" in cmd) == model.startswith("transformer")
    assert option(cmd, "--save-dir").endswith(f"{pair}/{model}")


@pytest.mark.parametrize("name,model,gpus,update_freq", [("sst2", "tree_classifier", 0, 1),
                                                          ("imdb", "roberta", 2, 1),
                                                          ("rt-snippets-5", "roberta", 0, 1)])
def test_dry_run_of_a_classification_task(capsys, monkeypatch, name, model, gpus, update_freq):
    out, cmd = dry_run(capsys, monkeypatch, name, model, gpus)
    exp = load_experiment(CONFIGS, name, model)
    assert cmd[1].endswith(f"{exp.pair}/{exp.data_bin}")
    assert option(cmd, "--task") == "tree_classification" and "--source-lang" not in cmd
    assert option(cmd, "--save-dir").endswith(f"{name}/{model}")  # the config's name
    assert option(cmd, "--arch") == exp.train["arch"]
    assert int(option(cmd, "--max-tokens")) * max(1, gpus) == exp.tokens_per_update
    assert option(cmd, "--update-freq") == str(update_freq)
    assert ("--tree-input" in cmd) == (model == "roberta")


def test_extra_arguments_override_the_config(capsys, monkeypatch):
    out, cmd = dry_run(capsys, monkeypatch, "wmt14-en-de", "tree2seq", 1, "--max-tokens", "2048",
                       "--max-update", "10")
    assert (option(cmd, "--max-tokens"), option(cmd, "--update-freq")) == ("2048", "16")
    assert cmd[-2:] == ["--max-update", "10"]  # after the config's: fairseq keeps the last
    out, cmd = dry_run(capsys, monkeypatch, "wmt14-en-de", "tree2seq", 1, "--update-freq=2")
    assert (option(cmd, "--max-tokens"), option(cmd, "--update-freq")) == ("4096", "2")
    assert "= 8192 tokens per update (paper: 32768)" in out


def test_dry_run_names_the_papers_batch_only_for_the_papers_experiments(capsys, monkeypatch):
    """A config's tokens per update are the paper's only where it holds the paper's result; a
    benchmark's (the Bible sample's, the tense task's) are its own, with no paper figure."""
    out, _ = dry_run(capsys, monkeypatch, "iwslt14-de-en", "tree2seq", 1)
    assert out.splitlines()[0].endswith("= 4096 tokens per update (paper: 4096)")
    for pair in ("bible-en-fr-sample-target-spacy", "hierarchical-tense"):
        out, _ = dry_run(capsys, monkeypatch, pair, "tree2seq", 0)
        assert out.splitlines()[0].endswith(" tokens per update"), out


def test_bible_runs_show_fairseqs_progress_early():
    """A Bible sample update takes seconds on two loaded cores: a training line every 10
    updates; evaluation's fairseq-generate runs with the plugin first (no library noise, see
    test_command_output.py) and logs a line after each batch unless told otherwise."""
    exp = load_experiment(CONFIGS, "bible-en-fr-sample-target-spacy", "tree2seq")
    assert exp.train["log-interval"] == 10
    cmd = experiment.generate_command(exp, Path("data-bin"), Path("model.pt"),
                                      ["--log-interval", "5"])
    assert cmd[:4] == [sys.executable, "-m", "fairseq_tree.cli.fairseq_command", "generate"]
    assert option(cmd[:-2], "--log-interval") == "1" and cmd[-2:] == ["--log-interval", "5"]


def test_clear_errors(capsys, monkeypatch, tmp_path):
    env = {"DATA": tmp_path / "data", "CHECKPOINTS": tmp_path / "ckpt"}
    code, _, err = run_experiment(capsys, monkeypatch, "train", "iwslt99-xx-yy", "tree2seq", **env)
    assert code == 1 and "unknown config 'iwslt99-xx-yy'" in err
    everything = (PAIRS + list(BENCHMARKS) + list(CLASSIFICATION) + SENTIMENT_BENCHMARKS
                  + list(PAIR_TASKS) + list(LANGUAGE_MODELS))
    assert ", ".join(sorted(everything)) in err
    code, _, err = run_experiment(capsys, monkeypatch, "train", "bible-en-fr-sample-target-spacy",
                                  "tree2seq", **env)
    assert code == 1 and (f"run DATA={tmp_path / 'data'} TARGET_PARSER=spacy bash "
                          "data-prep/prepare-bible-sample.sh first") in err
    code, _, err = run_experiment(capsys, monkeypatch, "evaluate", "hierarchical-tense-lm",
                                  "transformer-lm", **env)
    assert code == 1 and "a language model has no evaluate command" in err
    code, _, err = run_experiment(capsys, monkeypatch, "train", "iwslt14-en-de", "tree2seq-big",
                                  **env)
    assert code == 1 and "unknown model 'tree2seq-big'" in err and "tree2seq, transformer" in err
    code, _, err = run_experiment(capsys, monkeypatch, "train", "iwslt14-en-de", "tree2seq", **env)
    assert code == 1 and "iwslt14-en-de/data-bin: no binarized data" in err
    assert "data-prep/prepare-iwslt14-en-de.sh" in err
    code, _, err = run_experiment(capsys, monkeypatch, "train", "iwslt14-en-de", "tree2seq",
                                  "--num-gpus", "2", **env)
    assert code == 1 and "CUDA_VISIBLE_DEVICES" in err
    data_bin = tmp_path / "data" / "iwslt14-en-de" / "data-bin"
    data_bin.mkdir(parents=True)
    (data_bin / "dict.en.txt").write_text("")
    code, _, err = run_experiment(capsys, monkeypatch, "evaluate", "iwslt14-en-de", "tree2seq",
                                  **env)
    assert code == 1 and "recipe.json: missing" in err
    (data_bin.parent / "recipe.json").write_text(json.dumps({"src": "en", "tgt": "de"}))
    for sub in ("tok", "ref"):
        (data_bin.parent / sub).mkdir()
        write_lines(data_bin.parent / sub / "test.de", ["x"])
    code, _, err = run_experiment(capsys, monkeypatch, "evaluate", "iwslt14-en-de", "tree2seq",
                                  **env)
    assert code == 1 and "no checkpoints; run scripts/train.sh iwslt14-en-de tree2seq" in err


# ---------------------------------------------------------------------------------------------
# Checkpoint averaging


def test_average_states_is_the_element_wise_mean():
    states = [{"w": torch.tensor([1.0, 2.0]), "h": torch.tensor([1.0], dtype=torch.float16),
               "step": torch.tensor([7])},
              {"w": torch.tensor([3.0, 4.0]), "h": torch.tensor([2.0], dtype=torch.float16),
               "step": torch.tensor([7])},
              {"w": torch.tensor([5.0, 9.0]), "h": torch.tensor([4.0], dtype=torch.float16),
               "step": torch.tensor([7])}]
    mean = average_states(states)
    assert mean["w"].tolist() == [3.0, 5.0] and mean["w"].dtype == torch.float32
    assert mean["h"].item() == pytest.approx(7 / 3, abs=1e-3) and mean["h"].dtype == torch.float16
    assert mean["step"].tolist() == [7]
    with pytest.raises(FairseqTreeError, match="non-float tensor step differs"):
        average_states([states[0], {**states[1], "step": torch.tensor([8])}])
    with pytest.raises(FairseqTreeError, match="different parameters"):
        average_states([states[0], {"w": states[1]["w"]}])
    with pytest.raises(FairseqTreeError, match="shape"):
        average_states([states[0], {**states[1], "w": torch.zeros(3)}])


def test_last_checkpoints_orders_by_number(tmp_path):
    for name in ["checkpoint_1_4.pt", "checkpoint_2_10.pt", "checkpoint_1_8.pt", "checkpoint3.pt",
                 "checkpoint10.pt", "checkpoint_best.pt", "checkpoint_last.pt"]:
        (tmp_path / name).touch()
    names = lambda paths: [Path(p).name for p in paths]
    assert names(last_checkpoints(str(tmp_path), 2, "updates")) == \
        ["checkpoint_1_8.pt", "checkpoint_2_10.pt"]
    assert names(last_checkpoints(str(tmp_path), 2, "epochs")) == \
        ["checkpoint3.pt", "checkpoint10.pt"]
    with pytest.raises(FairseqTreeError,
                       match="last 4 checkpoints checkpoint_EPOCH_UPDATES.pt, found 3"):
        last_checkpoints(str(tmp_path), 4, "updates")
    assert names(last_checkpoints(str(tmp_path), 1, "last")) == ["checkpoint_last.pt"]
    with pytest.raises(FairseqTreeError, match="last 2 checkpoints checkpoint_last.pt, found 1"):
        last_checkpoints(str(tmp_path), 2, "last")


# ---------------------------------------------------------------------------------------------
# A real run: scripts/train.sh and scripts/evaluate.sh on the Bible sample

TINY_CONFIG = """\
pair: bible-en-fr
source: en
target: fr
recipe: data-prep/prepare-bible-en-fr.sh
batch: {tokens_per_update: 1024, max_tokens_per_gpu: 512}
train:
  share-all-embeddings: true
  optimizer: adam
  lr: 3e-3
  lr-scheduler: inverse_sqrt
  warmup-updates: 4
  criterion: label_smoothed_cross_entropy
  label-smoothing: 0.1
  max-update: 12
  save-interval-updates: 4
  keep-interval-updates: 3
  no-epoch-checkpoints: true
  num-workers: 0
  log-format: simple
  log-interval: 4
generate: {beam: 4, lenpen: 1.0, remove-bpe: true, batch-size: 16, num-workers: 0}
evaluate: {average: 2, checkpoints: updates, compound_split: false}
models:
  tree2seq:
    train: {arch: tree2seq_tiny}
  transformer:
    task: {tree-input: leaves-only}
    train: {arch: transformer_tiny}
    evaluate: {average: 3, compound_split: true}
"""


def tree_bpe(command, *args):
    """fairseq-tree-bpe in this process (its start-up would cost seconds per call)."""
    parsed = bpe.get_parser().parse_args([command, *map(str, args)])
    bpe.learn(parsed) if command == "learn" else bpe.apply(parsed)


@pytest.fixture(scope="module")
def bible_pair(tmp_path_factory):
    """$DATA/bible-en-fr/ laid out as a recipe writes it (lower-cased target, as the IWSLT'14
    recipe) and a config folder holding a tiny config for it."""
    work = tmp_path_factory.mktemp("experiments")
    raw, pair_dir = work / "raw", work / "data" / "bible-en-fr"
    for sub in (raw, pair_dir / "bpe", pair_dir / "ref", pair_dir / "tok", work / "configs"):
        sub.mkdir(parents=True)
    for split in ("train", "valid", "test"):
        shutil.copy(BIBLE / f"{split}.en", raw / f"{split}.en")
        lines = (BIBLE / f"{split}.fr").read_text(encoding="utf-8").splitlines()
        write_lines(raw / f"{split}.fr", [x.lower() for x in lines])
    shutil.copy(BIBLE / "test.fr", pair_dir / "ref" / "test.fr")
    shutil.copy(raw / "test.fr", pair_dir / "tok" / "test.fr")
    codes = pair_dir / "bpe" / "codes"
    tree_bpe("learn", "--symbols", 300, "--trees", raw / "train.en", "--text", raw / "train.fr",
             "--output", codes)
    for split in ("train", "valid", "test"):
        tree_bpe("apply", "--codes", codes, "--input", raw / f"{split}.en",
                 "--output", pair_dir / "bpe" / f"{split}.en")
        tree_bpe("apply", "--codes", codes, "--text", "--input", raw / f"{split}.fr",
                 "--output", pair_dir / "bpe" / f"{split}.fr")
    prefs = [f"--{s}pref={pair_dir / 'bpe' / s}" for s in ("train", "valid", "test")]
    run_cli("fairseq-tree-preprocess", "--source-lang", "en", "--target-lang", "fr",
            "--joined-dictionary", *prefs, "--destdir", pair_dir / "data-bin")
    recipe = {"pair": "bible-en-fr", "src": "en", "tgt": "fr", "lowercase": True,
              "bpe_codes": str(codes), "moses_lang": {"src": "en", "tgt": "fr"}}
    (pair_dir / "recipe.json").write_text(json.dumps(recipe))
    (work / "configs" / "bible-en-fr.yaml").write_text(TINY_CONFIG)
    return work


def run_script(script, work, *args):
    env = dict(os.environ, DATA=str(work / "data"), CHECKPOINTS=str(work / "ckpt"),
               CONFIG_DIR=str(work / "configs"), FAIRSEQ_TREE_VENV=sys.prefix,
               OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", CUDA_VISIBLE_DEVICES="")
    proc = subprocess.run(["bash", str(ROOT / "scripts" / script), *args], check=False,
                          capture_output=True,
                          text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-5000:]
    return proc.stdout


def fairseq_score(hyp: Path, ref: Path) -> dict:
    """fairseq's own BLEU (its C scorer) of two tokenized files."""
    line = run_cli("fairseq-score", "--sys", hyp, "--ref", ref).stdout.strip().splitlines()[-1]
    m = re.match(r"BLEU4 = ([\d.]+), ([\d.]+)/([\d.]+)/([\d.]+)/([\d.]+) \(BP=([\d.]+), "
                 r"ratio=[\d.]+, syslen=(\d+), reflen=(\d+)\)", line)
    assert m, line
    values = list(map(float, m.groups()))
    return {"bleu": values[0], "precisions": values[1:5], "bp": values[5],
            "syslen": int(values[6]), "reflen": int(values[7])}


def perl_compound_split(src: Path, dst: Path):
    """fairseq's examples/translation compound splitting, with perl as it is published."""
    with open(src, "rb") as fin, open(dst, "wb") as fout:
        subprocess.run(["perl", "-ple", r"s{(\S)-(\S)}{$1 ##AT##-##AT## $2}g"], stdin=fin,
                       stdout=fout, check=True)


@pytest.mark.slow
def test_tokenized_bleu_is_fairseq_score_with_compound_splitting(tmp_path):
    hyps = ["le chat-noir dort sur le tapis .", "il a dit-il bonjour", "un deux trois quatre cinq"]
    refs = ["le chat-noir dort sur un tapis .", "il dit-il : bonjour", "un deux trois quatre six"]
    write_lines(tmp_path / "hyp", hyps)
    write_lines(tmp_path / "ref", refs)
    perl_compound_split(tmp_path / "hyp", tmp_path / "hyp.split")
    perl_compound_split(tmp_path / "ref", tmp_path / "ref.split")
    results = {}
    for split, suffix in ((True, ".split"), (False, "")):
        expected = fairseq_score(tmp_path / f"hyp{suffix}", tmp_path / f"ref{suffix}")
        results[split] = experiment.score(hyps, refs, hyps, refs, split, lowercase=False)
        assert expected["bleu"] > 0
        assert results[split]["tokenized_bleu"] == pytest.approx(expected["bleu"], abs=0.006)
        assert (results[split]["tokenized_sys_len"], results[split]["tokenized_ref_len"]) == \
            (expected["syslen"], expected["reflen"])
    # chat-noir and dit-il each became three tokens
    assert results[True]["tokenized_sys_len"] == results[False]["tokenized_sys_len"] + 4


@pytest.mark.slow
@pytest.mark.parametrize("model,average", [("tree2seq", 2), ("transformer", 3)])
def test_train_and_evaluate_on_a_recipe_layout(bible_pair, tmp_path, model, average):
    work = bible_pair
    out = run_script("train.sh", work, "bible-en-fr", model)
    assert "on CPU (no GPU visible): effective batch 1 process(es) x 512 max tokens x " \
           "update-freq 2 = 1024 tokens per update\n" in out  # not a paper's config
    save_dir = work / "ckpt" / "bible-en-fr" / model
    assert sorted(p.name for p in save_dir.glob("checkpoint_*_*.pt")) == \
        ["checkpoint_1_12.pt", "checkpoint_1_4.pt", "checkpoint_1_8.pt"]
    # Run again, a finished run is left as it is: fairseq-train would make a 13th update.
    last = (save_dir / "checkpoint_last.pt").read_bytes()
    out = run_script("train.sh", work, "bible-en-fr", model)
    assert "checkpoint_last.pt has 12 updates, the run's --max-update: already trained" in out
    assert (save_dir / "checkpoint_last.pt").read_bytes() == last
    assert not list(save_dir.glob("checkpoint_1_13.pt"))

    out = run_script("evaluate.sh", work, "bible-en-fr", model)
    results = json.loads((save_dir / "test-results.json").read_text())
    # the baseline reads the same data-bin as a plain translation task, in training and here
    assert ("--tree-input leaves-only" in results["generate_command"]) == (model == "transformer")
    used = [Path(p).name for p in results["averaged_checkpoints"]]
    assert used == ["checkpoint_1_4.pt", "checkpoint_1_8.pt", "checkpoint_1_12.pt"][-average:]
    averaged = torch.load(save_dir / f"averaged-last{average}.pt", weights_only=True)["model"]
    states = [torch.load(save_dir / name, weights_only=True)["model"] for name in used]
    assert averaged.keys() == states[0].keys()
    for name, value in averaged.items():
        assert torch.allclose(value, sum(s[name] for s in states) / average, atol=1e-6), name
    assert not torch.equal(states[0][name], states[-1][name])  # the checkpoints differ

    # The hypotheses in test order, read here straight from fairseq-generate's output.
    hyps = {}
    for line in (save_dir / "generate-test.txt").read_text(encoding="utf-8").splitlines():
        if line.startswith("H-"):
            head, _, text = line.split("\t", 2)
            hyps[int(head[2:])] = text
    assert sorted(hyps) == list(range(40)) and results["sentences"] == 40
    tok_file = save_dir / "translations.tok.fr"
    assert tok_file.read_text(encoding="utf-8").splitlines() == [hyps[i] for i in range(40)]

    # Tokenized BLEU = fairseq-score on the same files (compound-split by perl for transformer).
    ref = work / "data" / "bible-en-fr" / "tok" / "test.fr"
    if results["compound_split"]:
        perl_compound_split(tok_file, tmp_path / "hyp")
        perl_compound_split(ref, tmp_path / "ref")
        tok_file, ref = tmp_path / "hyp", tmp_path / "ref"
        assert "##AT##-##AT##" in ref.read_text(encoding="utf-8")
    expected = fairseq_score(tok_file, ref)
    assert results["tokenized_bleu"] == pytest.approx(expected["bleu"], abs=0.006)
    assert results["tokenized_precisions"] == pytest.approx(expected["precisions"], abs=0.06)
    assert (results["tokenized_sys_len"], results["tokenized_ref_len"]) == \
        (expected["syslen"], expected["reflen"])
    assert f"tokenized BLEU = {results['tokenized_bleu']:.2f}" in out

    # sacreBLEU: the detokenized file is sacremoses' detokenization; the CLI gives the same score.
    detok = subprocess.run([str(BIN / "sacremoses"), "-q", "-l", "fr", "detokenize"],
                           input=(save_dir / "translations.tok.fr").read_text(encoding="utf-8"),
                           capture_output=True, text=True, check=True).stdout
    assert (save_dir / "translations.fr").read_text(encoding="utf-8") == detok
    ref = work / "data" / "bible-en-fr" / "ref" / "test.fr"
    cli = subprocess.run([str(BIN / "sacrebleu"), str(ref),
                          "-i", str(save_dir / "translations.fr"), "-lc", "-b", "-w", "4"],
                         capture_output=True, text=True, check=True).stdout
    assert results["sacrebleu"] == pytest.approx(float(cli), abs=1e-4)
    signature = results["sacrebleu_signature"]
    assert "case:lc" in signature and "tok:13a" in signature
    assert results["sacrebleu_signature"] in out
