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

def train_steps(output: str) -> dict:
    """{num_updates: (loss, loss_scale or None)} of fairseq-train's train_inner lines."""
    steps = {}
    for line in re.findall(r"train_inner \|.*", output):
        update = int(re.search(r"num_updates=(\d+)", line).group(1))
        scale = re.search(r"loss_scale=([\d.]+)", line)
        steps[update] = (float(re.search(r" loss=([\d.]+)", line).group(1)),
                         scale and float(scale.group(1)))
    return steps


def train_losses(output: str) -> dict:
    """{num_updates: loss} of fairseq-train's train_inner lines."""
    return {update: loss for update, (loss, _) in train_steps(output).items()}


def hypotheses(output: str) -> dict:
    return {int(i): text for i, text in re.findall(r"^H-(\d+)\t\S+\t(.*)$", output, flags=re.M)}


@pytest.mark.slow
def test_training_loss_falls(trained):
    _, checkpoint, output = trained
    losses = train_losses(output)
    assert sorted(losses) == list(range(10, 151, 10))
    first, last = losses[10], losses[150]
    assert last < first - 2.0, losses
    assert checkpoint.exists()


@pytest.mark.slow
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


NEEDS_CUDA = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
# On the GPU, summation order inside some kernels (atomics) may differ between two runs, so the
# losses of two runs agree to fairseq's printed precision there and exactly on the CPU.
TOLERANCE = {"cpu": 0, "cuda": 2e-3}


@pytest.mark.slow
@pytest.mark.parametrize("device,precision", [
    ("cpu", []),
    pytest.param("cuda", [], marks=NEEDS_CUDA),
    pytest.param("cuda", ["--fp16"], marks=NEEDS_CUDA),
], ids=["cpu", "cuda", "cuda-fp16"])
def test_resumed_training_continues_exactly(example, tmp_path, device, precision):
    """Stopping at update 10 and resuming from checkpoint_last.pt gives the losses of an
    uninterrupted run (fairseq seeds every update; the data iterator resumes mid-epoch); under
    --fp16 the loss scale resumes too."""
    data = example[0] / "data-bin"
    common = [data, *TRAIN, "--log-interval", "1", "--save-interval-updates", "10", *precision,
              *(["--cpu"] if device == "cpu" else [])]
    straight = run_cli("fairseq-train", *common, "--max-update", "20", "--save-dir", tmp_path / "a")
    run_cli("fairseq-train", *common, "--max-update", "10", "--save-dir", tmp_path / "b")
    resumed = run_cli("fairseq-train", *common, "--max-update", "20", "--save-dir", tmp_path / "b")
    assert re.search(r"Loaded checkpoint .*checkpoint_last.pt \(epoch \d+ @ 10 updates\)",
                     resumed.stdout + resumed.stderr)
    before = train_steps(straight.stdout + straight.stderr)
    after = train_steps(resumed.stdout + resumed.stderr)
    assert sorted(after) == list(range(11, 21))
    for update, (loss, scale) in after.items():
        assert loss == pytest.approx(before[update][0], abs=TOLERANCE[device]), (before, after)
        assert scale == before[update][1]
        assert (scale is not None) == bool(precision)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def train_data_parallel(options: list, command: str = "fairseq-train") -> list:
    """fairseq-train (or ``command``) in 2 processes (gloo, legacy_ddp), each started by hand
    with its rank, on the CPU or sharing the one GPU; their outputs."""
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


def torchrun_train(options: list, processes: int, command: str = "fairseq-train") -> str:
    """``command`` under torchrun, ``processes`` workers on one node (fairseq reads torchrun's
    RANK and WORLD_SIZE and puts rank r on GPU r modulo the GPUs there); the output, in which
    only rank 0 logs at INFO."""
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONWARNINGS="ignore")
    proc = subprocess.run(
        [str(BIN / "torchrun"), "--standalone", "--nproc_per_node", str(processes),
         str(BIN / command), *map(str, options), "--distributed-world-size", str(processes)],
        capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc.stdout + proc.stderr


@pytest.mark.slow
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


@pytest.mark.slow
@pytest.mark.parametrize("device,launcher,command", [
    ("cpu", "by hand", "fairseq-train"),
    ("cpu", "torchrun", "fairseq-tree-train"),
    pytest.param("cuda", "by hand", "fairseq-train", marks=NEEDS_CUDA),
    pytest.param("cuda", "torchrun", "fairseq-train", marks=NEEDS_CUDA),
])
def test_two_process_data_parallel_matches_update_freq(example, device, launcher, command):
    """2 processes (gloo, legacy_ddp; on the GPU both share it) see the batches that one process
    with --update-freq 2 accumulates; without dropout their losses agree. Under torchrun on the
    CPU, fairseq-tree-train (fairseq-train divides by the GPU count there), gloo chosen for it."""
    data = example[0] / "data-bin"
    common = [data, *TRAIN, "--log-interval", "1", "--max-update", "6", "--dropout", "0",
              "--no-save", *(["--cpu"] if device == "cpu" else [])]
    single = run_cli("fairseq-train", *common, "--update-freq", "2")
    if launcher == "torchrun":
        backend = [] if device == "cpu" else ["--distributed-backend", "gloo"]
        output = torchrun_train([*common, "--ddp-backend", "legacy_ddp", *backend], 2, command)
        assert output.count("distributed init (rank ") == 2, output[-3000:]
    else:
        output = train_data_parallel(common, command)[0]
    expected = train_losses(single.stdout + single.stderr)
    parallel = train_losses(output)
    assert sorted(parallel) == sorted(expected) == list(range(1, 7))
    for update, loss in expected.items():
        assert parallel[update] == pytest.approx(loss, abs=2e-3)


@NEEDS_CUDA
def test_torchrun_one_process_on_the_gpu_is_plain_training(example, tmp_path):
    """torchrun --nproc_per_node 1 trains as fairseq-train alone does (one process, the GPU)."""
    data = example[0] / "data-bin"
    common = [data, *TRAIN, "--log-interval", "1", "--max-update", "6", "--no-save"]
    plain = train_losses(run_cli("fairseq-train", *common).stdout)
    under_torchrun = train_losses(torchrun_train(common, 1))
    assert sorted(under_torchrun) == sorted(plain) == list(range(1, 7))
    for update, loss in plain.items():
        assert under_torchrun[update] == pytest.approx(loss, abs=TOLERANCE["cuda"])


@pytest.mark.slow
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


@pytest.mark.slow
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


@NEEDS_CUDA
@pytest.mark.parametrize("precision", ["--fp16", "--memory-efficient-fp16", "--amp"])
def test_half_precision_trains_on_gpu(example, tmp_path, precision):
    """fairseq's half-precision modes on the GPU: 8 finite updates whose losses stay near
    float32's, the loss scale logged, and a checkpoint that loads for generation. (fairseq
    0.12's --bf16 implies --tpu, so fairseq-train cannot train in bfloat16 on a GPU;
    test_tree_model runs the model in bfloat16.)"""
    data = example[0] / "data-bin"
    common = [data, *TRAIN, "--max-update", "8", "--log-interval", "1", "--dropout", "0"]
    half = train_steps(run_cli("fairseq-train", *common, precision,
                               "--save-dir", tmp_path / "half").stdout)
    full = train_steps(run_cli("fairseq-train", *common, "--save-dir", tmp_path / "full").stdout)
    assert sorted(half) == list(range(1, 9))
    for update, (loss, scale) in half.items():
        assert loss == loss and loss == pytest.approx(full[update][0], abs=0.1), (half, full)
        assert scale is not None
    proc = run_cli("fairseq-generate", data, *GENERATE, "--path",
                   tmp_path / "half" / "checkpoint_last.pt", "--batch-size", "16", precision)
    assert "BLEU4" in proc.stdout
