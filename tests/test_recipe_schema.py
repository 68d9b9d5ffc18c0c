"""recipe.json's one schema (``fairseq_tree.data.recipe.Recipe``): what the recipes write reads
back the same; a record written before the schema had a version is migrated, saying what it
filled in; the text steps given at inference complete the recorded ones."""

import json
import logging

import pytest

from fairseq_tree.data.recipe import RECIPE_VERSION, Recipe, TextSteps
from fairseq_tree.errors import FairseqTreeError
from fairseq_tree.inference.text import recipe_steps


def write(folder, record, settings=None):
    folder.mkdir(exist_ok=True)
    (folder / "recipe.json").write_text(json.dumps(record))
    if settings is not None:
        (folder / "settings.json").write_text(json.dumps(settings))
    return folder


def test_a_recipe_reads_back_as_written(tmp_path):
    recipe = Recipe("classification", TextSteps(parser="spacy", tokenize="spacy",
                                                 split_sentences=True, max_words=40,
                                                 bpe_codes="bpe/codes"),
                    ["--timeout", "5"], {"model": "fr_core_news_sm", "model_version": "3.8.0"},
                    dataset="imdb", views={"imdb": {"data_bin": "data-bin/imdb"}},
                    details={"sizes": {"train": 3}})
    assert recipe.write(tmp_path) and not recipe.write(tmp_path)  # a re-run leaves the file
    record = json.loads((tmp_path / "recipe.json").read_text())
    assert record["version"] == RECIPE_VERSION and record["kind"] == "classification"
    assert record["parser"] == "spacy" and record["sizes"] == {"train": 3}
    read = Recipe.read(tmp_path)
    assert read.to_json() == record and read.migrated is None
    steps = recipe_steps(read)
    assert steps.bpe_codes == str(tmp_path / "bpe" / "codes")
    assert steps.parser_options == {"spacy_model": "fr_core_news_sm", "timeout": 5.0}
    with pytest.raises(ValueError, match="clash"):
        Recipe("translation", details={"lowercase": True}).to_json()


def test_a_translation_record_without_a_version_is_migrated(tmp_path, caplog):
    folder = write(tmp_path / "wmt", {
        "src": "en", "tgt": "de", "bpe_codes": "bpe/codes", "lowercase": True,
        "moses_aggressive_dash_splits": True, "parser": "link-grammar", "sizes": {"test": 2}},
        settings={"parser_arg": ["--max-null-count", "2"]})
    with caplog.at_level(logging.INFO, logger="fairseq_tree.data.recipe"):
        recipe = Recipe.read(folder, kind="translation")
        Recipe.read(folder)
    said = [r.message for r in caplog.records if "before recipe.json had a version" in r.message]
    assert len(said) == 1 and "--max-null-count 2 from settings.json" in said[0]
    assert (recipe.src, recipe.tgt, recipe.details) == ("en", "de", {"sizes": {"test": 2}})
    text = recipe.text
    assert (text.tokenize, text.quote, text.aggressive_dash_splits, text.lowercase,
            text.normalize_punctuation) == ("moses", True, True, True, False)
    assert recipe_steps(recipe).parser_options == {"max_null_count": 2}
    assert Recipe.from_json(recipe.to_json()).text == text  # migrated once, then version 1


def test_a_classification_record_without_a_version_is_migrated(tmp_path):
    imdb = write(tmp_path / "imdb", {"dataset": "imdb", "views": {"imdb": {}}, "parser": "flat",
                                     "parser_args": []}, settings={"max_words": 40})
    text = Recipe.read(imdb, kind="classification").text
    assert (text.tokenize, text.normalize_punctuation, text.split_sentences,
            text.max_words) == ("moses", True, True, 40)
    sva = write(tmp_path / "sva", {"dataset": "sva", "views": {"sva": {}}})
    assert "not the tokens of raw text" in Recipe.read(sva).raw_text_refused
    assert Recipe.read(write(tmp_path / "agreement", {"dataset": "agreement", "views": {}})
                       ).text.tokenize == "spacy"


def test_records_that_cannot_be_read_are_named(tmp_path):
    newer = write(tmp_path / "newer", {"version": RECIPE_VERSION + 1, "kind": "translation"})
    with pytest.raises(FairseqTreeError, match=rf"{newer}/recipe.json: version "
                                                rf"{RECIPE_VERSION + 1}"):
        Recipe.read(newer)
    no_kind = write(tmp_path / "no-kind", {"version": 1})
    with pytest.raises(FairseqTreeError, match="recipe.json: it has no 'kind'"):
        Recipe.read(no_kind)
    bad_step = write(tmp_path / "bad-step", {"version": 1, "kind": "translation",
                                             "lowercase": True, "max_words": "many"})
    with pytest.raises(FairseqTreeError, match="recipe.json: max_words is 'many', not an int"):
        Recipe.read(bad_step)
    other = write(tmp_path / "other", {"version": 1, "kind": "classification"})
    with pytest.raises(FairseqTreeError, match="a classification recipe's, not a translation"):
        Recipe.read(other, kind="translation")


def test_given_steps_complete_the_recorded_ones():
    recorded = TextSteps(parser="link-grammar", parser_options={"max_null_count": 2},
                         quote=True, lowercase=True, bpe_codes="/r/codes")
    same = recorded.completed({"parser": None, "tokenize": "none", "lowercase": False,
                               "parser_options": {"timeout": 5.0}})
    assert (same.parser, same.tokenize, same.lowercase, same.quote) == (
        "link-grammar", "none", True, True)
    assert same.parser_options == {"max_null_count": 2, "timeout": 5.0}
    other = recorded.completed({"parser": "flat", "sentencepiece_model": "/m.model"})
    assert other.parser_options == {} and other.bpe_codes is None
    assert other.sentencepiece_model == "/m.model"
    with pytest.raises(TypeError, match="unknown text steps: normalize"):
        recorded.completed({"normalize": True})
