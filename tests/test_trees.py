"""Reading bracketed trees, their normal form, its inverse, and subword splitting."""

import random

import pytest

from fairseq_tree.trees.bracketed import DOCUMENT_LABEL, TreeSyntaxError, format_bracketed, parse_bracketed
from fairseq_tree.trees.normal_form import Node, NormalTree, parse_tree, to_bracketed
from fairseq_tree.trees.subwords import WORD_LABEL, join_subwords, split_words


def spans(tree: NormalTree):
    return [(n.label, n.start, n.end) for n in tree.nodes]


def test_stanza_style_tree_with_preterminals():
    tree = parse_tree("(ROOT (S (NP (DT The) (NN dog)) (VP (VBD barked)) (. .)))")
    assert tree.leaves == ["The", "dog", "barked", "."]
    assert tree.tags == ["DT", "NN", "VBD", "."]
    # VP over the single word "barked" stays a node; the preterminal VBD does not.
    assert spans(tree) == [("S", 0, 4), ("NP", 0, 2), ("VP", 2, 3)]


def test_wrappers_are_removed():
    for text in ("(ROOT (S (NP a b) (VP c)))", "(TOP (S (NP a b) (VP c)))", "( (S (NP a b) (VP c)))",
                 "(S (NP a b) (VP c))", "(ROOT ( (S (NP a b) (VP c))))"):
        assert spans(parse_tree(text)) == [("S", 0, 3), ("NP", 0, 2)], text


def test_link_grammar_bare_leaves_kept_verbatim():
    tree = parse_tree("(S (NP I.p) (VP saw.v (NP the {cat}.n [!] dog.n-u)))")
    assert tree.leaves == ["I.p", "saw.v", "the", "{cat}.n", "[!]", "dog.n-u"]
    # "(NP I.p)" is a one-token phrase: read as a preterminal, its label tags the leaf.
    assert tree.tags == ["NP", None, None, None, None, None]
    assert spans(tree) == [("S", 0, 6), ("VP", 1, 6), ("NP", 2, 6)]


def test_bracket_escapes_and_unicode():
    tree = parse_tree("(ROOT (NP (NN Größe) (-LRB- -LRB-) (NN 北京) (-RRB- -RRB-) (NN é-LSB-x-RSB-)))")
    assert tree.leaves == ["Größe", "(", "北京", ")", "é[x]"]
    assert tree.tags == ["NN", "-LRB-", "NN", "-RRB-", "NN"]
    assert to_bracketed(tree) == "(NP (NN Größe) (-LRB- -LRB-) (NN 北京) (-RRB- -RRB-) (NN é[x]))"


def test_several_trees_on_one_line_form_one_document():
    tree = parse_tree("(ROOT (S (NP (PRP I)) (VP (VBP run)))) (ROOT (S (NP (PRP you)) (VP (VBP walk))))")
    assert tree.leaves == ["I", "run", "you", "walk"]
    assert spans(tree) == [
        (DOCUMENT_LABEL, 0, 4), ("S", 0, 2), ("NP", 0, 1), ("VP", 1, 2),
        ("S", 2, 4), ("NP", 2, 3), ("VP", 3, 4),
    ]
    # A wrapper around several trees is a document as well.
    assert spans(parse_tree("(ROOT (S a b) (S c))"))[0] == (DOCUMENT_LABEL, 0, 3)


def test_unary_chains_collapse_to_the_outermost_label():
    tree = parse_tree("(S (VP (VP (VB go) (ADVP (RB now)))))")
    assert spans(tree) == [("S", 0, 2), ("ADVP", 1, 2)]


def test_single_word_tree_has_no_nodes_and_round_trips():
    tree = parse_tree("(ROOT (UH hello))")
    assert tree.leaves == ["hello"] and tree.tags == ["UH"] and tree.nodes == []
    assert parse_tree(to_bracketed(tree)) == tree


@pytest.mark.parametrize(
    "text, message",
    [
        ("", "empty tree"),
        ("   ", "empty tree"),
        ("(S (NP a b)", "1 '(' never closed"),
        ("(S (NP a b)))", "')' without a matching '('"),
        ("the dog", "text outside brackets: 'the'"),
        ("(S a) dog", "text outside brackets: 'dog'"),
        ("(S (NP) a)", "has no children"),
        ("()", "has no children"),
    ],
)
def test_malformed_trees(text, message):
    with pytest.raises(TreeSyntaxError, match=message.replace("(", r"\(").replace(")", r"\)")):
        parse_tree(text)


def test_deep_tree_does_not_hit_the_recursion_limit():
    depth = 5000
    text = "(X " * depth + "(NN w) (NN v)" + ")" * depth
    tree = parse_tree(text)
    assert tree.leaves == ["w", "v"] and spans(tree) == [("X", 0, 2)]


def test_format_bracketed_is_the_inverse_of_parse():
    text = "(S (NP (DT the) (NN dog)) (VP barked.v))"
    assert format_bracketed(parse_bracketed(text)) == text


def random_tree(rng: random.Random, words: int) -> str:
    """A random bracketed tree over ``words`` tokens (some tagged, some bare)."""
    def build(lo, hi, depth):
        if hi - lo == 1 and (depth > 0 and rng.random() < 0.6):
            return f"({rng.choice(['NN', 'VB', 'DT'])} w{lo}é)"
        if hi - lo == 1 or depth > 6 or rng.random() < 0.15:
            return " ".join(f"w{i}é" if rng.random() < 0.5 else f"(JJ w{i}é)" for i in range(lo, hi))
        cuts = sorted(rng.sample(range(lo + 1, hi), min(rng.randint(1, 3), hi - lo - 1)))
        parts = [build(a, b, depth + 1) for a, b in zip([lo] + cuts, cuts + [hi])]
        return f"({rng.choice(['S', 'NP', 'VP', 'PP', 'SBAR'])} {' '.join(parts)})"

    return f"(ROOT {build(0, words, 0)})"


def test_round_trip_on_random_trees():
    rng = random.Random(0)
    for _ in range(500):
        tree = parse_tree(random_tree(rng, rng.randint(1, 25)))
        tree.validate()
        if not tree.nodes and (len(tree.leaves) > 1 or tree.tags[0] is None):
            continue  # a flat line of bare words has no single-tree form
        try:
            text = to_bracketed(tree)
        except ValueError:
            # only a one-leaf node over an untagged leaf is unwritable
            assert any(n.end - n.start == 1 and tree.tags[n.start] is None for n in tree.nodes)
            continue
        assert parse_tree(text) == tree


def test_validate_rejects_crossing_and_duplicate_spans():
    leaves, tags = ["a", "b", "c"], [None] * 3
    with pytest.raises(ValueError, match="crosses"):
        NormalTree(leaves, tags, [Node("S", 0, 3), Node("X", 0, 2), Node("Y", 1, 3)]).validate()
    with pytest.raises(ValueError, match="distinct"):
        NormalTree(leaves, tags, [Node("S", 0, 3), Node("X", 0, 3)]).validate()


def fake_bpe(word):
    """Split words longer than 3 characters after every 3rd character, subword-nmt style."""
    chunks = [word[i:i + 3] for i in range(0, len(word), 3)]
    return [c + "@@" for c in chunks[:-1]] + [chunks[-1]]


def test_split_word_becomes_a_node_with_its_tag():
    tree = parse_tree("(ROOT (S (NP (DT the) (NNS elephants)) (VP (VBD ran) (ADVP quickly now))))")
    split = split_words(tree, fake_bpe)
    assert split.leaves == ["the", "ele@@", "pha@@", "nts", "ran", "qui@@", "ckl@@", "y", "now"]
    assert split.tags == ["DT", None, None, None, "VBD", None, None, None, None]
    assert spans(split) == [
        ("S", 0, 9), ("NP", 0, 4), ("NNS", 1, 4), ("VP", 4, 9), ("ADVP", 5, 9), (WORD_LABEL, 5, 8),
    ]
    split.validate()
    assert parse_tree(to_bracketed(split)) == split
    assert join_subwords(split.leaves, "subword-nmt") == tree.leaves


def test_split_word_under_a_one_word_phrase_adds_no_duplicate_span():
    tree = parse_tree("(S (NP (NNP Johnson)) (VP (VBD ran)))")
    split = split_words(tree, fake_bpe)
    assert spans(split) == [("S", 0, 4), ("NP", 0, 3), ("VP", 3, 4)]
    assert parse_tree(to_bracketed(split)) == split


def test_split_round_trip_on_random_trees():
    rng = random.Random(1)
    for _ in range(300):
        tree = parse_tree(random_tree(rng, rng.randint(2, 20)))
        split = split_words(tree, fake_bpe)
        split.validate()
        assert join_subwords(split.leaves, "subword-nmt") == tree.leaves


def test_sentencepiece_join():
    assert join_subwords(["\u2581ele", "ph", "ants", "\u2581ran"], "sentencepiece") == ["elephants", "ran"]


def test_segmenter_must_return_pieces():
    with pytest.raises(ValueError, match="invalid pieces"):
        split_words(parse_tree("(S a b)"), lambda w: [])


def test_real_link_grammar_output_is_read_with_leaves_verbatim():
    """Trees exactly as Debian's link-grammar printed them for the shipped sample."""
    from conftest import BIBLE

    raw = (BIBLE / "link_grammar_raw.txt").read_text(encoding="utf-8").splitlines()
    tokens = (BIBLE / "train.en").read_text(encoding="utf-8").splitlines()
    assert len(raw) == 10
    leaves = []
    for raw_line, token_line in zip(raw, tokens):
        tree, clean = parse_tree(raw_line), parse_tree(token_line)
        tree.validate()
        assert len(tree.leaves) == len(clean.leaves)
        assert [(n.start, n.end) for n in tree.nodes] == [(n.start, n.end) for n in clean.nodes]
        leaves += tree.leaves
    assert any(leaf.endswith(".v-d") for leaf in leaves)
    assert any("{!" in leaf for leaf in leaves)
