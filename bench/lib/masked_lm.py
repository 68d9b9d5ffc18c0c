"""What the Tree Transformer benchmarks share: masked-LM data from tokenized text, training a
masked LM with fairseq-train, inducing and scoring trees with the console scripts, and the
perplexity of masked words (Wang et al., 2019, Table 4's protocol).

Settings (``TRAIN``): not the paper's 70k updates on a GPU but a CPU budget. The models are
``constituent_transformer_tiny`` and ``plain_transformer_mlm_tiny`` (6 layers, d 256, 4 heads,
FFN 1024, pre-LN), fairseq's masked_lm task on whole sentences (``--sample-break-mode eos``),
1/7 of the units masked as the authors' code does (80/10/10), Adam with betas (0.9, 0.98) as the
paper's parsing runs, gradient clipping 1.5 as the authors' code; lr 3e-4 with 200 warmup
updates (the paper's constant 1e-4 learns too little in a few thousand CPU updates), batches of
64 sentences.
"""

import contextlib
import json
import math
import re
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[2]
from configs.runner.fairseq_logs import parameter_counts
from configs.runner.processes import run_command
from fairseq_tree.data.bpe import apply_codes, learn_codes
from fairseq_tree.errors import CliError
from fairseq_tree.parsing.files import parse_file
from fairseq_tree.parsing.options import backend_options, parsed_backend_args
from fairseq_tree.trees.evaluation import score_files

BIN = Path(sys.executable).parent
PLUGIN_DIR = ROOT / "fairseq_tree"
TRAIN = ["--task", "masked_lm", "--sample-break-mode", "eos", "--tokens-per-sample", "256",
         "--criterion", "masked_lm", "--mask-prob", str(1 / 7), "--optimizer", "adam",
         "--adam-betas", "(0.9, 0.98)", "--clip-norm", "1.5", "--lr", "3e-4",
         "--lr-scheduler", "inverse_sqrt", "--warmup-updates", "200", "--dropout", "0.1",
         "--batch-size", "64", "--required-batch-size-multiple", "1", "--num-workers", "0",
         "--no-epoch-checkpoints", "--log-format", "simple", "--log-interval", "100"]
# the updates of the simple format's progress lines (the induction results record these flags:
# their log stays in the format they were made with)
UPDATES = re.compile(r"num_updates[ =](\d+)")


def run(name: str, *args, log: Path | None = None) -> str:
    """Console script ``name`` of this environment; its output (also appended to ``log``)."""
    with open(log, "ab") if log is not None else contextlib.nullcontext() as handle:
        try:
            return run_command([BIN / name, *args], handle, show=False)
        except CliError as err:
            sys.exit(f"{name} failed: {err}")


def make_lm_data(texts: dict[str, Path], work: Path, bpe_merges: int) -> Path | None:
    """``work/units/{split}.txt`` (one unit per word: its first piece with ``bpe_merges`` > 0,
    else the word) and ``work/data-bin`` (stock fairseq-preprocess --only-source; units seen
    once are <unk>). Returns the BPE codes (None without BPE). Skipped when done."""
    codes = work / "bpe.codes" if bpe_merges > 0 else None
    if (work / "data-bin" / "dict.txt").exists():
        return codes
    (work / "units").mkdir(parents=True, exist_ok=True)
    if codes:  # fairseq-tree-bpe in this process, as data-prep/prepare.py runs it
        learn_codes(str(codes), bpe_merges, text=[str(texts["train"])])
    for split, path in texts.items():
        units = work / "units" / f"{split}.txt"
        if codes:
            stats = apply_codes(str(codes), str(path), str(units), text=True, first_piece=True)
            print(stats.report(), file=sys.stderr)
        else:
            units.write_text(Path(path).read_text(encoding="utf-8"), encoding="utf-8")
    prefixes = [arg for split in texts
                for arg in (f"--{split}pref", work / "units" / f"{split}.txt")]
    run("fairseq-preprocess", "--only-source", "--thresholdsrc", "2", "--workers", "1",
        "--destdir", work / "data-bin", *prefixes)
    return codes


def train(data_bin: Path, arch: str, save_dir: Path, seed: int, max_update: int,
          extra=()) -> dict:
    """fairseq-train one masked LM (resumed, or skipped when it reached ``max_update``);
    its parameters, updates and training seconds from its log."""
    log = save_dir / "train.log"
    save_dir.mkdir(parents=True, exist_ok=True)
    logged = UPDATES.findall(log.read_text()) if log.exists() else []
    done = bool(logged) and int(logged[-1]) >= max_update
    start = time.perf_counter()
    if not done:
        run("fairseq-train", data_bin, "--user-dir", PLUGIN_DIR, *TRAIN, "--arch", arch,
            "--seed", seed, "--max-update", max_update, "--save-dir", save_dir, *extra, log=log)
    text = log.read_text()
    parameters = parameter_counts(text)[-1]
    return {"arch": arch, "seed": seed, "parameters": parameters,
            "updates": int(UPDATES.findall(text)[-1]),
            "this_call_seconds": round(time.perf_counter() - start, 1),
            "checkpoint": str(save_dir / "checkpoint_last.pt")}


def induce_and_score(checkpoint: Path, codes: Path | None, text: Path, gold: Path,
                     out: Path) -> dict:
    """``text`` parsed as fairseq-tree-parse --parser induced parses it, then scored as
    fairseq-tree-score-parses scores it against ``gold`` (both in this process; the scores also
    as JSON beside the trees)."""
    trees = out.with_suffix(".trees")
    trees.unlink(missing_ok=True)  # the parser resumes an existing output
    options = backend_options(parsed_backend_args(
        ["--induced-checkpoint", str(checkpoint),
         *(["--induced-bpe-codes", str(codes)] if codes else [])]))
    parse_file(str(text), str(trees), "induced", "xx", options)
    scores = score_files(str(gold), str(trees))
    out.with_suffix(".json").write_text(json.dumps(scores, indent=2) + "\n", encoding="utf-8")
    return scores


@torch.no_grad()
def masked_word_perplexity(checkpoint: Path, units: Path, batch_size: int = 256) -> dict:
    """Table 4's protocol: every word of every test sentence masked in turn, alone (one sample
    per word), ppl = exp(-sum log p(word) / words). Words whose unit is <unk> are not scored."""
    from fairseq.data.data_utils import collate_tokens

    from fairseq_tree.models.masked_lm_hub import load_masked_lm

    hub = load_masked_lm(str(checkpoint))  # either model: the Tree Transformer or the baseline
    model, vocab, samples = hub.model.cpu(), hub.dictionary, []
    for line in units.read_text(encoding="utf-8").splitlines():
        ids = hub.encode(line.split())
        for position in range(1, len(ids) - 1):
            if ids[position] != vocab.unk():
                masked = ids.clone()
                masked[position] = hub.mask_idx
                samples.append((masked, position, ids[position].item()))
    total = 0.0
    for first in range(0, len(samples), batch_size):
        batch = samples[first:first + batch_size]
        tokens = collate_tokens([s[0] for s in batch], vocab.pad())
        logits, _ = model(tokens, masked_tokens=tokens.eq(hub.mask_idx))  # one row per sample
        targets = torch.tensor([s[2] for s in batch])
        total += logits.float().log_softmax(-1).gather(1, targets[:, None]).sum().item()
    return {"masked_words": len(samples), "perplexity": math.exp(-total / max(len(samples), 1))}
