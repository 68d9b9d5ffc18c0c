"""Shared helpers: running the console scripts of this environment as real subprocesses."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PLUGIN_DIR = ROOT / "fairseq_tree"
BIN = Path(sys.executable).parent
BIBLE = ROOT / "tests" / "data" / "bible"


def run_cli(name, *args, check=True, stdin=None, timeout=600):
    """Run console script ``name`` (fairseq-train, fairseq-tree-preprocess, ...) and return the
    completed process; with ``check`` a non-zero exit fails the test showing its output."""
    env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", PYTHONWARNINGS="ignore")
    proc = subprocess.run(
        [str(BIN / name), *map(str, args)], input=stdin, capture_output=True, text=True,
        env=env, timeout=timeout,
    )
    if check and proc.returncode != 0:
        pytest.fail(f"{name} exited {proc.returncode}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}")
    return proc


def write_lines(path: Path, lines):
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


# Hand-made trees of every shape the reader accepts, with aligned targets.
TREES = [
    "(ROOT (S (NP (DT the) (NN dog)) (VP (VBD barked))))",
    "(S (NP the cat.n) (VP sat.v (PP on (NP the {mat}))))",
    "( (S (NP (PRP I)) (VP (VBP see) (NP (DT a) (JJ small) (NN bird))) (. .)))",
    "(ROOT (S (NP (NNP Anna)) (VP (VBZ sleeps)))) (ROOT (S (NP (PRP she)) (VP (VBZ dreams))))",
    "(ROOT (NP (NN ünïcode) (-LRB- -LRB-) (NN wörd) (-RRB- -RRB-)))",
    "(ROOT (FRAG (INTJ (UH hello))))",
]
TARGETS = [
    "le chien a aboyé",
    "le chat était assis sur le tapis",
    "je vois un petit oiseau .",
    "Anna dort . elle rêve",
    "ünïcode ( mot )",
    "bonjour",
]


def make_tree_corpus(raw: Path) -> Path:
    """Write train (3 copies), valid and test of the hand-made corpus (en -> fr) into ``raw``."""
    raw.mkdir(parents=True, exist_ok=True)
    for split, reps in (("train", 3), ("valid", 1), ("test", 1)):
        write_lines(raw / f"{split}.en", TREES * reps)
        write_lines(raw / f"{split}.fr", TARGETS * reps)
    return raw


@pytest.fixture(scope="session")
def example(tmp_path_factory):
    """scripts/example.sh, the README's main job, run as a user runs it (its work folder holds
    the BPE'd and binarized Bible sample that the training tests reuse)."""
    work = tmp_path_factory.mktemp("example")
    proc = subprocess.run(
        ["bash", str(ROOT / "scripts" / "example.sh"), str(work)],
        capture_output=True, text=True,
        env=dict(os.environ, MAX_UPDATE="30", FAIRSEQ_TREE_VENV=sys.prefix),
        timeout=900,
    )
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    return work, proc


@pytest.fixture
def tree_corpus(tmp_path):
    """A fresh copy of the hand-made corpus that a test may damage."""
    return make_tree_corpus(tmp_path / "raw")
