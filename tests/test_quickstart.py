"""The README's main job, scripts/quickstart.sh, run as a user runs it but with a 2-update budget
and 3-token outputs: the shipped Bible sample becomes a data-bin, both models train and translate
all 500 test verses, and both sacreBLEU scores are printed and saved."""

import gzip
import json
import os
import subprocess
import sys

import pytest

from conftest import ROOT

from fairseq_tree.trees import parse_tree

import corpora

SAMPLE = ROOT / "data-prep" / "bible-sample"


def read_sample(name: str) -> list[str]:
    return gzip.decompress((SAMPLE / f"{name}.gz").read_bytes()).decode("utf-8").splitlines()


def test_shipped_sample_is_aligned_and_parsed():
    for split, size in (("train", 12000), ("valid", 300), ("test", 500)):
        tokens, trees = read_sample(f"cased/{split}.en"), read_sample(f"parsed/{split}.en")
        assert len(tokens) == len(trees) == len(read_sample(f"cased/{split}.fr")) == size
        assert all(parse_tree(tree).leaves == line.split() for tree, line in zip(trees, tokens))
        assert max(len(line.split()) for line in tokens) <= 30
    flat = {split: sum(tree.startswith("(ROOT ") for tree in read_sample(f"parsed/{split}.en"))
            for split in ("train", "valid", "test")}
    assert flat == {"train": 1116, "valid": 24, "test": 35}  # as the sample's README reports
    assert len(read_sample("ref/test.fr")) == 500
    # No placeholder or empty verse on either side (issue 27): the recipe leaves them out.
    for name in ("cased/train", "cased/valid", "cased/test", "ref/test"):
        for lang in ("en", "fr"):
            assert not any(map(corpora.bible_non_verse, read_sample(f"{name}.{lang}"))), name


@pytest.mark.slow
def test_quickstart_trains_both_models_and_prints_both_scores(tmp_path):
    work = tmp_path / "quickstart"
    proc = subprocess.run(
        ["bash", str(ROOT / "scripts" / "quickstart.sh"), str(work),
         "--generate-arg=--max-len-b=3", "--", "--max-update", "2"],
        capture_output=True, text=True, timeout=900,
        env=dict(os.environ, FAIRSEQ_TREE_VENV=sys.prefix, OMP_NUM_THREADS="1"))
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    report = json.loads((work / "results.json").read_text())
    rows = {row["model"]: row for row in report["results"]}
    assert list(rows) == ["tree2seq", "transformer"]
    for model, row in rows.items():
        assert (row["updates"], row["test_sentences"]) == (2, 500)
        run = work / "checkpoints" / "bible-en-fr-sample" / model
        translations = (run / "translations.fr").read_text(encoding="utf-8").splitlines()
        assert len(translations) == 500
        table_row = next(line for line in proc.stdout.splitlines()
                         if line.startswith(f"| {model} |"))
        assert f"{row['sacrebleu']:.2f}" in [cell.strip() for cell in table_row.split("|")]
    # Same size: the tree model adds only its u and hierarchical embeddings (Section 4).
    added = rows["tree2seq"]["parameters"] - rows["transformer"]["parameters"]
    assert 0 < added < 0.01 * rows["transformer"]["parameters"]
    recipe = json.loads((work / "data" / "bible-en-fr-sample" / "recipe.json").read_text())
    assert recipe["sizes"] == {"train": 12000, "valid": 300, "test": 500}
    assert recipe["stats"]["train verses"]["kept"] == 12000
