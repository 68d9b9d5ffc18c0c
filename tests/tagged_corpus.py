"""A small corpus of POS-tagged constituency trees with sentence labels, dependency heads and
sentence pairs, binarized as the recursive tree encoders read it (input0/ with --leaf-tags and
--dependency-heads, input1/, label/). The preprocessing commands run in this process (their own
tests run them as subprocesses): a dozen interpreter starts would cost a minute."""

import random
from pathlib import Path

from fairseq import options
from fairseq_cli import preprocess as fairseq_preprocess

from conftest import write_lines
from fairseq_tree.cli import bpe as tree_bpe
from fairseq_tree.cli import preprocess as tree_preprocess
from fairseq_tree.data.score_targets import sparse_distribution
from fairseq_tree.trees.normal_form import parse_tree
from recursive_reference import random_heads
from test_leaf_annotations import conllu

TAGS = {"the": "DT", "a": "DT", "film": "NN", "story": "NN", "actors": "NNS", "ending": "NN",
        "is": "VBZ", "feels": "VBZ", "good": "JJ", "moving": "JJ", "charming": "JJ",
        "dull": "JJ", "flat": "JJ", "slow": "JJ", "very": "RB", "painfully": "RB",
        "and": "CC", "but": "CC"}
POSITIVE, NEGATIVE = {"good", "moving", "charming"}, {"dull", "flat", "slow"}
PHRASES = ["S", "NP", "VP", "ADJP"]
SPLITS = {"train": 48, "valid": 12, "test": 12}


def tagged_tree(rng: random.Random, words: list) -> str:
    """A random bracketing of ``words``, each word under its POS tag."""
    if len(words) == 1:
        return f"({TAGS[words[0]]} {words[0]})"
    cut = rng.randint(1, len(words) - 1)
    left, right = tagged_tree(rng, words[:cut]), tagged_tree(rng, words[cut:])
    return f"({rng.choice(PHRASES)} {left} {right})"


def polarity(tree: str) -> int:
    leaves = parse_tree(tree).leaves
    return int(sum(w in POSITIVE for w in leaves) >= sum(w in NEGATIVE for w in leaves))


def sentences(rng: random.Random, count: int) -> list:
    words = sorted(TAGS)
    return [f"(ROOT {tagged_tree(rng, rng.sample(words, rng.choice([1, 2, rng.randint(2, 8)])))})"
            for _ in range(count)]


def relatedness(left: str, right: str) -> float:
    """A score in [1, 5] that the two trees' words decide."""
    shared = set(parse_tree(left).leaves) & set(parse_tree(right).leaves)
    return 1.0 + min(len(shared), 3) + 0.5 * (polarity(left) == polarity(right))


def write_raw(raw: Path, seed: int) -> Path:
    """raw/{split} trees, {split}.conllu heads, {split}.pair trees, label files for one label
    per tree (.label), for pairs (.same: same polarity) and relatedness (.score distributions
    over 1..5)."""
    rng = random.Random(seed)
    raw.mkdir(parents=True, exist_ok=True)
    write_lines(raw / "classes.txt", ["0 1", "1 1"])
    for split, count in SPLITS.items():
        trees, pairs = sentences(rng, count), sentences(rng, count)
        write_lines(raw / split, trees)
        write_lines(raw / f"{split}.pair", pairs)
        write_lines(raw / f"{split}.label", [str(polarity(t)) for t in trees])
        write_lines(raw / f"{split}.same", [str(int(polarity(a) == polarity(b)))
                                            for a, b in zip(trees, pairs)])
        write_lines(raw / f"{split}.score", [" ".join(map(str, sparse_distribution(
            relatedness(a, b), 5))) for a, b in zip(trees, pairs)])
        for name, lines in ((split, trees), (f"{split}.pair", pairs)):
            leaves = [parse_tree(t).leaves for t in lines]
            heads = [[h + 1 for h in random_heads(rng, len(words))] for words in leaves]
            (raw / f"{name}.conllu").write_text(conllu(list(zip(leaves, heads))), "utf-8")
    return raw


def run_cli(name: str, *args):
    """fairseq-tree-preprocess, fairseq-tree-bpe or fairseq-preprocess, in this process."""
    argv = [str(arg) for arg in args]
    if name == "fairseq-preprocess":
        fairseq_preprocess.main(options.get_preprocessing_parser().parse_args(argv))
    else:
        tools = {"fairseq-tree-preprocess": tree_preprocess, "fairseq-tree-bpe": tree_bpe}
        tools[name].cli_main(argv)


def prefs(raw: Path, suffix: str = "", splits=SPLITS) -> list:
    return [arg for split in splits for arg in (f"--{split}pref", raw / f"{split}{suffix}")]


def binarize_trees(raw: Path, dest: Path, *extra, suffix: str = "", splits=SPLITS):
    run_cli("fairseq-tree-preprocess", "--only-source", *prefs(raw, suffix, splits),
            "--destdir", dest, *extra)


def binarize_labels(raw: Path, dest: Path, suffix: str = ".label"):
    run_cli("fairseq-preprocess", "--only-source", *prefs(raw, suffix), "--destdir",
            dest / "label", "--srcdict", raw / "classes.txt")


def write_score_labels(raw: Path, dest: Path):
    """label/{split}.label: fairseq's regression layout, 5 values per line."""
    (dest / "label").mkdir(parents=True, exist_ok=True)
    for split in SPLITS:
        (dest / "label" / f"{split}.label").write_bytes((raw / f"{split}.score").read_bytes())


def word_level(work: Path, seed: int = 3) -> Path:
    """Word-level trees with POS tags and dependency heads, one label per tree."""
    raw = write_raw(work / "raw", seed)
    binarize_trees(raw, work / "bin/input0", "--leaf-tags", "--dependency-heads", "conllu")
    binarize_labels(raw, work / "bin")
    return work / "bin"


def subword_level(work: Path, seed: int = 4) -> Path:
    """The same kind of trees after BPE (words split into pieces under their tag's node), with
    POS tags; one label per tree."""
    raw = write_raw(work / "raw", seed)
    run_cli("fairseq-tree-bpe", "learn", "--method", "subword-nmt", "--symbols", "25",
            "--trees", raw / "train", "--output", work / "codes")
    bpe = work / "bpe"
    bpe.mkdir()
    for split in SPLITS:
        run_cli("fairseq-tree-bpe", "apply", "--codes", work / "codes", "--input", raw / split,
                "--output", bpe / split)
        (bpe / f"{split}.label").write_bytes((raw / f"{split}.label").read_bytes())
    (bpe / "classes.txt").write_bytes((raw / "classes.txt").read_bytes())
    binarize_trees(bpe, work / "bin/input0", "--leaf-tags")
    binarize_labels(bpe, work / "bin")
    return work / "bin"


def sentence_pairs(work: Path, seed: int = 5, scores: bool = False) -> Path:
    """Word-level pairs: input0/ and input1/ (same dictionary, tags and heads), and label/
    holding same-polarity classes or, with ``scores``, relatedness distributions."""
    raw = write_raw(work / "raw", seed)
    both = raw / "both"
    both.mkdir()
    write_lines(both / "train", (raw / "train").read_text("utf-8").splitlines()
                + (raw / "train.pair").read_text("utf-8").splitlines())
    run_cli("fairseq-tree-preprocess", "--only-source", "--trainpref", both / "train",
            "--destdir", work / "dict", "--leaf-tags", "--dict-only")
    annotations = ["--leaf-tags", "--dependency-heads", "conllu", "--srcdict",
                   work / "dict/dict.txt"]
    binarize_trees(raw, work / "bin/input0", *annotations)
    binarize_trees(raw, work / "bin/input1", *annotations, suffix=".pair")
    if scores:
        write_score_labels(raw, work / "bin")
    else:
        binarize_labels(raw, work / "bin", suffix=".same")
    return work / "bin"
