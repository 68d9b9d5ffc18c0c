"""Real fairseq runs on the real parsed sample: the example of docs/translation.md ("Using the
plugin"), then validate / generate / interactive on what it trained, and the plugin loaded from an
installed copy."""

import re
import subprocess
import sys

import pytest
from fairseq.data import Dictionary

from conftest import BIBLE, PLUGIN_DIR, ROOT, run_cli
from fairseq_tree.trees.normal_form import parse_tree

COMMON = ["--user-dir", PLUGIN_DIR, "--task", "tree_translation", "--num-workers", "0"]


def test_sample_provenance_and_alignment():
    for split in ("train", "valid", "test"):
        trees = (BIBLE / f"{split}.en").read_text(encoding="utf-8").splitlines()
        targets = (BIBLE / f"{split}.fr").read_text(encoding="utf-8").splitlines()
        assert len(trees) == len(targets) > 0
        for line in trees:
            assert parse_tree(line).nodes, line
    assert "link-grammar" in (BIBLE / "README.md").read_text(encoding="utf-8")


@pytest.mark.slow
def test_example_trains_and_translates(example):
    work, proc = example
    assert (work / "checkpoints" / "checkpoint_last.pt").exists()
    assert re.search(r"num_updates 30\b", proc.stdout + proc.stderr)
    generated = (work / "generate-test.txt").read_text(encoding="utf-8")
    n_test = len((BIBLE / "test.en").read_text(encoding="utf-8").splitlines())
    hypotheses = re.findall(r"^H-(\d+)\t", generated, flags=re.M)
    assert sorted(map(int, hypotheses)) == list(range(n_test))
    assert "BLEU4" in generated


@pytest.mark.slow
def test_validate_on_tree_data(example):
    work, _ = example
    proc = run_cli(
        "fairseq-validate", work / "data-bin", *COMMON,
        "--path", work / "checkpoints" / "checkpoint_last.pt", "--valid-subset", "valid",
        "--max-tokens", "4000",
    )
    assert re.search(r"valid on 'valid' subset \| loss [\d.]+", proc.stdout + proc.stderr)


@pytest.mark.slow
def test_interactive_reads_trees_and_applies_bpe(example):
    work, _ = example
    raw = (BIBLE / "test.en").read_text(encoding="utf-8").splitlines()[:3]
    bpe = (work / "bpe" / "test.en").read_text(encoding="utf-8").splitlines()[:3]
    proc = run_cli(
        "fairseq-interactive", work / "data-bin", *COMMON,
        "--path", work / "checkpoints" / "checkpoint_last.pt", "--source-lang", "en",
        "--target-lang", "fr", "--bpe", "subword_nmt", "--bpe-codes", work / "bpe" / "codes",
        "--beam", "2", stdin="\n".join(raw) + "\n",
    )
    sources = re.findall(r"^S-(\d+)\t(.*)$", proc.stdout, flags=re.M)
    assert [int(i) for i, _ in sources] == [0, 1, 2]
    # Each leaf went through the BPE codes exactly as fairseq-tree-bpe applied them.
    d = Dictionary.load(str(work / "data-bin" / "dict.en.txt"))
    expected = [" ".join(d[d.index(t)] for t in parse_tree(line).leaves) for line in bpe]
    assert [s for _, s in sources] == expected
    assert len(re.findall(r"^H-\d+\t", proc.stdout, flags=re.M)) == 3


@pytest.mark.slow
def test_plugin_works_from_an_installed_copy(example, tmp_path):
    """A non-editable install of the package is a working --user-dir."""
    target = tmp_path / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "--no-build-isolation", "-q",
         "--target", str(target), str(ROOT)],
        check=True, capture_output=True,
    )
    work, _ = example
    proc = run_cli(
        "fairseq-validate", work / "data-bin", "--user-dir", target / "fairseq_tree",
        "--task", "tree_translation", "--num-workers", "0",
        "--path", work / "checkpoints" / "checkpoint_last.pt", "--valid-subset", "test",
        "--max-tokens", "4000",
    )
    assert "valid on 'test' subset" in proc.stdout + proc.stderr
