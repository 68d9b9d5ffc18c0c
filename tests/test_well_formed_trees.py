"""Well-formed trees by construction: a model that writes trees (--target-trees) generates
through fairseq's generator with the grammar of a linearized tree masking each step
(tasks/tree_generation.py, data/tree_grammar.py); fairseq-generate logs how many best
hypotheses were malformed; the hub and fairseq-tree-translate give the tree written."""

import math
import re

import pytest
import torch
from fairseq import options, tasks
from fairseq.data import Dictionary
from fairseq.dataclass.utils import convert_namespace_to_omegaconf
from omegaconf import open_dict

from conftest import GENERATE, PLUGIN_DIR, TRAIN, TREES, run_cli, write_lines
from fairseq_tree.data.bpe import learn_codes
from fairseq_tree.data.label_dictionary import label_symbol
from fairseq_tree.data.linearized_tree import add_tree_symbols, delinearize
from fairseq_tree.data.output_tree import OutputTree
from fairseq_tree.tasks.tree_generation import WellFormedTrees, WrittenTrees
from fairseq_tree.trees.normal_form import unescape_token
from test_target_trees import TARGET_TREES, data_bin  # noqa: F401  (the corpus fixture)


@pytest.fixture(scope="module")
def output_tree():
    dictionary = Dictionary()
    for word in ("the", "dog", "barked", "do@@", "g", "("):
        dictionary.add_symbol(word)
    for label in ("S", "NP"):
        dictionary.add_symbol(label_symbol(label))
    dictionary.finalize(padding_factor=1)
    return OutputTree(add_tree_symbols(dictionary)[0])


def ids(output_tree, text: str) -> torch.Tensor:
    dictionary = output_tree.symbols.dictionary
    return torch.tensor([dictionary.index(s) for s in text.split()] + [dictionary.eos()])


@pytest.mark.parametrize("text, well_formed", [
    ("[(] [S] [(] [NP] the dog [)] barked [)]", True),
    ("barked", True),  # a one-word tree: no node in the normal form
    ("[(] [S] the [)] barked [(] [NP] dog [)]", True),  # several roots, a leaf between
    ("[(] [NP] [(] [S] dog [)] [)]", True),  # a unary chain
    ("[(] [S] the dog", False),  # left open
    ("the [)]", False),  # closes what is not open
    ("[(] [NP] [)] dog", False),  # an empty constituent
    ("[(] the [)]", False),  # an opening bracket without its label
    ("the [NP] dog", False),  # a label without its bracket
    ("", False),  # nothing written
])
def test_the_grammar_tells_a_well_formed_tree(output_tree, text, well_formed):
    written = ids(output_tree, text)
    assert output_tree.grammar.is_well_formed(written) == well_formed
    if well_formed:  # the linearized tree's own reader agrees
        delinearize(written[:-1], *output_tree.symbols.bracket_ids)
    assert not output_tree.grammar.is_well_formed(written[:-1])  # no end of sentence


def test_a_written_tree_is_bracketed_with_its_words_joined(output_tree):
    written = ids(output_tree, "[(] [S] [(] [NP] the do@@ g ( [)] barked [)]")
    joined = output_tree.bracketed(written, lambda text: text.replace("@@ ", ""))
    assert joined == "(S (NP the dog -LRB-) barked)"
    assert output_tree.bracketed(ids(output_tree, "the [)] [NP] dog")) == "the) [NP] dog"


def greedy(output_tree, preference, max_len: int) -> str:
    """What fairseq's step writes, greedily, for a model whose log-probabilities rank the
    tokens as ``preference(step)`` (favourite first), with the well-formed-trees hook."""
    dictionary = output_tree.symbols.dictionary
    hook = WellFormedTrees(output_tree.grammar)
    tokens = torch.full((1, max_len + 2), dictionary.pad())
    tokens[0, 0] = dictionary.eos()
    for step in range(max_len + 1):
        lprobs = torch.full((1, len(dictionary)), -20.0)
        for rank, symbol in enumerate(preference(step)):
            lprobs[0, dictionary.index(symbol)] = -0.1 - rank
        lprobs[:, dictionary.pad()] = -math.inf
        if step >= max_len:  # fairseq forces the end of sentence
            lprobs[:, :dictionary.eos()] = lprobs[:, dictionary.eos() + 1:] = -math.inf
        lprobs = hook(tokens, lprobs, 1, 1, step)
        tokens[0, step + 1] = lprobs.argmax(-1)
        if tokens[0, step + 1] == dictionary.eos():
            break
    written = tokens[0, 1:step + 2]
    assert output_tree.grammar.is_well_formed(written)
    return dictionary.string(written[:-1])


def test_a_model_that_would_end_or_close_at_once_writes_a_balanced_tree_within_the_limit(
        output_tree):
    # it would end at once, else close: it opens as deep as it can still close in 10 tokens
    wanted = ["</s>", "[)]", "[(]", "[S]", "dog"]
    assert greedy(output_tree, lambda step: wanted, 10) == "[(] [S] [(] [S] [(] [S] dog [)] [)] [)]"
    assert greedy(output_tree, lambda step: wanted, 3) == "dog"  # no room for a constituent


def test_a_model_that_would_end_with_brackets_open_closes_them_before_the_limit(output_tree):
    # it opens one constituent, then would end or write words: it must close before the limit
    def preference(step):
        return ["[(]", "[NP]"] if step == 0 else ["</s>", "the", "[)]"]

    assert greedy(output_tree, preference, 6) == "[(] [NP] the the the [)]"
    assert greedy(output_tree, preference, 40).endswith("the [)]")


def generation_task(data_bin, **generation):
    """The task and config of an untrained tree2seq writing trees, ``generation`` options set."""
    parser = options.get_training_parser()
    args = options.parse_args_and_arch(parser, [
        str(data_bin), "--user-dir", str(PLUGIN_DIR), "--task", "tree_translation",
        "--arch", "tree2seq_tiny", "--share-all-embeddings", "--target-trees"])
    cfg = convert_namespace_to_omegaconf(args)
    with open_dict(cfg.generation):
        for key, value in {"beam": 5, "max_len_b": 30, **generation}.items():
            setattr(cfg.generation, key, value)
    task = tasks.setup_task(cfg.task)
    task.load_dataset("test")
    return task, cfg


def bracket_loving_model(task, cfg):
    """An untrained tree2seq whose output favours opening brackets most, then closing brackets
    and ending, then labels, over words."""
    torch.manual_seed(0)
    model = task.build_model(cfg.model).eval()
    dictionary = task.target_dictionary
    open_id, close_id = task.output_tree.symbols.bracket_ids
    bias = torch.zeros(len(dictionary))
    bias[list(task.output_tree.stripped_ids)] = 4.0
    bias[[dictionary.eos(), close_id, open_id]] = torch.tensor([6.0, 6.0, 8.0])
    model.decoder.output_projection.register_forward_hook(lambda module, args, out: out + bias)
    return model


@pytest.mark.parametrize("generation", [{}, {"max_len_b": 7}, {"sampling": True, "beam": 3},
                                        {"no_repeat_ngram_size": 3}])
def test_fairseqs_generator_keeps_every_hypothesis_well_formed(data_bin, generation):  # noqa: F811
    task, cfg = generation_task(data_bin, **generation)
    model = bracket_loving_model(task, cfg)
    dataset = task.dataset("test")
    batch = dataset.collater([dataset[i] for i in range(len(dataset))])
    grammar = task.output_tree.grammar
    hypos = task.inference_step(task.build_generator([model], cfg.generation), [model], batch)
    written = [h["tokens"] for sentence in hypos for h in sentence]
    assert len(written) == len(dataset) * cfg.generation.beam
    for tokens in written:  # every beam, not only the best
        assert grammar.is_well_formed(tokens), task.target_dictionary.string(tokens)
        leaves, labels, spans = delinearize(tokens[:-1], *task.output_tree.symbols.bracket_ids)
        assert len(leaves) > 0 and bool((spans[:, 1] > spans[:, 0]).all())
    assert task.written_trees.malformed == 0
    assert any(task.output_tree.symbols.bracket_ids[0] in t.tolist() for t in written)
    # the same model without the grammar writes malformed trees, and the tally says so
    task.cfg.no_well_formed_trees = True
    hypos = task.inference_step(task.build_generator([model], cfg.generation), [model], batch)
    best = [sentence[0]["tokens"] for sentence in hypos]
    malformed = sum(not grammar.is_well_formed(t) for t in best)
    assert malformed > 0 and task.written_trees.malformed == malformed
    assert task.written_trees.written == 2 * len(dataset)


def test_a_prefix_is_kept_and_continued_into_a_well_formed_tree(data_bin):  # noqa: F811
    task, cfg = generation_task(data_bin)
    model = bracket_loving_model(task, cfg)
    dataset = task.dataset("test")
    batch = dataset.collater([dataset[i] for i in range(len(dataset))])
    prefix = batch["target"][:, :3]  # "[(] [S] [(]" and the like, from the references
    hypos = task.inference_step(task.build_generator([model], cfg.generation), [model], batch,
                                prefix_tokens=prefix)
    for sentence, forced in zip(hypos, prefix):
        forced = forced[forced.ne(task.target_dictionary.pad())]  # a short reference's
        for hypo in sentence:
            assert torch.equal(hypo["tokens"][:len(forced)], forced)
            assert task.output_tree.grammar.is_well_formed(hypo["tokens"])


def test_fairseq_generate_logs_the_malformed_trees_and_the_hub_writes_the_tree(
        data_bin, tmp_path):  # noqa: F811
    from fairseq_tree import hub

    save = tmp_path / "checkpoints"
    run_cli("fairseq-train", data_bin, *TRAIN, "--target-trees", "--max-update", "8",
            "--save-dir", save)
    checkpoint = save / "checkpoint_last.pt"
    logged = {}
    for option in ([], ["--no-well-formed-trees"]):
        proc = run_cli("fairseq-generate", data_bin, *GENERATE, "--target-trees", "--path",
                       checkpoint, "--max-len-b", "30", *option)
        out = proc.stdout + proc.stderr
        found = re.findall(r"malformed trees: \d+ of this batch's \d+ best hypotheses, (\d+) of "
                           r"(\d+) so far \(well-formed trees (on|off)\)", out)
        assert found, out[-3000:]
        malformed, written, state = found[-1]
        assert int(written) == len(TARGET_TREES) and state == ("off" if option else "on")
        logged[state] = int(malformed)
        # what evaluate.sh records in test-results.json
        assert WrittenTrees.last_reported(out) == {
            "malformed": int(malformed), "written": len(TARGET_TREES), "well_formed": not option}
        # one score per written token: brackets and labels count, not only the leaves shown
        for index, words in re.findall(r"^H-(\d+)\t\S+\t(.*)$", proc.stdout, flags=re.M):
            scores = re.search(rf"^P-{index}\t(.*)$", proc.stdout, flags=re.M).group(1).split()
            assert len(scores) >= len(words.split()) + 1
    assert logged["on"] == 0
    # --score-reference scores the references as trees, one score per written token
    proc = run_cli("fairseq-generate", data_bin, *GENERATE, "--target-trees", "--path",
                   checkpoint, "--score-reference")
    trees = dict(re.findall(r"^H-(\d+)\t\S+\t(.*)$", proc.stdout, flags=re.M))
    scores = dict(re.findall(r"^P-(\d+)\t(.*)$", proc.stdout, flags=re.M))
    assert len(trees) == len(TARGET_TREES) and trees.keys() == scores.keys()
    for index, tree in trees.items():  # and the end of sentence
        assert len(scores[index].split()) == len(tree.split()) + 1
    assert any("[(]" in tree for tree in trees.values())
    assert "malformed trees" not in proc.stdout + proc.stderr  # no hypotheses of its own
    model = hub.from_pretrained(str(save), "checkpoint_last.pt", data_name_or_path=str(data_bin),
                                detokenize=False)
    leaves = model.translate(TREES, trees=True, max_len_b=30)
    written = model.translate(TREES, trees=True, max_len_b=30, output_trees=True)
    assert model.written_trees.written == 2 * len(TREES) and model.written_trees.malformed == 0
    assert any(tree.startswith("(") for tree in written)
    for tree, words in zip(written, leaves):
        tokens = tree.replace(")", " ) ").split()
        assert tokens.count(")") == sum(t.startswith("(") for t in tokens)  # balanced
        assert [unescape_token(t) for t in tokens if t != ")" and not t.startswith("(")] \
            == words.split()  # the tree's leaves are the translation
    # fairseq-tree-translate --output-trees writes the same trees (BPE codes that keep every
    # word of the sources whole: the data has no subwords)
    source = write_lines(tmp_path / "src.en", TREES)
    learn_codes(str(tmp_path / "codes"), 1000, trees=[str(source)], min_frequency=1)
    proc = run_cli("fairseq-tree-translate", data_bin, "--path", checkpoint, "-s", "en", "-t",
                   "fr", "--bpe-codes", tmp_path / "codes", "--input", source, "--trees",
                   "--output-trees", "--no-detokenize", "--max-len-b", "30")
    assert proc.stdout.splitlines() == written
    assert f"0 of {len(TREES)} written trees malformed" in proc.stderr
