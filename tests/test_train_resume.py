"""fairseq-tree-train: a run stopped and resumed stops early where the uninterrupted run stops,
with the same checkpoints (fairseq-train's own resume counts --patience from zero), and a run
that already stopped early is not trained again."""

import json
import re
import shutil

import pytest
import torch

from conftest import run_cli
from fairseq_tree.checkpoints import load_checkpoint
from fairseq_tree.training import count_at
from test_tree2seq_training import train_data_parallel
from test_tree_classification import TRAIN, binarize, write_corpus

PATIENCE = ["--criterion", "sentence_prediction", "--best-checkpoint-metric", "accuracy",
            "--maximize-best-checkpoint-metric", "--patience", "2"]


def validations(output) -> list[tuple[int, float]]:
    """(epoch, valid accuracy) of each validation a fairseq-train run printed (its completed
    process or output), in fairseq's log format (which bench/lib/compare.py reads)."""
    if not isinstance(output, str):
        output = output.stdout + output.stderr
    return [(int(epoch), float(accuracy)) for epoch, accuracy in re.findall(
        r"\| valid \| epoch (\d+) \| valid on 'valid' subset .*?\| accuracy ([\d.]+)",
        output)]


def weights(path):
    return load_checkpoint(path)["model"]


def same_weights(first, second) -> bool:
    return first.keys() == second.keys() and all(torch.equal(first[k], second[k]) for k in first)


@pytest.mark.slow
def test_a_resumed_run_stops_where_the_uninterrupted_run_stops(tmp_path):
    data = tmp_path / "bin"
    binarize(write_corpus(tmp_path / "raw", seed=3), data)  # one update an epoch

    # On the CPU: on an H100 the two runs stopped at the same epoch with the same valid accuracy,
    # but their checkpoints differed in the low bits (CUDA kernels whose summation order varies).
    def train(command, save, max_epoch):
        return run_cli(command, data, *TRAIN, *PATIENCE, "--max-epoch", max_epoch,
                       "--save-dir", save, "--cpu")

    whole = validations(train("fairseq-tree-train", tmp_path / "whole", 60))
    stop = whole[-1][0]
    assert stop < 60, whole  # patience, not the epoch limit, ended it
    # Stopped after epoch stop - 1, the count then at 1 of 2, and resumed:
    train("fairseq-tree-train", tmp_path / "resumed", stop - 1)
    shutil.copytree(tmp_path / "resumed", tmp_path / "resumed-by-fairseq")
    resumed = validations(train("fairseq-tree-train", tmp_path / "resumed", 60))
    assert resumed == whole[-1:]
    for name in ("checkpoint_best.pt", "checkpoint_last.pt"):
        assert same_weights(weights(tmp_path / "whole" / name),
                            weights(tmp_path / "resumed" / name)), name
    # fairseq-train itself restarts the count, and trains on past the uninterrupted run's end
    by_fairseq = validations(train("fairseq-train", tmp_path / "resumed-by-fairseq", 60))
    assert by_fairseq[0] == whole[-1] and by_fairseq[-1][0] >= stop + 2, by_fairseq

    # Started again after it stopped early, the run trains nothing
    last = (tmp_path / "whole" / "checkpoint_last.pt").read_bytes()
    again = train("fairseq-tree-train", tmp_path / "whole", 60)
    assert validations(again) == []
    assert "stopped early at update" in again.stdout + again.stderr
    assert (tmp_path / "whole" / "checkpoint_last.pt").read_bytes() == last


@pytest.mark.slow
def test_data_parallel_ranks_resume_the_count_that_rank_0_wrote(tmp_path):
    """Two processes (gloo): rank 0 alone writes the record, every rank restores it, and the
    resumed run stops with the uninterrupted one."""
    data = tmp_path / "bin"
    binarize(write_corpus(tmp_path / "raw", seed=3), data)

    def train(save, max_epoch):
        outputs = train_data_parallel([data, *TRAIN, *PATIENCE, "--cpu", "--max-epoch",
                                       max_epoch, "--save-dir", save], "fairseq-tree-train")
        return validations(outputs[0])

    whole = train(tmp_path / "whole", 60)
    stop = whole[-1][0]
    assert stop < 60, whole
    train(tmp_path / "resumed", stop - 1)
    assert train(tmp_path / "resumed", 60) == whole[-1:]
    record = (tmp_path / "resumed" / "patience.jsonl").read_text().splitlines()
    assert [json.loads(line)["valid"] for line in record] == [v for _, v in whole]


def test_the_count_of_a_checkpoint_ignores_validations_after_it(tmp_path):
    """A process stopped between writing a validation's count and saving its checkpoint: the
    resume takes the count of the checkpoint it starts from."""
    record = tmp_path / "patience.jsonl"
    entries = [{"num_updates": u, "valid": v, "best": b, "num_runs": n}
               for u, v, b, n in [(10, 50.0, 50.0, 0), (20, 40.0, 50.0, 1), (30, 60.0, 60.0, 0)]]
    record.write_text("".join(json.dumps(e) + "\n" for e in entries))
    assert count_at(record, 25) == entries[1]
    assert count_at(record, 30) == entries[2]
    assert count_at(record, 5) is None
    assert count_at(tmp_path / "none.jsonl", 30) is None
