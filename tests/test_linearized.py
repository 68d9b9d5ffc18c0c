"""--tree-input linearized: fairseq's Transformer reads the bracketed tree as one token sequence,
built at load time from the binarized leaves, labels and spans."""

import re

import pytest
import torch
from fairseq.data import Dictionary

from conftest import BIBLE, GENERATE, PLUGIN_DIR, TRAIN, TREES, make_tree_corpus, run_cli
from fairseq_tree.data.label_dictionary import label_symbol
from fairseq_tree.data.linearized_tree import (
    CLOSE_SYMBOL,
    OPEN_SYMBOL,
    add_bracket_symbols,
    delinearize,
    linearize,
)
from fairseq_tree.trees.normal_form import parse_tree
from test_dataset import setup_task

LINEARIZED = ["--tree-input", "linearized"]


@pytest.fixture(scope="module")
def hand_bin(tmp_path_factory):
    """The hand-made trees binarized with a joined dictionary."""
    raw = make_tree_corpus(tmp_path_factory.mktemp("raw"))
    dest = tmp_path_factory.mktemp("bin")
    run_cli("fairseq-tree-preprocess", "-s", "en", "-t", "fr", "--trainpref", raw / "train",
            "--validpref", raw / "valid", "--destdir", dest, "--joined-dictionary")
    return dest


def test_trees_become_bracketed_sequences(hand_bin):
    """The sequences, literally: nodes of the normal form (preterminals dropped, a "(" leaf a
    word of its own), EOS last."""
    task, dataset = setup_task(hand_bin, *LINEARIZED)
    d = task.source_dictionary
    assert [d.string(dataset[i]["source"]) for i in (0, 4, 5)] == [
        "[(] [S] [(] [NP] the dog [)] [(] [VP] barked [)] [)]",
        "[(] [NP] ünïcode ( wörd ) [)]",
        "[(] [FRAG] hello [)]",
    ]
    assert all(dataset[i]["source"][-1] == d.eos() for i in range(len(dataset)))
    assert d.index("(") not in task.source.symbols.bracket_ids  # the word "(" is not a bracket


def test_brackets_join_the_dictionary_deterministically(hand_bin):
    """Both symbols come after every symbol of dict.en.txt, in both joined dictionaries, with
    the same ids every time the task is set up (checkpoints and data agree)."""
    size = len(Dictionary.load(str(hand_bin / "dict.en.txt")))
    for _ in range(2):
        task, _ = setup_task(hand_bin, *LINEARIZED)
        src, tgt = task.source_dictionary, task.target_dictionary
        assert task.source.symbols.bracket_ids == (size, size + 1)
        assert (src[size], src[size + 1]) == (OPEN_SYMBOL, CLOSE_SYMBOL) == (
            label_symbol("("), label_symbol(")"))
        assert src == tgt  # --share-all-embeddings still applies


def test_a_word_spelled_like_a_bracket_is_refused():
    d = Dictionary()
    d.add_symbol(OPEN_SYMBOL)
    with pytest.raises(ValueError, match=re.escape("already holds '[(]' as a word")):
        add_bracket_symbols(d)


def test_sizes_and_max_source_positions_count_the_linearized_length(hand_bin):
    task, dataset = setup_task(hand_bin, *LINEARIZED)
    lengths = []
    for i, line in enumerate(TREES):
        tree = parse_tree(line)
        lengths.append(len(tree.leaves) + 1 + 3 * len(tree.nodes))
        assert dataset.size(i)[0] == len(dataset[i]["source"]) == lengths[i]
    limit = 13
    itr = task.get_batch_iterator(dataset, max_tokens=1000, max_positions=(limit, 1024),
                                  ignore_invalid_inputs=True).next_epoch_itr(shuffle=False)
    kept = sorted(i for batch in itr for i in batch["id"].tolist())
    assert kept == [i for i, n in enumerate(lengths) if n <= limit] and 0 < len(kept) < len(TREES)


def test_linearize_refuses_crossing_spans():
    with pytest.raises(ValueError, match="not nested"):
        linearize(torch.tensor([5, 6, 7, 2]), torch.tensor([9, 9]),
                  torch.tensor([[0, 2], [1, 3]]), 100, 101)


@pytest.mark.parametrize("bad", [[100, 5, 2], [100, 9, 5, 101, 101, 2], [100, 101, 2]])
def test_delinearize_refuses_unbalanced_brackets(bad):
    with pytest.raises(ValueError):
        delinearize(torch.tensor(bad), 100, 101)


@pytest.mark.slow
def test_real_trees_round_trip(example):
    """Every linearized source of the binarized Bible sample reads back to the tree it came
    from: the BPE'd tree file's leaves, node labels and spans."""
    work, _ = example
    for split in ("train", "valid", "test"):
        task, _ = setup_task(work / "data-bin", *LINEARIZED)
        task.load_dataset(split)
        dataset, d = task.dataset(split), task.source_dictionary
        trees = (work / "bpe" / f"{split}.en").read_text(encoding="utf-8").splitlines()
        assert len(dataset) == len(trees)
        for i, line in enumerate(trees):
            leaves, labels, spans = task.source.symbols.delinearize(dataset[i]["source"])
            tree = parse_tree(line)
            assert leaves.tolist() == [d.index(leaf) for leaf in tree.leaves] + [d.eos()]
            assert labels.tolist() == [d.index(label_symbol(n.label)) for n in tree.nodes]
            assert spans.tolist() == [[n.start, n.end] for n in tree.nodes]


def test_tree2seq_with_linearized_input_is_a_clear_error(hand_bin):
    from fairseq import options
    from fairseq.dataclass.utils import convert_namespace_to_omegaconf

    task, _ = setup_task(hand_bin, *LINEARIZED)
    args = options.parse_args_and_arch(options.get_training_parser(), [
        str(hand_bin), "--user-dir", str(PLUGIN_DIR), "--task", "tree_translation",
        "--arch", "tree2seq_tiny", *LINEARIZED])
    with pytest.raises(ValueError, match="reads trees: use --tree-input tree"):
        task.build_model(convert_namespace_to_omegaconf(args).model)


@pytest.fixture(scope="module")
def linearized_model(example, tmp_path_factory):
    """fairseq's transformer_tiny trained 60 updates on the linearized Bible sample."""
    work, _ = example
    save = tmp_path_factory.mktemp("linearized")
    train = [a if a != "tree2seq_tiny" else "transformer_tiny" for a in TRAIN]
    run_cli("fairseq-train", work / "data-bin", *train, *LINEARIZED, "--max-update", "60",
            "--save-dir", save)
    return work, save / "checkpoint_last.pt"


@pytest.mark.slow
def test_train_generate_interactive_and_translate(linearized_model, tmp_path):
    """fairseq-generate translates every test tree from its linearized form; fairseq-interactive
    and fairseq-tree-translate --trees linearize BPE'd input trees the same way and give the
    same hypotheses."""
    work, checkpoint = linearized_model
    task, _ = setup_task(work / "data-bin", *LINEARIZED)
    task.load_dataset("test")
    d = task.source_dictionary
    n_test = len(task.dataset("test"))
    out = run_cli("fairseq-generate", work / "data-bin", *GENERATE, *LINEARIZED,
                  "--path", checkpoint, "--batch-size", "16").stdout
    sources = dict(re.findall(r"^S-(\d+)\t(.*)$", out, flags=re.M))
    hypos = dict(re.findall(r"^H-(\d+)\t\S+\t(.*)$", out, flags=re.M))
    assert sorted(map(int, hypos)) == list(range(n_test))
    # --remove-bpe joins the pieces of the printed source too
    assert sources["0"] == d.string(task.dataset("test")[0]["source"], "subword_nmt")
    expected = [hypos[str(i)] for i in range(n_test)]
    assert len(set(expected)) > 1

    raw = (BIBLE / "test.en").read_text(encoding="utf-8").splitlines()
    proc = run_cli("fairseq-interactive", work / "data-bin", *GENERATE[:4], *LINEARIZED,
                   "--path", checkpoint, "-s", "en", "-t", "fr", "--bpe", "subword_nmt",
                   "--bpe-codes", work / "bpe" / "codes", "--beam", "5", "--remove-bpe",
                   stdin="\n".join(raw[:3]) + "\n")
    interactive = re.findall(r"^H-\d+\t\S+\t(.*)$", proc.stdout, flags=re.M)
    assert interactive == expected[:3]

    trees = tmp_path / "test.en"
    trees.write_text("\n".join(raw) + "\n", encoding="utf-8")
    proc = run_cli("fairseq-tree-translate", work / "data-bin", "--path", checkpoint,
                   "-s", "en", "-t", "fr", "--bpe-codes", work / "bpe" / "codes",
                   "--input", trees, "--trees", "--no-detokenize", "--batch-size", "7")
    assert proc.stdout.splitlines() == expected


@pytest.mark.slow
def test_generating_with_another_tree_input_is_refused(linearized_model):
    work, checkpoint = linearized_model
    proc = run_cli("fairseq-generate", work / "data-bin", *GENERATE, "--tree-input",
                   "leaves-only", "--path", checkpoint, check=False)
    assert proc.returncode != 0
    assert ("the checkpoint was trained with --tree-input linearized; this run has "
            "--tree-input leaves-only") in proc.stderr


def test_truncating_a_linearized_tree_is_refused(hand_bin):
    with pytest.raises(ValueError, match=r"--truncate-source and --num-batch-buckets work with "
                                         r"--tree-input leaves-only \(and no --target-trees\) "
                                         "only"):
        setup_task(hand_bin, *LINEARIZED, "--truncate-source")
