"""tree2seq in real fairseq runs on the parsed Bible sample: training, generation, checkpoint
resume, data-parallel training and precision flags."""

import os
import re
import socket
import subprocess

import pytest
import torch

from conftest import BIN, BIBLE, GENERATE, TRAIN, run_cli
from fairseq_tree.trees.normal_form import parse_tree

def train_losses(output: str) -> dict:
    """{num_updates: loss} of fairseq-train's train_inner lines."""
    return {int(u): float(loss) for loss, u in
            re.findall(r"train_inner \|.* loss=([\d.]+),.* num_updates=(\d+),", output)}


def hypotheses(output: str) -> dict:
    return {int(i): text for i, text in re.findall(r"^H-(\d+)\t\S+\t(.*)$", output, flags=re.M)}


def test_training_loss_falls(trained):
    _, checkpoint, output = trained
    losses = train_losses(output)
    assert sorted(losses) == list(range(10, 151, 10))
    first, last = losses[10], losses[150]
    assert last < first - 2.0, losses
    assert checkpoint.exists()


def test_generation_does_not_depend_on_batching(trained):
    """Every test sentence is translated, and beam search gives the same hypotheses one sentence
    at a time as in padded batches; alignments index source leaves."""
    data, checkpoint, _ = trained
    one = run_cli("fairseq-generate", data, *GENERATE, "--path", checkpoint, "--batch-size", "1")
    many = run_cli("fairseq-generate", data, *GENERATE, "--path", checkpoint,
                   "--max-tokens", "4000", "--print-alignment")
    n_test = len((BIBLE / "test.en").read_text(encoding="utf-8").splitlines())
    assert sorted(hypotheses(one.stdout)) == list(range(n_test))
    assert hypotheses(one.stdout) == hypotheses(many.stdout)
    assert "BLEU4" in one.stdout
    pieces = [len(parse_tree(line).leaves)
              for line in (data.parent / "bpe" / "test.en").read_text(encoding="utf-8").splitlines()]
    alignments = re.findall(r"^A-(\d+)\t(.*)$", many.stdout, flags=re.M)
    assert len(alignments) == n_test
    for i, alignment in alignments:
        source_positions = [int(pair.split("-")[0]) for pair in alignment.split()]
        assert max(source_positions) < pieces[int(i)]  # a source leaf (BPE piece), not a node


def test_resumed_training_continues_exactly(example, tmp_path):
    """Stopping at update 10 and resuming from checkpoint_last.pt gives the losses of an
    uninterrupted run (fairseq seeds every update; the data iterator resumes mid-epoch)."""
    data = example[0] / "data-bin"
    common = [data, *TRAIN, "--log-interval", "1", "--save-interval-updates", "10"]
    straight = run_cli("fairseq-train", *common, "--max-update", "20", "--save-dir", tmp_path / "a")
    run_cli("fairseq-train", *common, "--max-update", "10", "--save-dir", tmp_path / "b")
    resumed = run_cli("fairseq-train", *common, "--max-update", "20", "--save-dir", tmp_path / "b")
    assert re.search(r"Loaded checkpoint .*checkpoint_last.pt \(epoch \d+ @ 10 updates\)",
                     resumed.stdout + resumed.stderr)
    before = train_losses(straight.stdout + straight.stderr)
    after = train_losses(resumed.stdout + resumed.stderr)
    assert sorted(after) == list(range(11, 21))
    assert all(after[u] == before[u] for u in after), (before, after)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def train_data_parallel(options: list, command: str = "fairseq-train") -> list:
    """fairseq-train (or ``command``) in 2 processes on the CPU (gloo, legacy_ddp); their
    outputs."""
    init = f"tcp://127.0.0.1:{free_port()}"
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONWARNINGS="ignore")
    workers = [
        subprocess.Popen(
            [str(BIN / command), *map(str, options), "--distributed-world-size", "2",
             "--distributed-rank", str(rank), "--distributed-init-method", init,
             "--distributed-no-spawn", "--ddp-backend", "legacy_ddp",
             "--distributed-backend", "gloo"],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
        )
        for rank in (0, 1)
    ]
    outputs = [worker.communicate(timeout=600)[0] for worker in workers]
    assert [w.returncode for w in workers] == [0, 0], outputs[0][-3000:] + outputs[1][-3000:]
    return outputs


def test_two_process_data_parallel_resumes_weights_only(example, tmp_path):
    """Resuming data-parallel training: rank 0 reads the checkpoint and broadcasts it to rank
    1 through torch.save / torch.load, weights-only on both sides (the classes the plugin
    allows); the resumed losses are those of the straight run."""
    data = example[0] / "data-bin"
    common = [data, *TRAIN, "--log-interval", "1", "--dropout", "0", "--cpu",
              "--save-dir", tmp_path / "resumed"]
    straight = train_data_parallel([*common[:-1], tmp_path / "straight", "--max-update", "6"])
    train_data_parallel([*common, "--max-update", "3"])
    resumed = train_data_parallel([*common, "--max-update", "6"])
    assert re.search(r"Loaded checkpoint .*checkpoint_last.pt \(epoch \d+ @ 3 updates\)",
                     resumed[0])
    before, after = train_losses(straight[0]), train_losses(resumed[0])
    assert sorted(after) == [4, 5, 6]
    assert all(after[u] == pytest.approx(before[u], abs=1e-3) for u in after), (before, after)


def test_two_process_data_parallel_matches_update_freq(example, tmp_path):
    """2 processes (gloo, legacy_ddp) see the batches that one process with --update-freq 2
    accumulates; without dropout their losses agree."""
    data = example[0] / "data-bin"
    common = [data, *TRAIN, "--log-interval", "1", "--max-update", "6", "--dropout", "0",
              "--no-save", "--cpu"]
    single = run_cli("fairseq-train", *common, "--update-freq", "2")
    outputs = train_data_parallel(common)
    expected = train_losses(single.stdout + single.stderr)
    parallel = train_losses(outputs[0])
    assert sorted(parallel) == sorted(expected) == list(range(1, 7))
    for update, loss in expected.items():
        assert parallel[update] == pytest.approx(loss, abs=2e-3)


def test_memory_efficient_fp16_trains_in_half_precision(example, tmp_path):
    """--memory-efficient-fp16 runs the model in float16 (fairseq's trainer calls model.half(),
    on CPU too) under fairseq's loss-scaling optimizer."""
    data = example[0] / "data-bin"
    proc = run_cli("fairseq-train", data, *TRAIN, "--memory-efficient-fp16", "--max-update", "8",
                   "--log-interval", "1", "--save-dir", tmp_path)
    output = proc.stdout + proc.stderr
    losses = train_losses(output)
    assert sorted(losses) == list(range(1, 9))
    assert all(loss == loss and loss < 20 for loss in losses.values())  # finite, not diverged
    assert len(re.findall(r"train_inner \|.* loss_scale=\d+", output)) == 8


@pytest.mark.skipif(torch.cuda.is_available(), reason="what --amp does without CUDA")
def test_amp_trains_on_cpu_in_float32(example, tmp_path):
    """--amp trains on CPU, in float32: fairseq's autocast and grad scaler are CUDA's
    (torch.cuda.amp), which torch disables without CUDA; the losses and gradient norms are
    those of the same run without --amp, the loss scale stays 1, the checkpoint is written."""
    data = example[0] / "data-bin"
    common = [data, *TRAIN, "--max-update", "6", "--log-interval", "1"]
    amp = run_cli("fairseq-train", *common, "--amp", "--save-dir", tmp_path / "amp")
    plain = run_cli("fairseq-train", *common, "--save-dir", tmp_path / "plain")
    output = amp.stdout + amp.stderr
    losses = train_losses(output)
    assert sorted(losses) == list(range(1, 7))
    assert all(loss == loss and loss < 20 for loss in losses.values())  # finite, not diverged
    assert len(re.findall(r"train_inner \|.* loss_scale=1,", output)) == 6
    steps = r"train_inner \|.* loss=([\d.]+),.* gnorm=([\d.]+),"
    assert re.findall(steps, output) == re.findall(steps, plain.stdout + plain.stderr)
    assert (tmp_path / "amp" / "checkpoint_last.pt").exists()


@pytest.mark.skipif(not torch.cuda.is_available(), reason="fairseq's --fp16 optimizer needs CUDA")
def test_fp16_trains_on_gpu(example, tmp_path):
    data = example[0] / "data-bin"
    proc = run_cli("fairseq-train", data, *TRAIN, "--fp16", "--max-update", "8",
                   "--log-interval", "1", "--save-dir", tmp_path)
    assert len(train_losses(proc.stdout + proc.stderr)) == 8
