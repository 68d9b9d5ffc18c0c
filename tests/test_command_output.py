"""The plugin's commands show fairseq's progress, not what fairseq's libraries print as noise
(fairseq_tree/library_noise.py): real runs of fairseq-tree-preprocess, fairseq-tree-train and
fairseq-generate as the configs runner runs it, each read for the lines that fairseq's own
fairseq-train and fairseq-generate print on the same data."""

import os
import re
import subprocess
import sys

import pytest

from conftest import BIN, GENERATE, LIBRARY_NOISE, TRAIN, make_tree_corpus


def run(command: list) -> str:
    """``command``'s standard output and error, as a user's shell shows them (no warnings
    switched off, unlike conftest's run_cli)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONWARNINGS"}
    proc = subprocess.run([str(part) for part in command], capture_output=True, text=True,
                          env=dict(env, OMP_NUM_THREADS="1"), timeout=600)
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output[-4000:]
    return output


@pytest.fixture(scope="module")
def trained_tiny(tmp_path_factory):
    """The hand-made corpus binarized and a tiny tree2seq trained 4 updates on it, through the
    plugin's commands, with their output."""
    raw = make_tree_corpus(tmp_path_factory.mktemp("raw"))
    data = tmp_path_factory.mktemp("bin")
    save = tmp_path_factory.mktemp("tree2seq")
    preprocessed = run([BIN / "fairseq-tree-preprocess", "-s", "en", "-t", "fr",
                        "--joined-dictionary", "--destdir", data,
                        *(item for split in ("train", "valid", "test")
                          for item in (f"--{split}pref", raw / split))])
    trained = run([BIN / "fairseq-tree-train", data, *TRAIN, "--max-update", "4",
                   "--log-interval", "1", "--save-dir", save])
    return data, save / "checkpoint_last.pt", preprocessed, trained


def test_preprocess_and_train_show_progress_without_library_noise(trained_tiny, tmp_path):
    data, _, preprocessed, trained = trained_tiny
    assert "Wrote preprocessed data to" in preprocessed
    assert not LIBRARY_NOISE.findall(preprocessed), preprocessed
    assert re.search(r"train_inner \| epoch 001: +1 / \d+ loss=", trained)  # fairseq's progress
    assert not LIBRARY_NOISE.findall(trained), trained
    # fairseq's own fairseq-train, the same run: the note, hydra's and torch's warnings
    theirs = run([BIN / "fairseq-train", data, *TRAIN, "--max-update", "4", "--log-interval", "1",
                  "--save-dir", tmp_path])
    noise = "".join(LIBRARY_NOISE.findall(theirs))
    assert "tensorboardX" in noise and "UserWarning: " in noise and "FutureWarning: " in noise


def test_generate_as_the_runner_runs_it_shows_progress_without_library_noise(trained_tiny):
    data, checkpoint, _, _ = trained_tiny
    args = [data, *GENERATE, "--path", checkpoint, "--batch-size", "2", "--log-interval", "1"]
    ours = run([sys.executable, "-m", "fairseq_tree.cli.fairseq_command", "generate", *args])
    theirs = run([BIN / "fairseq-generate", *args])
    hypotheses = re.compile(r"^H-\d+\t.*$", re.M)
    assert hypotheses.findall(ours) == hypotheses.findall(theirs) != []
    assert re.search(r"progress_bar \| : +2 / 3 wps=", ours)  # a line a batch
    assert not LIBRARY_NOISE.findall(ours), ours
    # what is left out is there without the plugin first: the note and hydra's warnings
    assert "Please install tensorboardX" in theirs and "UserWarning: " in theirs


def test_fairseq_command_names_its_commands():
    proc = subprocess.run([sys.executable, "-m", "fairseq_tree.cli.fairseq_command", "train"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1
    assert proc.stderr.strip().splitlines()[-1] == (
        "fairseq_command: error: the first argument names the command, one of generate, validate")
