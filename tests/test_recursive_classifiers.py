"""The registered recursive tree classifiers (Ahmed et al.'s multi-branch attention, Recursive
Tree Attention) built by the tree_classification task from real binarized data, in float64:
every node and root equals the literal per-tree recursion (with each ablation), an example
gives the same logits alone and in a padded batch, a leaf changes only its ancestors, gradients
reach every parameter, sentence pairs go through Tai et al.'s head, and --embeddings loads
GloVe-format vectors."""

import pytest
import torch
from torch.nn import functional as F

from fairseq_tree.errors import FairseqTreeError
from tagged_corpus import sentence_pairs, subword_level, word_level
from test_recursive_tree import literal_multi_branch
from test_recursive_tree_attention import literal_tree_attention
from test_tree_classification import load_task

HEAD = "sentence_classification_head"
MULTI_BRANCH = ["--arch", "recursive_multibranch_classifier_tiny"]
TREE_ATTENTION = ["--arch", "recursive_tree_attention_classifier_tiny"]
CONFIGS = {  # name: (corpus, model options)
    "ctt": ("word", MULTI_BRANCH),
    "ctt-pe": ("word", MULTI_BRANCH + ["--positional-encoding"]),
    "ctt-multi-head": ("word", MULTI_BRANCH + ["--composition-attention", "multi-head"]),
    "ctt-single-head-pe": ("word", MULTI_BRANCH + ["--composition-attention", "single-head",
                                                   "--positional-encoding"]),
    "ctt-transformer-leaves": ("word", MULTI_BRANCH + ["--leaf-encoder", "transformer"]),
    "dtt": ("word", MULTI_BRANCH + ["--dependency"]),
    "dtt-multi-head": ("word", MULTI_BRANCH + ["--dependency", "--composition-attention",
                                               "multi-head"]),
    "rta": ("subword", TREE_ATTENTION),
    "rta-embedding-leaves": ("subword", TREE_ATTENTION + ["--leaf-encoder", "embeddings"]),
    "rta-plain": ("subword", TREE_ATTENTION + ["--plain-attention"]),
    "rta-no-positions": ("subword", TREE_ATTENTION + ["--no-node-positions"]),
    "rta-no-labels": ("subword", TREE_ATTENTION + ["--no-label-embeddings"]),
    "rta-no-subword-nodes": ("subword", TREE_ATTENTION + ["--no-subword-nodes"]),
}


@pytest.fixture(scope="module")
def corpora(tmp_path_factory):
    work = tmp_path_factory.mktemp("recursive")
    return {"word": word_level(work / "word"), "subword": subword_level(work / "subword"),
            "pairs": sentence_pairs(work / "pairs")}


def float64_model(data, options, split="test"):
    """The task and a float64 model in eval mode, its parameters moved off their initial
    values (kappa = alpha = 1/n would hide a swapped branch)."""
    task, cfg = load_task(data, *options, "--criterion", "sentence_prediction")
    torch.manual_seed(0)
    model = task.build_model(cfg.model).double().eval()
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.add_(0.1 * torch.randn_like(parameter))
    task.load_dataset(split)
    return task, model


def whole_split(task, split="test"):
    dataset = task.dataset(split)
    return dataset.collater([dataset[i] for i in range(len(dataset))])


def reference_batch(model, net_input):
    """The batch in the layout of tests/recursive_reference.py, labels as the encoder maps
    them, and the encoder's leaf states (B x N x C)."""
    encoder = model.encoder
    tokens = net_input["src_tokens"]
    batch = dict(spans=net_input["src_node_spans"],
                 leaf_padding=tokens.eq(encoder.padding_idx) | tokens.eq(encoder.eos_idx),
                 heads=net_input.get("src_heads"),
                 node_labels=encoder.labels(net_input["src_node_labels"]),
                 leaf_labels=encoder.labels(net_input.get("src_leaf_tags")))
    return batch, encoder.leaf_states(tokens, net_input["src_lengths"])


def literal_states(model, net_input):
    """Nodes and roots of every tree by the literal recursion of the model's own module."""
    batch, leaf_states = reference_batch(model, net_input)
    module = model.encoder.recursive
    if hasattr(module, "composition"):
        return literal_multi_branch(module, batch, leaf_states)
    return literal_tree_attention(module, batch, leaf_states,
                                  leaf_labels=batch["leaf_labels"] is not None)


@pytest.mark.parametrize("corpus, options", CONFIGS.values(), ids=CONFIGS.keys())
def test_registered_model_equals_the_literal_recursion(corpora, corpus, options):
    """Nodes, roots and the classifier's logits (at the root and every unit) of a padded test
    batch, against the literal recursion through the model's parameters."""
    task, model = float64_model(corpora[corpus], options)
    sample = whole_split(task)
    net_input = sample["net_input"]
    with torch.no_grad():
        encoded = model.encoder(**net_input)
        literal_nodes, literal_roots = literal_states(model, net_input)
        torch.testing.assert_close(encoded["encoder_nodes"][0].transpose(0, 1), literal_nodes,
                                   rtol=0, atol=1e-10)
        torch.testing.assert_close(encoded["root"][0], literal_roots, rtol=0, atol=1e-10)
        head = model.classification_heads[HEAD]
        logits, extra = model(**net_input, classification_head_name=HEAD)
        torch.testing.assert_close(logits, head(literal_roots.unsqueeze(1)), rtol=0, atol=1e-10)
        units, _ = model(**net_input, classification_head_name=HEAD, every_unit=True)
        rows = torch.arange(units.size(0))
        torch.testing.assert_close(units[rows, extra["root_columns"]], logits, rtol=0, atol=0)
    units = encoded["encoder_node_padding_mask"][0].logical_not().sum()  # nodes, or DTT's words
    assert literal_nodes.abs().sum(-1).gt(0).sum() == units > 15


@pytest.mark.parametrize("corpus, options", CONFIGS.values(), ids=CONFIGS.keys())
def test_an_example_alone_equals_the_example_in_a_padded_batch(corpora, corpus, options):
    task, model = float64_model(corpora[corpus], options)
    dataset, sample = task.dataset("test"), whole_split(task)
    with torch.no_grad():
        logits, _ = model(**sample["net_input"], classification_head_name=HEAD)
        for row, index in enumerate(sample["id"].tolist()):
            alone, _ = model(**dataset.collater([dataset[index]])["net_input"],
                             classification_head_name=HEAD)
            torch.testing.assert_close(alone[0], logits[row], rtol=0, atol=1e-12)


@pytest.mark.parametrize("corpus, options", CONFIGS.values(), ids=CONFIGS.keys())
def test_gradients_reach_every_parameter(corpora, corpus, options):
    task, model = float64_model(corpora[corpus], options, split="train")
    model.train()
    sample = whole_split(task, "train")
    logits, _ = model(**sample["net_input"], classification_head_name=HEAD)
    F.cross_entropy(logits, sample["target"].view(-1)).backward()
    unused = set()
    if "--no-subword-nodes" in options:  # X_SW labels only tag pieces, which are averaged here
        unused.add("encoder.recursive.subword_label_embedding.weight")
    for name, parameter in model.named_parameters():
        if name not in unused:
            assert parameter.grad is not None and parameter.grad.abs().sum() > 0, name
            assert torch.isfinite(parameter.grad).all(), name


def ancestors(net_input, row, column, dependency):
    """The units (node indices; dependency: words) whose state reads leaf ``column``."""
    if dependency:
        chain, word = set(), column
        while word >= 0:
            chain.add(word)
            word = int(net_input["src_heads"][row, word])
        return chain
    spans = net_input["src_node_spans"][row].tolist()
    return {i for i, (start, end) in enumerate(spans) if start <= column < end}


@pytest.mark.parametrize("name", ["ctt", "dtt", "rta-embedding-leaves"])
def test_a_leaf_changes_exactly_its_ancestors(corpora, name):
    """With embeddings as leaf states (a Transformer over the leaves mixes them), a new word at
    one leaf changes exactly the states of the nodes above it (DTT: the words above it)."""
    corpus, options = CONFIGS[name]
    task, model = float64_model(corpora[corpus], options)
    dependency, dataset = "--dependency" in options, task.dataset("test")
    other = task.source_dictionary.index("good")
    checked = 0
    with torch.no_grad():
        for index in range(len(dataset)):
            net_input = dataset.collater([dataset[index]])["net_input"]
            base = model.encoder(**net_input)["encoder_nodes"][0][:, 0]
            for column in range(int(net_input["src_lengths"][0]) - 1):
                tokens = net_input["src_tokens"].clone()
                tokens[0, column] = other if tokens[0, column] != other else other + 1
                changed_input = {**net_input, "src_tokens": tokens}
                moved = model.encoder(**changed_input)["encoder_nodes"][0][:, 0]
                changed = {i for i in range(base.size(0)) if not torch.equal(moved[i], base[i])}
                expected = ancestors(net_input, 0, column, dependency)
                assert changed == expected, (index, column)
                checked += len(expected)
    assert checked > 40


@pytest.mark.parametrize("options", [["--arch", "tree_classifier_tiny"], MULTI_BRANCH,
                                     MULTI_BRANCH + ["--dependency"], TREE_ATTENTION],
                         ids=["hierarchical-accumulation", "ctt", "dtt", "rta"])
def test_sentence_pairs_meet_in_tais_head(corpora, options):
    """With input1/, each tree of a pair is encoded alone (as a batch of single trees) and the
    logits are Tai et al.'s: W_p sigmoid(W [h_L * h_R; |h_L - h_R|] + b) + b_p."""
    task, model = float64_model(corpora["pairs"], options)
    assert task.sentence_pairs
    sample = whole_split(task)
    net_input = sample["net_input"]
    head = model.classification_heads[HEAD]
    with torch.no_grad():
        logits, _ = model(**net_input, classification_head_name=HEAD)
        for row in range(logits.size(0)):
            roots = []
            for side in (net_input, net_input["input1"]):
                one = {key: value[row: row + 1] for key, value in side.items() if key != "input1"}
                roots.append(model(**one)[0][0])
            left, right = roots
            compared = torch.cat([left * right, (left - right).abs()])
            hidden = torch.sigmoid(head.hidden.weight @ compared + head.hidden.bias)
            expected = head.out_proj.weight @ hidden + head.out_proj.bias
            torch.testing.assert_close(logits[row], expected, rtol=0, atol=1e-10)
    assert head.hidden.in_features == 2 * model.args.encoder_embed_dim
    assert head.hidden.out_features == 50  # Tai et al.'s hidden layer


def test_glove_vectors_initialise_the_embeddings_and_can_be_frozen(corpora, tmp_path):
    task, _ = load_task(corpora["word"], *MULTI_BRANCH, "--criterion", "sentence_prediction")
    dictionary = task.source_dictionary
    words = ["good", "film", "the"]
    glove = tmp_path / "glove.txt"
    glove.write_text("".join(f"{w} " + " ".join(str(k + j / 10) for j in range(60)) + "\n"
                             for k, w in enumerate(words)), encoding="utf-8")
    for frozen in ([], ["--freeze-embeddings"]):
        task, cfg = load_task(corpora["word"], *MULTI_BRANCH, "--criterion",
                              "sentence_prediction", "--embeddings", glove, *frozen)
        model = task.build_model(cfg.model)
        weight = model.encoder.embed_tokens.weight
        for k, word in enumerate(words):
            assert weight[dictionary.index(word)].tolist() == pytest.approx(
                [k + j / 10 for j in range(60)])
        assert weight.requires_grad == (not frozen)


def test_a_bad_glove_file_stops_with_its_line(corpora, tmp_path):
    glove = tmp_path / "glove.txt"
    glove.write_text("good " + " ".join(["1"] * 60) + "\nfilm 1 2 x" + " 1" * 57 + "\n",
                     encoding="utf-8")
    task, cfg = load_task(corpora["word"], *MULTI_BRANCH, "--criterion", "sentence_prediction",
                          "--embeddings", glove)
    with pytest.raises(FairseqTreeError) as stop:
        task.build_model(cfg.model)
    assert str(stop.value) == (f"recursive_multibranch_classifier: error: --embeddings {glove}:2: "
                               "not a number (could not convert string to float: 'x')")


def frontier_columns(net_input, row):
    """Columns in [leaves; nodes] of row's last word and of the nodes whose span ends after it,
    read off the tree's lists."""
    tokens = net_input["src_tokens"][row].tolist()
    last = max(column for column, token in enumerate(tokens) if token > 3)  # a word, not a special
    spans = net_input["src_node_spans"][row].tolist()
    return [last] + [len(tokens) + i for i, (start, end) in enumerate(spans)
                     if start < end and end == last + 1]


@pytest.mark.parametrize("options, reads", [
    (["--arch", "tree_classifier_tiny"], "right-frontier"), (TREE_ATTENTION, "right-frontier"),
    (TREE_ATTENTION, "root-and-right-frontier"),
    (TREE_ATTENTION, "root-and-root-queried-right-frontier")],
    ids=["hierarchical-accumulation", "rta", "rta-root-and-frontier", "rta-root-queried"])
def test_the_head_can_read_the_right_frontier(corpora, options, reads):
    """--head-reads right-frontier: the head reads v^T tanh(W u + b)-attention over the last
    word and the nodes that end at it (the root among them; root-and-right-frontier: plus the
    root's state; root-and-root-queried-right-frontier: plus it, with v^T tanh(W u + U r + b)
    queried by the root's state r), an example alone as in a padded batch; a dependency encoder,
    whose units have no spans, is refused."""
    corpus = "word" if options[1] == "tree_classifier_tiny" else "subword"
    task, model = float64_model(corpora[corpus], options + ["--head-reads", reads])
    dataset, sample = task.dataset("test"), whole_split(task)
    net_input = sample["net_input"]
    attention, head = model.frontier_attention, model.classification_heads[HEAD]
    sizes = set()
    with torch.no_grad():
        logits, extra = model(**net_input, classification_head_name=HEAD)
        units, _, _ = model.encode_units(**net_input)
        for row in range(logits.size(0)):
            columns = frontier_columns(net_input, row)
            assert extra["root_columns"][row] in columns
            sizes.add(len(columns))
            states, root = units[row, columns], units[row, extra["root_columns"][row]]
            query = (attention.project_query.weight @ root if "queried" in reads
                     else torch.zeros_like(attention.project.bias))
            scores = torch.stack([attention.score.weight[0] @ torch.tanh(
                attention.project.weight @ state + query + attention.project.bias)
                for state in states])
            read = (torch.softmax(scores, 0).unsqueeze(1) * states).sum(0)
            if reads != "right-frontier":
                read = read + root
            torch.testing.assert_close(logits[row], head(read.view(1, 1, -1))[0],
                                       rtol=0, atol=1e-10)
            alone, _ = model(**dataset.collater([dataset[int(sample["id"][row])]])["net_input"],
                             classification_head_name=HEAD)
            torch.testing.assert_close(alone[0], logits[row], rtol=0, atol=1e-12)
    assert len(sizes) > 1 and max(sizes) > 2  # frontiers of several depths were read
    with pytest.raises(ValueError, match="right-frontier.*dependency"):
        float64_model(corpora["word"], MULTI_BRANCH + ["--dependency", "--head-reads", reads])
