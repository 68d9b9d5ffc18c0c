"""data-prep/prepare-wsj.sh on a stand-in Penn Treebank in the real .mrg layout, then the WSJ
commands of docs/trees-without-a-parser.md: train the masked LM, induce trees for WSJ-test, score
them."""

import json
import os
import subprocess
import sys

import pytest
from conftest import PLUGIN_DIR, ROOT, run_cli

from fairseq_tree.trees import parse_tree

import standins
import wsj
from fairseq_tree.errors import CliError

pytestmark = pytest.mark.slow  # every test here runs a recipe or trains


def prepare(ptb_dir, data, **env) -> subprocess.CompletedProcess:
    env = {**os.environ, "DATA": str(data), "WORKERS": "1", "WSJ_BPE_MERGES": "40",
           "FAIRSEQ_TREE_VENV": sys.prefix, "PYTHONWARNINGS": "ignore", "PTB_DIR": str(ptb_dir),
           **env}
    return subprocess.run(["bash", str(ROOT / "data-prep" / "prepare-wsj.sh")],
                          capture_output=True, text=True, env=env, timeout=600, check=False)


@pytest.fixture(scope="module")
def wsj_data(tmp_path_factory):
    root = tmp_path_factory.mktemp("ptb")
    ptb = standins.ptb(root / "treebank_3" / "parsed" / "mrg" / "wsj")
    proc = prepare(root / "treebank_3", root / "data")
    assert proc.returncode == 0, proc.stderr[-3000:]
    return root / "data" / "wsj"


def read(path):
    return path.read_text(encoding="utf-8").splitlines()


def test_splits_words_and_gold_trees(wsj_data):
    words = standins.PTB_WORDS
    assert read(wsj_data / "text" / "train.txt") == [words["long"], words["percent"],
                                                     words["quote"], words["money"],
                                                     words["long"]]  # 00, 02, 24
    assert read(wsj_data / "text" / "valid.txt") == [words["money"]]  # 22
    assert read(wsj_data / "text" / "test.txt") == [words["long"], words["percent"],
                                                    words["quote"]]  # 23
    wsj10 = read(wsj_data / "text" / "wsj10.txt")  # every section, at most 10 words
    assert wsj10 == [words[k] for k in ("percent", "quote", "money", "percent", "quote",
                                        "money")]
    for split in ("test", "wsj10"):
        gold = [parse_tree(tree) for tree in read(wsj_data / "gold" / f"{split}.gold")]
        assert [" ".join(t.leaves) for t in gold] == read(wsj_data / "text" / f"{split}.txt")
    money = read(wsj_data / "gold" / "wsj10.gold")[2]
    assert money == ("(S (NP-SBJ (DT the) (NN company)) (VP (VBD said) (SBAR (S (NP-SBJ (PRP it)) "
                     "(VP (VBD earned) (NP (QP (CD N.N) (CD million))))))))")
    units = read(wsj_data / "units" / "train.txt")
    assert [len(u.split()) for u in units] == [len(w.split()) for w in
                                               read(wsj_data / "text" / "train.txt")]
    recipe = json.loads((wsj_data / "recipe.json").read_text())
    assert recipe["sizes"] == {"train": 5, "valid": 1, "test": 3, "wsj10": 6}
    assert recipe["stats"] == {"sentences without words": 1}
    assert (wsj_data / "data-bin" / "dict.txt").exists()
    assert (wsj_data / "data-bin" / "test.bin").exists()


def test_train_induce_and_score(wsj_data, tmp_path):
    """The WSJ commands of docs/trees-without-a-parser.md on the stand-in: a few updates, then
    WSJ-test trees and scores."""
    run_cli("fairseq-train", wsj_data / "data-bin", "--user-dir", PLUGIN_DIR, "--task",
            "masked_lm", "--sample-break-mode", "eos", "--tokens-per-sample", "64",
            "--arch", "constituent_transformer_tiny", "--encoder-embed-dim", "32",
            "--encoder-ffn-embed-dim", "64", "--criterion", "masked_lm", "--optimizer", "adam",
            "--lr", "1e-4", "--batch-size", "4", "--required-batch-size-multiple", "1",
            "--max-update", "3", "--num-workers", "0",
            "--save-dir", tmp_path / "lm", "--no-epoch-checkpoints")
    run_cli("fairseq-tree-parse", "--parser", "induced", "--lang", "en",
            "--induced-checkpoint", tmp_path / "lm" / "checkpoint_last.pt",
            "--induced-bpe-codes", wsj_data / "bpe" / "codes",
            "--input", wsj_data / "text" / "test.txt", "--output", tmp_path / "test.induced")
    proc = run_cli("fairseq-tree-score-parses", "--gold", wsj_data / "gold" / "test.gold",
                   "--pred", tmp_path / "test.induced", "--json", tmp_path / "scores.json")
    scores = json.loads((tmp_path / "scores.json").read_text())
    assert scores["sentences"] == 3 and scores["mean_words"] == (15 + 4 + 5) / 3
    assert "right-branching" in proc.stdout


def test_bad_treebanks(tmp_path):
    proc = prepare(tmp_path / "empty", tmp_path / "data")
    assert proc.returncode != 0 and "no wsj_SSNN.mrg files" in proc.stderr
    bad = tmp_path / "bad" / "23" / "wsj_2301.mrg"
    bad.parent.mkdir(parents=True)
    bad.write_text("( (S (NP (DT the) (NN end))\n  (. .) ))\n\n( (S (NP (PRP it)\n")
    with pytest.raises(CliError, match=r"wsj_2301\.mrg:4: tree never closed"):
        list(wsj.mrg_trees(bad))
    proc = prepare(tmp_path / "bad", tmp_path / "data")
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    assert "wsj_2301.mrg:4: tree never closed" in proc.stderr
    assert "PTB_DIR" in prepare("", tmp_path / "data").stderr
