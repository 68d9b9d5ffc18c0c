"""Reading bracketed trees, their normal form, its inverse, and subword splitting."""

import random

import pytest

from fairseq_tree.trees.bracketed import (
    DOCUMENT_LABEL,
    Tree,
    TreeSyntaxError,
    format_bracketed,
    parse_bracketed,
)
from fairseq_tree.trees.normal_form import Node, NormalTree, parse_tree, to_bracketed
from fairseq_tree.trees.subwords import WORD_LABEL, join_subwords, split_words


def spans(tree: NormalTree):
    return [(n.label, n.start, n.end) for n in tree.nodes]


def round_trips(tree: NormalTree) -> bool:
    return parse_tree(to_bracketed(tree)) == tree


# ------------------------------------------------------------------------------- reading


def test_stanza_style_tree_with_preterminals():
    tree = parse_tree("(ROOT (S (NP (DT The) (NN dog)) (VP (VBD barked)) (. .)))")
    assert tree.leaves == ["The", "dog", "barked", "."]
    assert tree.tags == ["DT", "NN", "VBD", "."]
    # VP over the single word "barked" stays a node; the preterminal VBD does not.
    assert spans(tree) == [("S", 0, 4), ("NP", 0, 2), ("VP", 2, 3)]
    assert round_trips(tree)


@pytest.mark.parametrize("text", [
    "(ROOT (S (NP a b) (VP c)))", "(TOP (S (NP a b) (VP c)))", "( (S (NP a b) (VP c)))",
    "(S (NP a b) (VP c))", "(ROOT ( (S (NP a b) (VP c))))", "(TOP (ROOT (S (NP a b) (VP c))))",
])
def test_wrappers_around_one_tree_are_removed(text):
    assert spans(parse_tree(text)) == [("S", 0, 3), ("NP", 0, 2)]
    assert parse_tree(text).tags == [None, None, "VP"]


def test_wrapper_over_several_children_stays_a_node():
    assert spans(parse_tree("(ROOT (S a b) (S c d))")) == [("ROOT", 0, 4), ("S", 0, 2), ("S", 2, 4)]
    assert spans(parse_tree("(TOP (S a b) c)")) == [("TOP", 0, 3), ("S", 0, 2)]
    # An unlabelled wrapper over several trees is a document: no node label is ever empty.
    assert spans(parse_tree("( (S a b) (S c d))"))[0] == (DOCUMENT_LABEL, 0, 4)
    assert parse_bracketed("( a b)") == Tree(DOCUMENT_LABEL, ["a", "b"])


def test_a_label_is_written_right_after_its_bracket():
    # As NLTK reads trees: "( x y)" has no label, "(x y)" is node x over y.
    assert parse_bracketed("(x y)") == Tree("x", ["y"])
    assert parse_bracketed("( (x y))") == Tree("x", ["y"])
    with pytest.raises(TreeSyntaxError, match="without a label inside a tree"):
        parse_tree("(S ( a b) c)")


def test_link_grammar_bare_leaves_kept_verbatim():
    tree = parse_tree("(S (NP I.p) (VP saw.v (NP the {cat}.n)))")
    assert tree.leaves == ["I.p", "saw.v", "the", "{cat}.n"]
    # "(NP I.p)" is a one-token phrase: read as a preterminal, its label tags the leaf.
    assert tree.tags == ["NP", None, None, None]
    assert spans(tree) == [("S", 0, 4), ("VP", 1, 4), ("NP", 2, 4)]
    tree = parse_tree("(S (NP he) (VP ran.v-d [!] dog.n-u {word}))")
    assert tree.leaves == ["he", "ran.v-d", "[!]", "dog.n-u", "{word}"]
    assert round_trips(tree)


def test_bracket_escapes_and_unicode():
    tree = parse_tree("(ROOT (NP (NN Größe) (-LRB- -LRB-) (NN 北京) (-RRB- -RRB-) (NN é-LSB-x-RSB-)"
                      " (NN -LCB-y-RCB-)))")
    assert tree.leaves == ["Größe", "(", "北京", ")", "é[x]", "{y}"]
    assert tree.tags == ["NN", "-LRB-", "NN", "-RRB-", "NN", "NN"]
    assert to_bracketed(tree) == (
        "(NP (NN Größe) (-LRB- -LRB-) (NN 北京) (-RRB- -RRB-) (NN é[x]) (NN {y}))"
    )
    assert round_trips(tree)


def test_german_french_and_chinese_tokens():
    tree = parse_tree("(S (NP (NNP Müller)) (VP (VBD aß) (NP l'été « Noël »)) (NP 我们 喜欢 北京))")
    assert tree.leaves == ["Müller", "aß", "l'été", "«", "Noël", "»", "我们", "喜欢", "北京"]
    assert spans(tree) == [("S", 0, 9), ("NP", 0, 1), ("VP", 1, 6), ("NP", 2, 6), ("NP", 6, 9)]
    assert round_trips(tree)


def test_any_whitespace_separates_tokens():
    spaced = "(ROOT (S (NP (DT the) (NN dog)) (VP barked)))"
    messy = "  (ROOT\t(S\n (NP   (DT the)(NN dog))(VP barked ) ) )\r\n"
    assert parse_tree(messy) == parse_tree(spaced)


def test_several_trees_on_one_line_form_one_document():
    tree = parse_tree(
        "(ROOT (S (NP (PRP I)) (VP (VBP run)))) (ROOT (S (NP (PRP you)) (VP (VBP walk))))")
    assert tree.leaves == ["I", "run", "you", "walk"]
    assert spans(tree) == [
        (DOCUMENT_LABEL, 0, 4), ("S", 0, 2), ("NP", 0, 1), ("VP", 1, 2),
        ("S", 2, 4), ("NP", 2, 3), ("VP", 3, 4),
    ]
    assert round_trips(tree)
    assert parse_bracketed("(S a b)(S c)").label == DOCUMENT_LABEL


def test_unary_chains_collapse_to_the_outermost_label():
    tree = parse_tree("(S (VP (VP (VB go) (ADVP (RB now)))))")
    assert spans(tree) == [("S", 0, 2), ("ADVP", 1, 2)]
    tree = parse_tree("(ROOT (S (NP (NP (NP (DT a) (NN b)))) (VP c d)))")
    assert spans(tree) == [("S", 0, 4), ("NP", 0, 2), ("VP", 2, 4)]
    # A chain down to a preterminal: the preterminal tags the word, the chain is one node.
    tree = parse_tree("(ROOT (FRAG (INTJ (UH hello))))")
    assert (tree.tags, spans(tree)) == (["UH"], [("FRAG", 0, 1)])
    assert round_trips(tree)


def test_nodes_are_in_pre_order_with_distinct_nested_spans():
    tree = parse_tree("(S (NP (NP a b) (PP c (NP d e))) (VP (V f) (NP (NP g) h)))")
    assert [(n.start, n.end) for n in tree.nodes] == sorted(
        {(n.start, n.end) for n in tree.nodes}, key=lambda s: (s[0], -s[1]))
    tree.validate()
    assert spans(tree) == [("S", 0, 8), ("NP", 0, 5), ("NP", 0, 2), ("PP", 2, 5), ("NP", 3, 5),
                           ("VP", 5, 8), ("NP", 6, 8)]


@pytest.mark.parametrize("text, leaves, tags", [
    ("(ROOT (UH hello))", ["hello"], ["UH"]),
    ("(ROOT hello)", ["hello"], ["ROOT"]),
    ("( hello)", ["hello"], [None]),
])
def test_single_word_trees_have_no_nodes_and_round_trip(text, leaves, tags):
    tree = parse_tree(text)
    assert (tree.leaves, tree.tags, tree.nodes) == (leaves, tags, [])
    assert round_trips(tree)


@pytest.mark.parametrize("text, message", [
    ("", "empty tree"),
    ("   \t", "empty tree"),
    ("(S (NP a b)", "unbalanced brackets: 1 unclosed '('"),
    ("((S (NP a b)", "unbalanced brackets: 2 unclosed '('"),
    ("(S (NP a b)))", "unbalanced brackets: ')' without a matching '('"),
    ("the dog", "text outside brackets: 'the'"),
    ("(S a) dog", "text outside brackets: 'dog'"),
    ("(S (NP) a)", "node '(NP )' has no children"),
    ("(NP )", "node '(NP )' has no children"),
    ("()", "empty brackets '()'"),
    ("( )", "empty brackets '()'"),
])
def test_malformed_trees(text, message):
    with pytest.raises(TreeSyntaxError) as info:
        parse_tree(text)
    assert str(info.value) == message


def test_deep_tree_does_not_hit_the_recursion_limit():
    depth = 5000
    text = "(X " * depth + "(NN w) (NN v)" + ")" * depth
    tree = parse_tree(text)
    assert tree.leaves == ["w", "v"] and spans(tree) == [("X", 0, 2)]
    assert format_bracketed(parse_bracketed(text)) == text


def test_format_bracketed_is_the_inverse_of_parse():
    for text in ("(S (NP (DT the) (NN dog)) (VP barked.v))", "(DOC (S a b) (S c))", "( word)"):
        assert format_bracketed(parse_bracketed(text)) == text


# ------------------------------------------------------------------ writing (to_bracketed)


def random_bracketed(rng: random.Random, words: int) -> str:
    """A random bracketed line over ``words`` tokens (preterminals, bare tokens, chains)."""
    def build(lo, hi, depth):
        if hi - lo == 1 and (depth > 0 and rng.random() < 0.6):
            return f"({rng.choice(['NN', 'VB', 'DT'])} w{lo}é)"
        if hi - lo == 1 or depth > 6 or rng.random() < 0.15:
            return " ".join(f"w{i}é" if rng.random() < 0.5 else f"(JJ w{i}-LRB-)"
                            for i in range(lo, hi))
        cuts = sorted(rng.sample(range(lo + 1, hi), min(rng.randint(1, 3), hi - lo - 1)))
        parts = [build(a, b, depth + 1) for a, b in zip([lo] + cuts, cuts + [hi])]
        label = rng.choice(["S", "NP", "VP", "PP", "SBAR"])
        inner = f"({label} {' '.join(parts)})"
        return inner if rng.random() < 0.8 else f"({label} {inner})"  # a unary chain

    return f"({rng.choice(['ROOT', 'TOP', ''])} {build(0, words, 0)})"


def test_round_trip_on_random_parsed_trees():
    rng = random.Random(0)
    for _ in range(500):
        tree = parse_tree(random_bracketed(rng, rng.randint(1, 25)))
        tree.validate()
        assert round_trips(tree), tree


WORDS = ["dog", "(", ")", "[x]", "{y}", "Größe", "北京", "l'été", "ran.v", "-", "@@", "\u2581a",
         "LRB"]
LABELS = ["S", "NP", "VP", "ROOT", "TOP", "DOC", "WORD", "-LRB-"]


def random_normal_tree(rng: random.Random) -> NormalTree:
    """A random writable normal form built directly, not through the reader."""
    n = rng.randint(1, 12)
    leaves = [rng.choice(WORDS) for _ in range(n)]
    tags = [rng.choice([None, "NN", "ROOT", "-RRB-"]) for _ in range(n)]
    nodes: list[Node] = []

    def carve(lo, hi):
        """Random child spans of [lo, hi): consecutive parts, each maybe a node, recursively."""
        cuts = sorted(rng.sample(range(lo + 1, hi), rng.randint(0, min(3, hi - lo - 1))))
        for a, b in zip([lo] + cuts, cuts + [hi]):
            if (a, b) != (lo, hi) and (b - a > 1 or tags[a] is not None) and rng.random() < 0.6:
                nodes.append(Node(rng.choice(LABELS), a, b))
            if b - a > 1 and (a, b) != (lo, hi):
                carve(a, b)

    if n > 1 or (tags[0] is not None and rng.random() < 0.5):
        nodes.append(Node(rng.choice(LABELS[:3] if n == 1 else LABELS), 0, n))
        carve(0, n)
    nodes.sort(key=lambda node: (node.start, -node.end))
    return NormalTree(leaves, tags, nodes)


def test_round_trip_on_random_normal_trees():
    rng = random.Random(2)
    for _ in range(500):
        tree = random_normal_tree(rng)
        tree.validate()
        assert round_trips(tree), tree


@pytest.mark.parametrize("tree, message", [
    (NormalTree(["a", "b"], ["X", None], [Node("S", 0, 2), Node("NP", 1, 2)]), "untagged leaf 'b'"),
    (NormalTree(["a", "b"], [None, None], []), "without nodes must have one leaf"),
    (NormalTree(["a", "b", "c"], [None] * 3, [Node("S", 0, 2)]), "span all leaves"),
    (NormalTree(["a"], ["NN"], [Node("ROOT", 0, 1)]), "read as a wrapper"),
    (NormalTree(["a b", "c"], [None] * 2, [Node("S", 0, 2)]), "whitespace"),
    (NormalTree(["-LRB-", "c"], [None] * 2, [Node("S", 0, 2)]), "PTB escape"),
    (NormalTree(["a", "c"], [None] * 2, [Node("", 0, 2)]), "label ''"),
    (NormalTree(["a", "c"], ["N(N", None], [Node("S", 0, 2)]), "label 'N\\(N'"),
    (NormalTree(["a", "c"], [None] * 2, [Node("S", 0, 2), Node("S", 0, 2)]), "distinct"),
])
def test_to_bracketed_rejects_unwritable_trees(tree, message):
    with pytest.raises(ValueError, match=message):
        to_bracketed(tree)


def test_validate_rejects_bad_spans():
    leaves, tags = ["a", "b", "c"], [None] * 3
    cases = [
        ([Node("S", 0, 3), Node("X", 0, 2), Node("Y", 1, 3)], "crosses"),
        ([Node("S", 0, 3), Node("X", 0, 3)], "distinct"),
        ([Node("X", 1, 3), Node("S", 0, 3)], "pre-order"),
        ([Node("S", 0, 3), Node("X", 2, 2)], "empty or out of range"),
        ([Node("S", 0, 4)], "empty or out of range"),
    ]
    for nodes, message in cases:
        with pytest.raises(ValueError, match=message):
            NormalTree(leaves, tags, nodes).validate()
    with pytest.raises(ValueError, match="3 leaves but 2 tags"):
        NormalTree(leaves, tags[:2], []).validate()


# ------------------------------------------------------------------------------ subwords


def fake_bpe(word):
    """Split words longer than 3 characters after every 3rd character, subword-nmt style."""
    chunks = [word[i:i + 3] for i in range(0, len(word), 3)]
    return [c + "@@" for c in chunks[:-1]] + [chunks[-1]]


def test_split_word_becomes_a_node_with_its_tag_or_word():
    tree = parse_tree("(ROOT (S (NP (DT the) (NNS elephants)) (VP (VBD ran) (ADVP quickly now))))")
    split = split_words(tree, fake_bpe)
    assert split.leaves == ["the", "ele@@", "pha@@", "nts", "ran", "qui@@", "ckl@@", "y", "now"]
    assert split.tags == ["DT", None, None, None, "VBD", None, None, None, None]
    # Spans remapped to pieces: NP [0, 2) -> [0, 4), VP [2, 5) -> [4, 9), ADVP [3, 5) -> [5, 9).
    assert spans(split) == [
        ("S", 0, 9), ("NP", 0, 4), ("NNS", 1, 4), ("VP", 4, 9), ("ADVP", 5, 9), (WORD_LABEL, 5, 8),
    ]
    split.validate()
    assert round_trips(split)
    assert join_subwords(split.leaves, "subword-nmt") == tree.leaves


def test_split_word_under_a_one_word_phrase_adds_no_duplicate_span():
    tree = parse_tree("(S (NP (NNP Johnson)) (VP (VBD ran)))")
    split = split_words(tree, fake_bpe)
    assert spans(split) == [("S", 0, 4), ("NP", 0, 3), ("VP", 3, 4)]
    assert round_trips(split)


@pytest.mark.parametrize("text, label", [
    ("(ROOT (NN elephant))", "NN"), ("( elephant)", WORD_LABEL), ("(ROOT elephant)", "ROOT"),
])
def test_splitting_a_one_word_tree(text, label):
    split = split_words(parse_tree(text), fake_bpe)
    assert spans(split) == [(label, 0, 3)] and split.tags == [None] * 3
    assert round_trips(split)


def test_unsplit_words_keep_their_tags():
    tree = parse_tree("(S (DT a) (NN cat) b)")
    assert split_words(tree, lambda word: [word]) == tree


def test_split_round_trip_on_random_trees():
    rng = random.Random(1)
    for _ in range(300):
        tree = parse_tree(random_bracketed(rng, rng.randint(1, 20)))
        split = split_words(tree, fake_bpe)
        split.validate()
        assert round_trips(split)
        assert join_subwords(split.leaves, "subword-nmt") == tree.leaves
        # Every split word is spanned by a node over exactly its pieces.
        node_spans = {(n.start, n.end) for n in split.nodes}
        start = 0
        for word in tree.leaves:
            width = len(fake_bpe(word))
            assert width == 1 or (start, start + width) in node_spans
            start += width


def test_join_subwords():
    pieces = ["\u2581ele", "ph", "ants", "\u2581", "ran"]
    assert join_subwords(pieces, "sentencepiece") == ["elephants", "ran"]
    assert join_subwords(["ele@@", "ph@@", "ants", "ran"], "subword-nmt") == ["elephants", "ran"]
    with pytest.raises(ValueError, match="unknown subword method"):
        join_subwords(["a"], "wordpiece")


@pytest.mark.parametrize("pieces", [[], ["a", ""], ["a b"], ["a\tb"]])
def test_segmenter_must_return_pieces(pieces):
    with pytest.raises(ValueError, match="invalid pieces"):
        split_words(parse_tree("(S a b)"), lambda word: pieces)


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
        assert round_trips(tree)
        leaves += tree.leaves
    assert any(leaf.endswith(".v-d") for leaf in leaves)
    assert any("{!" in leaf for leaf in leaves)
