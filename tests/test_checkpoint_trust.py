"""Checkpoints load with torch's weights-only unpickler: importing the plugin turns nothing off,
a checkpoint whose pickle would run code is refused in one line by every command that loads one
(and its code never runs), and every checkpoint our commands write still loads, also as
fairseq's data-parallel training broadcasts it from rank 0."""

import io
import os
import subprocess
import sys

import pytest
import torch
from fairseq import checkpoint_utils
from fairseq.distributed.utils import _put_tensors_in_obj, _split_tensors_from_obj

from conftest import BIN, PLUGIN_DIR, TRAIN, run_cli, write_lines
from fairseq_tree.checkpoints import FAIRSEQ_CHECKPOINT_CLASSES, CheckpointRefused
from fairseq_tree.models.tree2seq import Tree2SeqModel
from tagged_corpus import word_level
from test_induced_trees import MLM
from test_recursive_training import COMMON, MULTI_BRANCH, TREE_ATTENTION

SWITCH = "TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD"


@pytest.mark.slow
def test_importing_the_plugin_turns_no_safety_off():
    env = {k: v for k, v in os.environ.items() if k != SWITCH}
    proc = subprocess.run([sys.executable, "-c", "import fairseq_tree, os; "
                           f"print(os.environ.get('{SWITCH}'))"],
                          capture_output=True, text=True, env=env, check=True)
    assert proc.stdout.strip().splitlines()[-1] == "None"


class RunsCode:
    """What a hostile checkpoint holds: unpickling it calls ``os.system``."""

    def __init__(self, command: str):
        self.command = command

    def __reduce__(self):
        return os.system, (self.command,)


@pytest.fixture(scope="module")
def crafted(trained, tmp_path_factory):
    """A real tree2seq checkpoint with one more entry, whose unpickling would create a marker
    file. Returns (data, checkpoint, marker)."""
    data, checkpoint, _ = trained
    work = tmp_path_factory.mktemp("crafted")
    marker = work / "code-ran"
    state = torch.load(checkpoint, weights_only=True)
    state["extra_state"]["note"] = RunsCode(f"touch {marker}")
    path = work / "checkpoint_last.pt"
    torch.save(state, path)
    return data, path, marker


def refusal(path) -> str:
    return (f"{path}: refused: the checkpoint holds posix.system, which a fairseq checkpoint "
            "does not; loading it could run code (if you trust the file, see "
            "fairseq_tree.checkpoints)")


def assert_refused_in_one_line(proc, line: str, marker):
    assert proc.returncode != 0
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert proc.stderr.strip().splitlines()[-1] == line
    assert not marker.exists()


@pytest.mark.slow
def test_fairseq_generate_and_validate_refuse_it(crafted):
    data, path, marker = crafted
    for command in ("fairseq-generate", "fairseq-validate"):
        proc = run_cli(command, data, "--user-dir", PLUGIN_DIR, "--task", "tree_translation",
                       "--path", path, "--gen-subset", "test", "--valid-subset", "test",
                       "--max-tokens", "1024", check=False)
        assert_refused_in_one_line(proc, refusal(path), marker)


@pytest.mark.slow
def test_fairseq_train_refuses_it_as_a_restore_file(crafted, tmp_path):
    data, path, marker = crafted
    proc = run_cli("fairseq-train", data, *TRAIN, "--max-update", "1", "--save-dir", tmp_path,
                   "--restore-file", path, check=False)
    assert_refused_in_one_line(proc, refusal(path), marker)


@pytest.mark.slow
def test_fairseq_tree_translate_refuses_it(crafted, tmp_path):
    data, path, marker = crafted
    source = write_lines(tmp_path / "in.en", ["(ROOT (S (NP God) (VP saw)))"])
    proc = run_cli("fairseq-tree-translate", data, "--path", path, "-s", "en", "-t", "fr",
                   "--bpe-codes", data.parent / "bpe" / "codes", "--input", source, "--trees",
                   check=False)
    assert_refused_in_one_line(proc, f"fairseq-tree-translate: error: {refusal(path)}", marker)


@pytest.mark.slow
def test_from_pretrained_raises_and_runs_nothing(crafted):
    data, path, marker = crafted
    with pytest.raises(CheckpointRefused) as refused:
        Tree2SeqModel.from_pretrained(str(path.parent), path.name, str(data),
                                      bpe_codes=str(data.parent / "bpe" / "codes"))
    assert str(refused.value) == refusal(path) and isinstance(refused.value, ValueError)
    assert not marker.exists()


def test_such_a_checkpoint_does_run_code_when_loaded_unsafely(tmp_path):
    """What the refusals above prevent (shown in a child process, on a copy)."""
    marker = tmp_path / "ran"
    copy = tmp_path / "copy.pt"
    torch.save({"note": RunsCode(f"touch {marker}")}, copy)
    subprocess.run([sys.executable, "-c", f"import torch; torch.load({str(copy)!r}, "
                    "weights_only=False)"], check=True, capture_output=True)
    assert marker.exists()


def allowed_names() -> set:
    return {f"{c.__module__}.{c.__qualname__}" for c in FAIRSEQ_CHECKPOINT_CLASSES}


def assert_loads_weights_only(path):
    """Only allowed classes; fairseq's own loader reads it; and the state fairseq's
    data-parallel training broadcasts from rank 0 (torch.save, then torch.load on the other
    ranks) comes back whole."""
    unsafe = set(torch.serialization.get_unsafe_globals_in_checkpoint(str(path)))
    assert unsafe <= allowed_names(), unsafe - allowed_names()
    state = checkpoint_utils.load_checkpoint_to_cpu(str(path))
    tensors = []
    buffer = io.BytesIO()
    torch.save(_split_tensors_from_obj(state, tensors), buffer)
    buffer.seek(0)
    received = _put_tensors_in_obj(torch.load(buffer, map_location="cpu"), tensors)
    assert received["cfg"] == state["cfg"] and received["model"].keys() == state["model"].keys()
    return state


@pytest.fixture(scope="module")
def classification_data(tmp_path_factory):
    return word_level(tmp_path_factory.mktemp("trust-classification"))


@pytest.fixture(scope="module")
def mlm_data(tmp_path_factory):
    work = tmp_path_factory.mktemp("trust-mlm")
    for split in ("train", "valid"):
        write_lines(work / f"{split}.txt", ["in the beginning god created the heaven",
                                            "and the earth was without form"] * 8)
    run_cli("fairseq-preprocess", "--only-source", "--trainpref", work / "train.txt",
            "--validpref", work / "valid.txt", "--destdir", work / "bin", "--workers", "1")
    return work / "bin"


def with_arch(options: list, arch: str, *more) -> list:
    """``options`` with ``--arch`` replaced by ``arch`` and ``more`` added."""
    at = options.index("--arch")
    return [*options[:at], "--arch", arch, *options[at + 2:], *more]


SMALL = ["--encoder-layers", "1", "--encoder-embed-dim", "32", "--encoder-ffn-embed-dim", "64",
         "--encoder-attention-heads", "2"]
CLASSIFY = [*COMMON, "--arch", "tree_classifier_tiny", "--criterion", "sentence_prediction"]
MODELS = {
    "tree2seq": ("translation", TRAIN),
    "transformer": ("translation", with_arch(
        TRAIN, "transformer", "--tree-input", "leaves-only", *SMALL, "--decoder-layers", "1",
        "--decoder-embed-dim", "32", "--decoder-ffn-embed-dim", "64",
        "--decoder-attention-heads", "2")),
    "tree_classifier": ("classification", CLASSIFY),
    "recursive_multibranch": ("classification", with_arch(CLASSIFY, MULTI_BRANCH[1])),
    "recursive_tree_attention": ("classification", with_arch(CLASSIFY, TREE_ATTENTION[1])),
    "roberta": ("classification", with_arch(CLASSIFY, "roberta", "--tree-input", "leaves-only",
                                            "--init-token", "0", *SMALL)),
    "constituent_mlm": ("mlm", [*MLM, "--arch", "constituent_transformer_tiny"]),
}


# every model with its optimizer's state (what fairseq saves by default: the most objects), and
# --no-save-optimizer-state once (the state without the optimizer's, the same model objects)
@pytest.mark.slow
@pytest.mark.parametrize("model, optimizer_state",
                         [(model, True) for model in MODELS] + [("tree2seq", False)],
                         ids=[f"{model}-with-optimizer" for model in MODELS] + ["tree2seq-weights"])
def test_every_checkpoint_we_write_loads_weights_only(model, optimizer_state, example,
                                                      classification_data, mlm_data, tmp_path):
    kind, options = MODELS[model]
    data = {"translation": example[0] / "data-bin", "classification": classification_data,
            "mlm": mlm_data}[kind]
    extra = [] if optimizer_state else ["--no-save-optimizer-state"]
    run_cli("fairseq-train", data, *options, "--max-update", "2", "--save-dir", tmp_path, *extra)
    state = assert_loads_weights_only(tmp_path / "checkpoint_last.pt")
    assert ("last_optimizer_state" in state) == optimizer_state
