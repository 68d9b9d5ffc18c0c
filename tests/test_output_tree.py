"""The output tree's one home (``data/output_tree.py`` over ``linearized_tree.TreeSymbols``),
on hand-built trees: the brackets join a dictionary once, a tree comes back from its linearized
form, what is stripped leaves exactly the leaves, and a written tree fits its tokens a word."""

import pytest
import torch
from fairseq.data import Dictionary

from fairseq_tree.data.label_dictionary import label_symbol
from fairseq_tree.data.linearized_tree import (
    CLOSE_SYMBOL,
    OPEN_SYMBOL,
    TreeSymbols,
    add_tree_symbols,
)
from fairseq_tree.data.output_tree import OutputTree
from fairseq_tree.data.tree_encoding import encode_tree
from fairseq_tree.trees.bracketed import TreeSyntaxError
from fairseq_tree.trees.normal_form import parse_tree

TREE = "(S (NP (DT the) (NN dog)) (VP (VBD barked) (PP (IN at) (NP (DT the) (NN cat)))))"


def dictionary_of(*trees: str) -> Dictionary:
    d = Dictionary()
    for text in trees:
        tree = parse_tree(text)
        for symbol in [*tree.leaves, *OutputTree.label_symbols(tree)]:
            d.add_symbol(symbol)
    return d


def test_the_brackets_join_each_dictionary_once_after_its_own_symbols():
    source, target = dictionary_of(TREE), dictionary_of(TREE)
    size = len(source)
    first, second, again = add_tree_symbols(source, target, source)
    assert first.bracket_ids == second.bracket_ids == again.bracket_ids == (size, size + 1)
    assert first is again and (source[size], source[size + 1]) == (OPEN_SYMBOL, CLOSE_SYMBOL)
    assert len(source) == len(target) == size + 2  # a dictionary given twice gets them once
    with pytest.raises(ValueError, match="already holds"):
        add_tree_symbols(source)


def test_a_written_tree_comes_back_from_its_linearized_form():
    d = dictionary_of(TREE)
    (symbols,) = add_tree_symbols(d)
    output_tree = OutputTree(symbols)
    tree = parse_tree(TREE)
    tokens = output_tree.item(tree)
    assert d.string(tokens) == ("[(] [S] [(] [NP] the dog [)] [(] [VP] barked [(] [PP] at "
                                "[(] [NP] the cat [)] [)] [)] [)]")
    encoded = encode_tree(tree, d)
    leaves, labels, spans = symbols.delinearize(tokens)
    assert torch.equal(leaves, encoded.leaves) and torch.equal(labels, encoded.labels)
    assert torch.equal(spans, encoded.spans)
    assert torch.equal(symbols.linearize(encoded), tokens)


def test_what_is_stripped_is_the_brackets_and_labels_and_leaves_the_leaves():
    d = dictionary_of(TREE, "(X (Y S S) (NP NP NP))")  # the words "S" and "NP" are no labels
    (symbols,) = add_tree_symbols(d)
    output_tree = OutputTree(symbols)
    labels = {d.index(label_symbol(label)) for label in ("S", "NP", "VP", "PP", "X", "Y")}
    assert output_tree.stripped_ids == {*symbols.bracket_ids, *labels}
    assert d.index("S") not in output_tree.stripped_ids
    tokens = output_tree.item(parse_tree("(X (Y S S) (NP NP NP))"))
    assert d.string(tokens, extra_symbols_to_ignore=output_tree.stripped_ids) == "S S NP NP"
    assert TreeSymbols(d, *symbols.bracket_ids).ids == output_tree.stripped_ids


@pytest.mark.parametrize("words", [1, 2, 5, 9])
def test_a_written_tree_takes_at_most_its_tokens_a_word(words):
    # the most nodes n leaves can have: every leaf a node of its own, and a binary tree
    # over them (2n - 1 distinct spans)
    def tree(lo, hi):
        if hi - lo == 1:
            return f"(W w{lo})"
        mid = (lo + hi) // 2
        return f"(N {tree(lo, mid)} {tree(mid, hi)})"

    text = tree(0, words)
    d = dictionary_of(text)
    output_tree = OutputTree(*add_tree_symbols(d))
    parsed = parse_tree(text)
    tokens = output_tree.item(parsed)
    assert len(parsed.leaves) == words
    assert len(tokens) - 1 <= OutputTree.TOKENS_PER_WORD * words  # EOS aside
    assert len(parsed.nodes) <= 2 * words - 1


def test_a_target_line_is_parsed_or_said_wrong():
    assert OutputTree.parse("(S (NP le chien))").leaves == ["le", "chien"]
    with pytest.raises(ValueError, match="empty line"):
        OutputTree.parse("  ")
    with pytest.raises(TreeSyntaxError):
        OutputTree.parse("(S (NP le")
