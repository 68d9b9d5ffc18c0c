"""Algorithm 1 on hand-made links, and fairseq-tree-parse --parser induced on a tiny
constituent_transformer trained by fairseq-train (masked_lm task) on real text."""

import gzip
import re
from types import SimpleNamespace

import pytest
import torch
from conftest import PLUGIN_DIR, ROOT, run_cli, write_lines
from fairseq.data import Dictionary

from fairseq_tree.cli import parse as parse_cli
from fairseq_tree.models.masked_lm_hub import MaskedLMHubInterface
from fairseq_tree.parsing import induced
from fairseq_tree.trees import induce, induced_tree, parse_bracketed, parse_tree

SAMPLE = ROOT / "data-prep" / "bible-sample"
# fairseq-train flags of the tiny masked LMs (the tests' size: 4 layers of d 64).
MLM = ["--user-dir", PLUGIN_DIR, "--task", "masked_lm", "--sample-break-mode", "eos",
       "--tokens-per-sample", "64", "--criterion", "masked_lm", "--encoder-layers", "4",
       "--encoder-embed-dim", "64", "--encoder-ffn-embed-dim", "128",
       "--encoder-attention-heads", "4", "--optimizer", "adam", "--adam-betas", "(0.9, 0.98)",
       "--lr", "1e-3", "--batch-size", "16", "--max-update", "20", "--num-workers", "0",
       "--seed", "1", "--log-format", "simple", "--log-interval", "5", "--no-epoch-checkpoints"]


def test_algorithm_1_on_hand_made_links():
    links = [[0.10, 0.50, 0.90, 0.95],   # layer 0 (below the minimum layer 1: never read)
             [0.20, 0.60, 0.85, 0.97],   # layer 1 = m
             [0.30, 0.90, 0.96, 0.99]]   # layer 2, the top: parsing starts here
    # Top: weakest link 0 (0.30) splits w0 | w1..w4; layer 1: weakest 0.60 splits w1 | w2..w4;
    # layer 1 again (m): weakest 0.85 > 0.8, so w2 w3 w4 stay one flat constituent.
    assert induce(links, 5, min_layer=1) == [0, [1, [2, 3, 4]]]
    assert induce(links, 5, min_layer=0) == [0, [1, [2, 3, 4]]]  # layer 0: 0.90 > 0.8 too
    assert induce(links, 5, min_layer=0, threshold=0.92) == [0, [1, [2, [3, 4]]]]
    # All links above the threshold down to m: one flat constituent.
    assert induce([[0.9, 0.95], [0.99, 0.99]], 3, min_layer=0) == [0, 1, 2]
    # A weakest link above the threshold at the top moves down before splitting.
    assert induce([[0.5, 0.1, 0.6], [0.9, 0.85, 0.95]], 4, min_layer=0) == [[0, 1], [2, 3]]
    assert induce([[0.1, 0.1]], 3, min_layer=0) == [0, [1, 2]]  # a tie: the first link
    assert induce([[]], 1, min_layer=0) == 0 and induce([[0.1]], 2, min_layer=0) == [0, 1]
    tree = induced_tree(links, ["a", "(", "c", "d", "e"], min_layer=1)
    assert tree == "(X a (X -LRB- (X c d e)))"
    assert parse_tree(tree).leaves == ["a", "(", "c", "d", "e"]
    with pytest.raises(ValueError, match="minimum layer 3"):
        induce(links, 5, min_layer=3)


# Link probabilities set by hand, a^0 .. a^3 of 4 layers, for each pair of adjacent words (never
# decreasing from layer to layer, as Eq. 8 makes them).
HAND_LINKS = {
    ("the", "cute"): [0.30, 0.60, 0.85, 0.95],
    ("cute", "dog"): [0.90, 0.93, 0.95, 0.97],
    ("dog", "is"): [0.05, 0.10, 0.20, 0.40],
    ("is", "wagging"): [0.20, 0.40, 0.70, 0.90],
    ("wagging", "its"): [0.10, 0.30, 0.50, 0.88],
    ("its", "tail"): [0.85, 0.90, 0.92, 0.96],
    ("a", "bird"): [0.50, 0.70, 0.75, 0.90],
    ("bird", "sings"): [0.20, 0.30, 0.60, 0.70],
    ("the", "<unk>"): [0.40, 0.50, 0.60, 0.70],
    ("<unk>", "sings"): [0.10, 0.20, 0.30, 0.50],
}


class HandLinkModel(torch.nn.Module):
    """Stands in for a constituent_transformer masked LM (4 layers, 9 positions): its encoder's
    extract_features gives, between adjacent tokens, the links of HAND_LINKS for their words;
    links touching <s>, </s> or padding are 0, the weakest, so a parser that read them would
    split there. Every batch of ids it is given is kept in ``batches``."""

    def __init__(self, dictionary):
        super().__init__()
        self.dictionary, self.batches = dictionary, []
        self.weight = torch.nn.Parameter(torch.zeros(1))  # parameters(): the device
        self.encoder = SimpleNamespace(extract_features=self.extract_features,
                                       sentence_encoder=SimpleNamespace(layers=[None] * 4))

    def max_positions(self):
        return 9

    def extract_features(self, tokens):
        self.batches.append(tokens.clone())
        links = torch.zeros(4, tokens.size(0), tokens.size(1) - 1)
        special = {self.dictionary.bos(), self.dictionary.eos(), self.dictionary.pad()}
        for row, ids in enumerate(tokens.tolist()):
            for i in range(len(ids) - 1):
                if ids[i] not in special and ids[i + 1] not in special:
                    pair = (self.dictionary[ids[i]], self.dictionary[ids[i + 1]])
                    links[:, row, i] = torch.tensor(HAND_LINKS[pair])
        return None, {"link_probabilities": links}


def run_induced_parser(tmp_path, monkeypatch, lines, *options):
    """fairseq-tree-parse --parser induced (in this process) on ``lines`` with HandLinkModel in
    place of the checkpoint's model; the trees, the model and the summary line."""
    dictionary = Dictionary()
    for word in "the cute dog is wagging its tail a bird sings".split():
        dictionary.add_symbol(word)
    dictionary.add_symbol("<mask>")
    model = HandLinkModel(dictionary)
    monkeypatch.setattr(induced, "load_model", lambda checkpoint, dictionary_file:
                        MaskedLMHubInterface(model, dictionary))
    text = write_lines(tmp_path / "in.txt", lines)
    out = tmp_path / "out.txt"
    out.unlink(missing_ok=True)  # the parser resumes an existing output
    parse_cli.cli_main(["--parser", "induced", "--lang", "en", "--induced-checkpoint",
                        str(tmp_path / "lm.pt"), "--input", str(text), "--output", str(out),
                        "--batch-size", "4", *options])
    return out.read_text().split("\n")[:-1], model, dictionary


def test_parser_induced_builds_algorithm_1_trees_from_the_models_links(tmp_path, monkeypatch,
                                                                       capsys):
    """--parser induced turns the model's links into the trees Algorithm 1 gives, worked out by
    hand below, for the default minimum layer (2), minimum layer 0 and threshold 0.3."""
    dog, bird = "the cute dog is wagging its tail", "a bird sings"
    lines = [dog, bird, "", "dog", "the zebra sings", dog + " sings"]
    trees, model, dictionary = run_induced_parser(tmp_path, monkeypatch, lines)
    # "the cute dog ...": the top layer (3) splits at its weakest link, dog|is (0.40 <= 0.8);
    # both halves go to layer 2 = m. There "the cute dog" has links 0.85, 0.95: no breakpoint
    # at m, one flat constituent; "is wagging its tail" (0.70, 0.50, 0.92) splits at
    # wagging|its (0.50) into two spans of two words.
    # "a bird sings": layer 3 (0.90, 0.70) splits at bird|sings.
    # "the zebra sings": zebra is <unk>; layer 3 (0.70, 0.50) splits at <unk>|sings.
    # The last sentence is <s> + 8 words + </s>, 10 ids for the model's 9 positions: flat.
    assert trees == ["(X (X the cute dog) (X (X is wagging) (X its tail)))",
                     "(X (X a bird) sings)",
                     "",
                     "(X dog)",
                     "(X (X the zebra) sings)",
                     "(ROOT the cute dog is wagging its tail sings)"]
    assert "1 flat fallbacks (1 longer than the model's 9 positions)" in capsys.readouterr().err
    # The model read <s> words </s> (padded on the right), the over-long sentence never.
    first, second = model.batches
    index = dictionary.index
    expected = [[index(w) for w in line.split()] for line in (dog, bird, "dog")]
    assert first.tolist() == [[dictionary.bos(), *ids, dictionary.eos()] +
                              [dictionary.pad()] * (7 - len(ids)) for ids in expected]
    assert second.tolist() == [[dictionary.bos(), index("the"), dictionary.unk(),
                                index("sings"), dictionary.eos()]]

    # Minimum layer 0: "the cute dog" at layer 2 has no breakpoint but is not at m: down to
    # layer 1 (0.60, 0.93), which splits the|cute. "is wagging its tail" is split as before.
    trees, _, _ = run_induced_parser(tmp_path, monkeypatch, lines[:2], "--induced-min-layer", "0")
    assert trees == ["(X (X the (X cute dog)) (X (X is wagging) (X its tail)))",
                     "(X (X a bird) sings)"]
    # Threshold 0.3: layer 3's weakest link (0.40) is no breakpoint, so the whole sentence goes
    # to layer 2, whose weakest (dog|is, 0.20) splits it; at layer 2 = m the halves (weakest
    # 0.85 and 0.50) stay flat. "a bird sings": 0.70 at layer 3, 0.60 at layer 2: flat.
    trees, _, _ = run_induced_parser(tmp_path, monkeypatch, lines[:2], "--induced-threshold",
                                     "0.3")
    assert trees == ["(X (X the cute dog) (X is wagging its tail))", "(X a bird sings)"]


@pytest.fixture(scope="module")
def masked_lms(tmp_path_factory):
    """Real English verses (the Bible sample), one unit per word (first BPE piece), binarized by
    stock fairseq-preprocess; a tiny constituent_transformer and plain_transformer_mlm trained
    20 updates each."""
    work = tmp_path_factory.mktemp("mlm")
    for split, count in (("train", 600), ("valid", 60)):
        with gzip.open(SAMPLE / "cased" / f"{split}.en.gz", "rt", encoding="utf-8") as handle:
            write_lines(work / f"{split}.txt", [next(handle).rstrip("\n") for _ in range(count)])
    run_cli("fairseq-tree-bpe", "learn", "--symbols", "500", "--text", work / "train.txt",
            "--output", work / "codes")
    for split in ("train", "valid"):
        run_cli("fairseq-tree-bpe", "apply", "--codes", work / "codes", "--text",
                "--first-piece", "--input", work / f"{split}.txt", "--output",
                work / f"{split}.units")
    run_cli("fairseq-preprocess", "--only-source", "--trainpref", work / "train.units",
            "--validpref", work / "valid.units", "--destdir", work / "bin", "--workers", "1")
    logs = {}
    for arch in ("constituent_transformer_tiny", "plain_transformer_mlm_tiny"):
        proc = run_cli("fairseq-train", work / "bin", *MLM, "--arch", arch,
                       "--save-dir", work / arch)
        logs[arch] = proc.stdout + proc.stderr
    return work, logs


@pytest.mark.slow
def test_tiny_masked_lms_train_with_fairseq_train(masked_lms):
    work, logs = masked_lms
    units = (work / "train.units").read_text().splitlines()
    text = (work / "train.txt").read_text().splitlines()
    assert [len(u.split()) for u in units] == [len(t.split()) for t in text]  # one per word
    assert any("@@" in line for line in units)  # some words are their first piece only
    for arch, log in logs.items():
        losses = [float(x) for x in re.findall(r"\| train_inner \| .*? loss=([\d.]+)", log)]
        assert len(losses) == 4 and losses[-1] < losses[0], (arch, losses)
        assert (work / arch / "checkpoint_last.pt").exists()
    counts = [re.search(r"num\. (?:shared )?model params: ([\d,]+)", log).group(1)
              for log in logs.values()]
    params = [int(count.replace(",", "")) for count in counts]
    assert params[0] - params[1] == 4 * (2 * (64 * 64 + 64) + 2 * 64)  # the link projections


@pytest.mark.slow
def test_parser_induced_keeps_lines_and_tokens(masked_lms, tmp_path):
    work, _ = masked_lms
    with gzip.open(SAMPLE / "cased" / "test.en.gz", "rt", encoding="utf-8") as handle:
        lines = [next(handle).rstrip("\n") for _ in range(12)]
    lines[3] = ""
    lines[5] = "Amen"
    lines[7] = "( Selah ) unknownword"
    text = write_lines(tmp_path / "in.txt", lines)
    proc = run_cli("fairseq-tree-parse", "--parser", "induced", "--lang", "en",
                   "--induced-checkpoint", work / "constituent_transformer_tiny" /
                   "checkpoint_last.pt", "--induced-bpe-codes", work / "codes",
                   "--input", text, "--output", tmp_path / "out.txt", "--batch-size", "5")
    trees = (tmp_path / "out.txt").read_text().split("\n")[:-1]
    assert len(trees) == len(lines) and trees[3] == "" and trees[5] == "(X Amen)"
    for tree, line in zip(trees, lines):
        if line:
            assert parse_tree(tree).leaves == line.split()
            labels = re.findall(r"\((\S+)", tree)
            assert set(labels) == {"X"} and parse_bracketed(tree).label == "X"
    assert "0 flat fallbacks" in proc.stderr and "1 empty lines" in proc.stderr
    assert re.search(r"induced: \d+ of \d+ word units", proc.stderr)


def parse_error(capsys, *args) -> str:
    with pytest.raises(SystemExit) as exit_:
        parse_cli.cli_main(["--parser", "induced", "--lang", "en", "--input", "/dev/null",
                            "--output", "-", *map(str, args)])
    message = str(exit_.value)
    assert message.startswith("fairseq-tree-parse: error: ") and "\n" not in message, message
    return message


@pytest.mark.slow
def test_bad_checkpoints_and_dictionaries(masked_lms, tmp_path, capsys):
    work, _ = masked_lms
    constituent = work / "constituent_transformer_tiny" / "checkpoint_last.pt"
    plain = work / "plain_transformer_mlm_tiny" / "checkpoint_last.pt"
    assert "needs --induced-checkpoint" in parse_error(capsys)
    assert re.search(r"--induced-checkpoint \S+plain_transformer_mlm_tiny/checkpoint_last\.pt: "
                     r"its model is 'plain_transformer_mlm_tiny', not a constituent_transformer",
                     parse_error(capsys, "--induced-checkpoint", plain))
    not_a_checkpoint = write_lines(tmp_path / "x.pt", ["hello"])
    assert "x.pt: not a fairseq checkpoint" in parse_error(capsys, "--induced-checkpoint",
                                                           not_a_checkpoint)
    other = write_lines(tmp_path / "dict.txt", ["the 5", "of 3"])
    message = parse_error(capsys, "--induced-checkpoint", constituent, "--induced-dict", other)
    assert re.search(r"--induced-dict \S+dict\.txt: 7 symbols with <mask>, but \S+ was trained "
                     r"with \d+: not its dictionary", message)
    broken = write_lines(tmp_path / "broken.txt", ["the"])
    assert "broken.txt: not a fairseq dictionary" in parse_error(
        capsys, "--induced-checkpoint", constituent, "--induced-dict", broken)
    assert "--induced-min-layer 4: the model has layers 0-3" in parse_error(
        capsys, "--induced-checkpoint", constituent, "--induced-min-layer", "4")
