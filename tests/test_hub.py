"""The Python API: ``Tree2SeqModel.from_pretrained`` and its hub's ``translate()`` on the tiny
tree2seq model trained on the Bible sample, against fairseq-generate on the binarized test set."""

import json
import os

import pytest
from fairseq.hub_utils import GeneratorHubInterface
from sacremoses import MosesDetokenizer

from conftest import BIBLE, generated_hypotheses
from fairseq_tree.models import Tree2SeqModel
from fairseq_tree.data.recipe import Recipe
from fairseq_tree.hub import TranslationInputError
from fairseq_tree.parsing.moses import moses_tokenize
from fairseq_tree.trees.normal_form import parse_tree

TEST_TREES = (BIBLE / "test.en").read_text(encoding="utf-8").splitlines()


@pytest.fixture(scope="module")
def expected(trained):
    """fairseq-generate's translations of the test sample, Moses-detokenised."""
    detok = MosesDetokenizer(lang="fr")
    return [detok.detokenize(h.split()) for h in generated_hypotheses(trained)]


def load(trained, **kwargs):
    data, checkpoint, _ = trained
    return Tree2SeqModel.from_pretrained(
        str(checkpoint.parent), checkpoint_file=checkpoint.name, data_name_or_path=str(data),
        bpe_codes=str(data.parent / "bpe" / "codes"), **kwargs)


@pytest.fixture(scope="module")
def hub(trained, needs_link_grammar):
    return load(trained, parser="link-grammar")


@pytest.mark.slow
def test_bracketed_trees_single_and_batched(hub, expected):
    assert isinstance(hub, GeneratorHubInterface)
    assert hub.translate(TEST_TREES, trees=True) == expected
    assert [hub.translate(tree, trees=True) for tree in TEST_TREES] == expected
    assert len(set(expected)) > 1  # the model's output depends on its input


@pytest.mark.slow
def test_raw_sentences_single_and_batched(hub, expected):
    """Raw English (Moses-detokenised leaves of the test trees), tokenised by Moses and parsed
    by link-grammar on the fly: the trees of the sample (made by the same steps), hence
    fairseq-generate's translations. Two verses whose Moses tokens are not the sample's
    ("didn't") are left out."""
    detok = MosesDetokenizer(lang="en")
    cases = []
    for tree, translation in zip(TEST_TREES, expected):
        leaves = parse_tree(tree).leaves
        raw = detok.detokenize(leaves)
        if moses_tokenize(raw, "en") == leaves:
            cases.append((raw, translation))
    assert len(cases) >= 35
    raws, translations = zip(*cases)
    before = hub.flat_fallbacks
    assert hub.translate(list(raws)) == list(translations)
    assert [hub.translate(raw) for raw in raws[::6]] == list(translations[::6])
    assert hub.flat_fallbacks == before  # link-grammar parsed every verse


@pytest.mark.slow
def test_recipe_folder(trained, expected, tmp_path):
    """A recipe's output folder gives the data-bin, languages and BPE codes (recipe.json)."""
    data, _, _ = trained
    recipe = tmp_path / "bible-en-fr"
    (recipe / "bpe").mkdir(parents=True)
    os.symlink(data, recipe / "data-bin")
    os.symlink(data.parent / "bpe" / "codes", recipe / "bpe" / "codes")
    (recipe / "recipe.json").write_text(json.dumps(
        {"src": "en", "tgt": "fr", "bpe_codes": "bpe/codes", "lowercase": False}))
    _, checkpoint, _ = trained
    hub = Tree2SeqModel.from_pretrained(str(checkpoint.parent), checkpoint.name,
                                        recipe=str(recipe), parser="flat", batch_size=8)
    assert hub.translate(TEST_TREES, trees=True) == expected
    (recipe / "recipe.json").write_text(json.dumps({"tgt": "fr"}))
    with pytest.raises(ValueError, match=r"recipe.json: it has no 'src'"):
        Recipe.read(str(recipe), kind="translation")


@pytest.mark.slow
def test_inputs_it_cannot_translate(hub, trained):
    """Errors name the sentence; an empty sentence gives ""; with skip_invalid_size_inputs a
    sentence longer than the model accepts gives None and the others are translated."""
    with pytest.raises(TranslationInputError, match=r"sentences\[1\]: malformed tree"):
        hub.translate([TEST_TREES[0], "(S (NP a"], trees=True)
    too_long = "(ROOT " + "word " * 2000 + ")"
    with pytest.raises(TranslationInputError, match=r"line 9: \d+ source tokens \(leaves \+ "
                                                    r"nodes\) exceed the model's 1024"):
        hub.translate([TEST_TREES[0], too_long], trees=True, names=["line 8", "line 9"])
    out = hub.translate([TEST_TREES[0], too_long, "", TEST_TREES[1]], trees=True,
                        skip_invalid_size_inputs=True)
    assert out[1:3] == [None, ""] and out[0] == hub.translate(TEST_TREES[0], trees=True)
    assert out[3] == hub.translate(TEST_TREES[1], trees=True)
    no_parser = load(trained, detokenize=False)
    with pytest.raises(TranslationInputError, match="no parser for raw sentences"):
        no_parser.translate("In the beginning.")


@pytest.mark.slow
def test_missing_folders_are_named(trained, tmp_path):
    data, checkpoint, _ = trained
    with pytest.raises(FileNotFoundError, match="no such model folder"):
        Tree2SeqModel.from_pretrained(str(tmp_path / "none"), "x.pt", str(data))
    with pytest.raises(FileNotFoundError, match="no such data folder"):
        Tree2SeqModel.from_pretrained(str(checkpoint.parent), checkpoint.name,
                                      str(tmp_path / "none"))
