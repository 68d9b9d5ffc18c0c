"""The tree_translation task and TreeLanguagePairDataset: loading, batching, padding."""

import pytest
import torch
from fairseq import options, tasks
from fairseq.dataclass.utils import convert_namespace_to_omegaconf

from conftest import PLUGIN_DIR, TREES, make_tree_corpus, run_cli
from fairseq_tree.data.label_dictionary import label_symbol
from fairseq_tree.data.tree_paths import embedding_paths, select_rows
from fairseq_tree.errors import FairseqTreeError
from fairseq_tree.trees.normal_form import parse_tree


@pytest.fixture(scope="module")
def data_bin(tmp_path_factory):
    tree_corpus = make_tree_corpus(tmp_path_factory.mktemp("raw"))
    dest = tmp_path_factory.mktemp("bin")
    run_cli(
        "fairseq-tree-preprocess", "-s", "en", "-t", "fr", "--trainpref", tree_corpus / "train",
        "--validpref", tree_corpus / "valid", "--destdir", dest, "--joined-dictionary",
    )
    return dest


def setup_task(data_bin, *extra):
    parser = options.get_training_parser()
    args = options.parse_args_and_arch(
        parser,
        [str(data_bin), "--user-dir", str(PLUGIN_DIR), "--task", "tree_translation",
         "--arch", "transformer", *extra],
    )
    cfg = convert_namespace_to_omegaconf(args)
    task = tasks.setup_task(cfg.task)
    task.load_dataset("valid")
    return task, task.dataset("valid")


def per_sentence(batch, dictionary):
    """Split a collated batch back into per-sentence (leaves, [(label, covered leaves)])."""
    net = batch["net_input"]
    out = {}
    for row, sid in enumerate(batch["id"].tolist()):
        tokens = net["src_tokens"][row]
        nodes = []
        for label, (start, end) in zip(net["src_node_labels"][row], net["src_node_spans"][row]):
            if label == dictionary.pad():
                assert start == end, "a padded node must have an empty span"
                continue
            covered = tokens[start:end]
            assert covered.ne(dictionary.pad()).all(), "a real node covers a padding column"
            nodes.append((dictionary[label], dictionary.string(covered)))
        out[sid] = (dictionary.string(tokens[tokens.ne(dictionary.pad())]), nodes)
    return out


# fairseq turns a bool option that defaults to True into a flag that sets it to False.
@pytest.mark.slow
@pytest.mark.parametrize("left_pad", [True, False])
def test_padded_batch_equals_one_sentence_batches(data_bin, left_pad):
    task, dataset = setup_task(data_bin, *([] if left_pad else ["--left-pad-source"]))
    assert dataset.left_pad_source is left_pad
    d = task.source_dictionary
    whole = per_sentence(dataset.collater([dataset[i] for i in range(len(dataset))]), d)
    assert len(whole) == len(TREES)
    for i in range(len(dataset)):
        assert per_sentence(dataset.collater([dataset[i]]), d)[i] == whole[i]


def test_batches_carry_the_tree(data_bin):
    task, dataset = setup_task(data_bin)
    d = task.source_dictionary
    batch = dataset.collater([dataset[i] for i in range(len(dataset))])
    assert batch["net_input"]["src_node_spans"].shape[:2] == batch["net_input"]["src_node_labels"].shape
    for sid, (leaves, nodes) in per_sentence(batch, d).items():
        tree = parse_tree(TREES[sid])
        assert leaves == " ".join(tree.leaves)  # Dictionary.string drops the final EOS
        expected = [(label_symbol(n.label), " ".join(tree.leaves[n.start:n.end])) for n in tree.nodes]
        assert nodes == expected


def test_paths_of_chosen_rows_are_those_of_their_own_batch(data_bin):
    _, dataset = setup_task(data_bin)
    net = dataset.collater([dataset[i] for i in range(len(dataset))])["net_input"]
    rows = torch.tensor([2, 0, 3])
    chosen = select_rows(net["src_embedding_paths"], rows)
    own = embedding_paths(net["src_node_spans"][rows])
    assert sorted(map(tuple, chosen.tolist())) == sorted(map(tuple, own.tolist()))
    assert len(own) < len(net["src_embedding_paths"])


def test_sizes_count_leaves_and_nodes(data_bin):
    task, dataset = setup_task(data_bin)
    for i in range(len(dataset)):
        tree = parse_tree(TREES[i])
        assert dataset.num_tokens(i) == max(len(tree.leaves) + 1 + len(tree.nodes), dataset.tgt_sizes[i])
        assert dataset.size(i)[0] == len(tree.leaves) + 1 + len(tree.nodes)


def test_max_source_positions_filters_by_leaves_and_nodes(data_bin):
    task, dataset = setup_task(data_bin)
    limit = 8
    itr = task.get_batch_iterator(
        dataset, max_tokens=1000, max_positions=(limit, 1024), ignore_invalid_inputs=True
    ).next_epoch_itr(shuffle=False)
    kept = sorted(i for batch in itr for i in batch["id"].tolist())
    expected = [
        i for i, line in enumerate(TREES)
        if len(parse_tree(line).leaves) + 1 + len(parse_tree(line).nodes) <= limit
    ]
    assert kept == expected and 0 < len(kept) < len(TREES)


def test_max_tokens_counts_nodes(data_bin):
    task, dataset = setup_task(data_bin)
    itr = task.get_batch_iterator(dataset, max_tokens=20, max_positions=(1024, 1024))
    for batch in itr.next_epoch_itr(shuffle=False):
        net = batch["net_input"]
        source = net["src_lengths"] + net["src_node_labels"].ne(task.source_dictionary.pad()).sum(1)
        target = batch["target"].ne(task.target_dictionary.pad()).sum(1)
        longest = int(torch.maximum(source, target).max())
        assert longest * len(batch["id"]) <= 20 or len(batch["id"]) == 1


def test_leaves_only_is_stock_translation(data_bin):
    task, dataset = setup_task(data_bin, "--tree-input", "leaves-only")
    batch = dataset.collater([dataset[i] for i in range(len(dataset))])
    assert set(batch["net_input"]) == {"src_tokens", "src_lengths", "prev_output_tokens"}
    assert dataset.size(0)[0] == len(parse_tree(TREES[0]).leaves) + 1


def test_tree_input_with_a_sequence_model_is_a_clear_error(data_bin):
    task, _ = setup_task(data_bin)
    parser = options.get_training_parser()
    args = options.parse_args_and_arch(
        parser, [str(data_bin), "--user-dir", str(PLUGIN_DIR), "--task", "tree_translation",
                 "--arch", "transformer"],
    )
    with pytest.raises(ValueError, match="--tree-input leaves-only"):
        task.build_model(convert_namespace_to_omegaconf(args).model)


def test_interactive_trees_reach_the_model(data_bin):
    """fairseq-interactive keeps only src_tokens; the task puts the trees back."""
    task, _ = setup_task(data_bin)
    lines = [TREES[0], TREES[2], TREES[0]]
    tokens, lengths = task.get_interactive_tokens_and_lengths(lines, lambda x: x)
    dataset = task.build_dataset_for_inference(tokens, lengths)
    full = dataset.collater([dataset[i] for i in range(len(dataset))])
    seen = {}

    class Recorder:
        def generate(self, models, sample, **kwargs):
            seen.update(sample["net_input"])
            return []

    stripped = {"net_input": {k: full["net_input"][k] for k in ("src_tokens", "src_lengths")}}
    task.inference_step(Recorder(), [], stripped)
    assert torch.equal(seen["src_node_labels"], full["net_input"]["src_node_labels"])
    assert torch.equal(seen["src_node_spans"], full["net_input"]["src_node_spans"])


@pytest.mark.parametrize("drop", [[], ["--drop-single-leaf-nodes"]])
@pytest.mark.parametrize("tree_input", ["tree", "leaves-only", "linearized"])
def test_inference_items_make_the_binarized_examples_batches(data_bin, tree_input, drop):
    """A tree given at inference (``inference_item``) reaches the model as the batch its
    binarized example makes, the tree in the batch itself."""
    task, dataset = setup_task(data_bin, "--tree-input", tree_input, *drop)
    rows = [2, 0, 3]
    items = [task.inference_item(parse_tree(TREES[i])) for i in rows]
    given = task.inference_dataset(items)
    got = given.collater([given[k] for k in range(len(rows))])
    want = dataset.collater([dataset[i] for i in rows])
    assert [rows[k] for k in got["id"].tolist()] == want["id"].tolist()
    keys = set(want["net_input"]) - {"prev_output_tokens"}
    assert set(got["net_input"]) == keys
    for key in keys:
        assert torch.equal(got["net_input"][key], want["net_input"][key]), key


def test_interactive_malformed_tree_is_a_clear_error(data_bin):
    task, _ = setup_task(data_bin)
    with pytest.raises(FairseqTreeError, match="input line 2: malformed tree"):
        task.get_interactive_tokens_and_lengths([TREES[0], "(S (NP a"], lambda x: x)


@pytest.mark.parametrize("tree_input", ["tree", "leaves-only", "linearized"])
@pytest.mark.parametrize("sizes", [dict(max_sentences=1), dict(max_sentences=5), dict(max_tokens=30)])
def test_batching_keeps_every_example(data_bin, tree_input, sizes):
    """fairseq drops a last batch whose size is not a multiple of --required-batch-size-multiple
    (fairseq issue #5036), which loses test sentences; the task's datasets keep them."""
    task, dataset = setup_task(data_bin, "--tree-input", tree_input)
    itr = task.get_batch_iterator(
        dataset, max_positions=(1024, 1024), required_batch_size_multiple=8, **sizes
    ).next_epoch_itr(shuffle=False)
    ids = sorted(i for batch in itr for i in batch["id"].tolist())
    assert ids == list(range(len(dataset)))


@pytest.mark.parametrize("seed", [1, 7])
def test_tree_batches_are_the_leaves_only_baselines_batches(data_bin, seed):
    """The tree dataset orders its examples as fairseq orders the leaves-only baseline's (by
    leaves, then target length, ties shuffled by the seed), not by leaves + nodes: both models
    train on the same batches, and each batch pads leaves and nodes less."""
    def batches(tree_input):
        task, dataset = setup_task(data_bin, "--tree-input", tree_input)
        # one example a batch, the batches unshuffled: the batches are the order itself
        itr = task.get_batch_iterator(dataset, max_sentences=1, max_positions=(1024, 1024),
                                      seed=seed)
        return [b["id"].item() for b in itr.next_epoch_itr(shuffle=False)], dataset

    order, tree = batches("tree")
    assert order == batches("leaves-only")[0]
    leaves = [int(tree.leaf_sizes[i]) for i in order]
    assert leaves == sorted(leaves)
    # leaves + nodes would order them otherwise: the test can tell the two orders apart
    totals = [int(tree.src_sizes[i]) for i in order]
    assert totals != sorted(totals)


@pytest.mark.parametrize("max_tokens", [24, 40])
def test_max_tokens_counting_leaves_gives_the_baselines_batches(data_bin, max_tokens):
    """With --max-tokens-counts leaves, --max-tokens batches of trees hold the sentences of the
    leaves-only baseline's batches; by default a tree counts its nodes too, and the batches hold
    fewer sentences."""
    def batches(*args):
        task, dataset = setup_task(data_bin, *args)
        itr = task.get_batch_iterator(dataset, max_tokens=max_tokens,
                                      max_positions=(1024, 1024), seed=1)
        return [b["id"].tolist() for b in itr.next_epoch_itr(shuffle=False)]

    baseline = batches("--tree-input", "leaves-only")
    assert batches("--tree-input", "tree", "--max-tokens-counts", "leaves") == baseline
    default = batches("--tree-input", "tree")
    assert max(map(len, default)) < max(map(len, baseline))
    assert sorted(i for b in default for i in b) == sorted(i for b in baseline for i in b)


def test_dropping_single_leaf_nodes_leaves_the_nodes_over_several_leaves(data_bin):
    """--drop-single-leaf-nodes: every example keeps its leaves and the nodes over two leaves or
    more, in order, in the batch and in the sizes that batching counts; one-leaf nodes go."""
    task, dataset = setup_task(data_bin, "--drop-single-leaf-nodes")
    _, whole = setup_task(data_bin)
    batch = dataset.collater([dataset[i] for i in range(len(dataset))])
    got = per_sentence(batch, task.source_dictionary)
    dropped = 0
    for i in range(len(dataset)):
        leaves, nodes = per_sentence(whole.collater([whole[i]]), task.source_dictionary)[i]
        kept = [(label, covered) for label, covered in nodes if len(covered.split()) > 1]
        dropped += len(nodes) - len(kept)
        assert got[i] == (leaves, kept)
        assert dataset.size(i)[0] == len(leaves.split()) + 1 + len(kept)
    assert dropped > 0


@pytest.mark.parametrize("tree_input", ["tree", "linearized"])
def test_without_single_leaf_nodes_a_tree_with_preterminals_reads_as_with_bare_words(
        data_bin, tree_input):
    """(VP (VBD barked)) under --drop-single-leaf-nodes is the bare-word tree's (VP barked),
    which the normal form makes a tagged leaf, no node."""
    task, _ = setup_task(data_bin, "--tree-input", tree_input, "--drop-single-leaf-nodes")
    plain, _ = setup_task(data_bin, "--tree-input", tree_input)
    given = task.inference_item(parse_tree("(ROOT (S (NP (DT the) (NN dog)) (VP (VBD barked))))"))
    bare = plain.inference_item(parse_tree("(ROOT (S (NP the dog) (VP barked)))"))
    for got, want in ([(given.labels, bare.labels), (given.spans, bare.spans)]
                      if tree_input == "tree" else [(given, bare)]):
        assert torch.equal(got, want)


def test_a_checkpoint_trained_without_single_leaf_nodes_is_refused_the_other_way(data_bin):
    task, _ = setup_task(data_bin, "--drop-single-leaf-nodes")
    plain, _ = setup_task(data_bin)
    with pytest.raises(FairseqTreeError, match="trained without --drop-single-leaf-nodes"):
        task.load_state_dict(plain.state_dict())
    with pytest.raises(FairseqTreeError, match="trained with --drop-single-leaf-nodes"):
        plain.load_state_dict(task.state_dict())
    task.load_state_dict(task.state_dict())
