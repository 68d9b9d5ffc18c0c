"""Train and evaluate the paper's experiments: one model on one task, from configs/.

    python configs/runner train NAME MODEL [--dry-run] [--num-gpus N] [ARGS...]
    python configs/runner evaluate NAME MODEL [--average N] [ARGS...]

(``scripts/train.sh`` and ``scripts/evaluate.sh`` call these.) ``$CONFIG_DIR/NAME.yaml`` holds the
hyper-parameters (see configs/README.md), ``$DATA/PAIR/`` the output of its recipe (a language
pair's, or a classification data set's) and ``$CHECKPOINTS/NAME/MODEL/`` the run. ARGS are
appended to the fairseq-train (or fairseq-generate / fairseq-validate) command, so they override
the config.

train runs fairseq-train (as ``fairseq-tree-train``, whose ``--patience`` count survives a
resume) on every visible GPU (fairseq spawns one process per GPU), or on the CPU when there is
none, with ``--update-freq`` and ``--max-tokens`` chosen so that a GPU never gets more than the
config's ``max_tokens_per_gpu`` and an update holds the paper's number of tokens. A run started
again resumes from its ``checkpoint_last.pt``.

evaluate averages the last N checkpoints, translates the test set with fairseq-generate, and
scores the hypotheses, put back into test order, two ways: tokenized BLEU against the recipe's
tokenized reference (the paper's metric; multi-bleu / fairseq-score's computation; with compound
splitting for WMT En-De), and sacreBLEU on Moses-detokenized hypotheses against the raw reference.
For a classification task it runs fairseq-validate on the valid and test splits and reports their
accuracy (``configs.runner.classification``).
"""

import argparse
import json
import logging
import math
import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import torch
from sacrebleu.metrics import BLEU
from sacremoses import MosesDetokenizer

from configs.runner import classification
from configs.runner.config import (BIN_DIR, FAIRSEQ_COMMAND, PLUGIN_DIR, Experiment, flag_args,
                                   load_experiment)
from configs.runner.processes import run_command
from fairseq_tree.checkpoint_averaging import average_checkpoints, last_checkpoints, save_state
from fairseq_tree.data.recipe import Recipe, has_recipe
from fairseq_tree.errors import CliError, FairseqTreeError
from fairseq_tree.library_noise import ignore_library_warnings
from fairseq_tree.line_files import decode_line, numbered_lines, open_output
from fairseq_tree.tasks.tree_generation import WrittenTrees

HYPOTHESIS = re.compile(r"H-(\d+)\t")
GENERATE_OUTPUT = re.compile(r"[STHDPAEIW]-\d+\t")  # fairseq-generate's per-sentence lines


# ---------------------------------------------------------------------------------------------
# Training


@dataclass
class BatchPlan:
    """How the paper's tokens per update are spread over ``processes`` x ``update_freq``."""

    processes: int
    max_tokens: int
    update_freq: int

    @property
    def tokens_per_update(self) -> int:
        return self.processes * self.max_tokens * self.update_freq


def plan_batch(tokens_per_update: int, max_tokens_per_gpu: int, gpus: int) -> BatchPlan:
    """The fewest accumulation steps that keep every GPU under its ceiling, then the per-GPU
    --max-tokens that makes processes x max-tokens x update-freq the paper's batch (rounded down
    where it does not divide). No GPU means one CPU process."""
    processes = max(1, gpus)
    update_freq = math.ceil(tokens_per_update / (max_tokens_per_gpu * processes))
    return BatchPlan(processes, tokens_per_update // (processes * update_freq), update_freq)


def pop_option(args: list[str], name: str) -> str | None:
    """Remove ``name VALUE`` / ``name=VALUE`` from ``args``; the last value, or None."""
    value, rest, i = None, [], 0
    while i < len(args):
        if args[i] == name and i + 1 < len(args):
            value, i = args[i + 1], i + 2
            continue
        if args[i].startswith(name + "="):
            value = args[i].split("=", 1)[1]
        else:
            rest.append(args[i])
        i += 1
    args[:] = rest
    return value


def batch_from_extras(exp: Experiment, gpus: int, extras: list[str]) -> BatchPlan:
    """The plan, honouring a --max-tokens (new ceiling) or --update-freq given by the user."""
    ceiling = pop_option(extras, "--max-tokens")
    plan = plan_batch(exp.tokens_per_update, int(ceiling or exp.max_tokens_per_gpu), gpus)
    update_freq = pop_option(extras, "--update-freq")
    if update_freq is not None:
        plan = BatchPlan(plan.processes, int(ceiling or exp.max_tokens_per_gpu), int(update_freq))
    return plan


def train_command(exp: Experiment, data_bin: Path, save_dir: Path, gpus: int,
                  extras: list[str]) -> tuple[list[str], BatchPlan]:
    extras = list(extras)
    plan = batch_from_extras(exp, gpus, extras)
    languages = ["--source-lang", exp.source, "--target-lang", exp.target] if exp.source else []
    cmd = [str(BIN_DIR / "fairseq-tree-train"), str(data_bin), "--user-dir", str(PLUGIN_DIR),
           "--task", exp.fairseq_task, *languages,
           *flag_args(exp.task), *flag_args(exp.train), *(flag_args(exp.gpu) if gpus else []),
           "--max-tokens", str(plan.max_tokens), "--update-freq", str(plan.update_freq)]
    if gpus > 1:
        cmd += ["--distributed-world-size", str(gpus)]
    cmd += ["--save-dir", str(save_dir), *extras]
    return cmd, plan


def count_gpus(requested: int | None, dry_run: bool) -> int:
    if requested is not None:
        if not dry_run:
            raise CliError("--num-gpus only plans a --dry-run; choose the GPUs of a real run "
                           "with CUDA_VISIBLE_DEVICES")
        return requested
    return torch.cuda.device_count()


def check_data(exp: Experiment, data: Path) -> Path:
    """The pair's data-bin folder; a clear error naming the recipe when it is not there."""
    pair_dir = data / exp.pair
    data_bin = pair_dir / exp.data_bin
    if exp.kind == "classification":
        return classification.check_data(data_bin, exp.recipe_command(data))
    if exp.kind == "language_model":
        if not (data_bin / "dict.txt").is_file():
            raise CliError(f"{data_bin}: no binarized data (no dict.txt); "
                           f"run {exp.recipe_command(data)} first")
        return data_bin
    if not (data_bin / f"dict.{exp.source}.txt").is_file():
        raise CliError(f"{data_bin}: no binarized data (no dict.{exp.source}.txt); "
                       f"run {exp.recipe_command(data)} first")
    recipe = Recipe.read(pair_dir, kind="translation") if has_recipe(pair_dir) else None
    if recipe and (recipe.src, recipe.tgt) != (exp.source, exp.target):
        raise CliError(f"{pair_dir}/recipe.json is {recipe.src}->{recipe.tgt}, "
                       f"the config says {exp.source}->{exp.target}")
    return data_bin


def train(exp: Experiment, env: dict, args, extras: list[str]) -> int:
    gpus = count_gpus(args.num_gpus, args.dry_run)
    data_bin = env["data"] / exp.pair / exp.data_bin
    if not args.dry_run:
        data_bin = check_data(exp, env["data"])
    save_dir = env["checkpoints"] / exp.name / exp.model
    cmd, plan = train_command(exp, data_bin, save_dir, gpus, extras)
    where = f"{gpus} GPU(s)" if gpus else "CPU (no GPU visible)"
    # the config's tokens per update are the paper's only in the paper's experiments
    paper = f" (paper: {exp.tokens_per_update})" if exp.paper_result is not None else ""
    print(f"{exp.name} {exp.model} on {where}: effective batch {plan.processes} process(es) x "
          f"{plan.max_tokens} max tokens x update-freq {plan.update_freq} = "
          f"{plan.tokens_per_update} tokens per update{paper}")
    print(shlex.join(cmd), flush=True)
    if args.dry_run:
        return 0
    save_dir.mkdir(parents=True, exist_ok=True)
    return subprocess.run(cmd, check=False).returncode


# ---------------------------------------------------------------------------------------------
# Evaluation


def read_lines(path: Path) -> list[str]:
    if not path.is_file():
        raise CliError(f"{path}: missing (written by the pair's data-prep recipe)")
    return [decode_line(raw, where) for where, raw in numbered_lines(str(path))]


def read_hypotheses(path: Path, expected: int) -> list[str]:
    """The H- lines of fairseq-generate output, in test-set order; every sentence exactly once."""
    hyps = {}
    for where, raw in numbered_lines(str(path)):
        line = decode_line(raw, where)
        match = HYPOTHESIS.match(line)
        if match:
            index = int(match.group(1))
            if index in hyps:
                raise CliError(f"{where}: second hypothesis for sentence {index}")
            hyps[index] = (line.split("\t", 2) + [""])[2]
    if sorted(hyps) != list(range(expected)):
        raise CliError(f"{path}: {len(hyps)} hypotheses for the {expected} test sentences")
    return [hyps[i] for i in range(expected)]


def split_compounds(line: str) -> str:
    """fairseq's compound_split_bleu.sh for WMT En-De: ``a-b`` -> ``a ##AT##-##AT## b``."""
    return re.sub(r"(\S)-(\S)", r"\1 ##AT##-##AT## \2", line)


def score(hyps_tok, refs_tok, hyps_detok, refs_raw, compound_split: bool, lowercase: bool):
    """Tokenized BLEU (no smoothing, as multi-bleu.perl) and sacreBLEU with its signature."""
    if compound_split:
        hyps_tok, refs_tok = ([split_compounds(x) for x in ls] for ls in (hyps_tok, refs_tok))
    tokenized = BLEU(tokenize="none", smooth_method="none", force=True)
    tok = tokenized.corpus_score(hyps_tok, [refs_tok])
    sacre = BLEU(lowercase=lowercase)
    detok = sacre.corpus_score(hyps_detok, [refs_raw])
    return {
        "tokenized_bleu": tok.score, "tokenized_precisions": tok.precisions, "tokenized_bp": tok.bp,
        "tokenized_sys_len": tok.sys_len, "tokenized_ref_len": tok.ref_len,
        "compound_split": compound_split, "tokenized_bleu_line": str(tok),
        "sacrebleu": detok.score, "sacrebleu_signature": str(sacre.get_signature()),
        "sacrebleu_line": str(detok),
    }


def detokenizer(recipe: Recipe, tgt: str):
    lang = recipe.details.get("moses_lang") or tgt
    if isinstance(lang, dict):  # {"src": ..., "tgt": ...} or {lang: lang}
        lang = lang.get("tgt") or lang.get(tgt) or tgt
    moses = MosesDetokenizer(lang=lang)
    return lambda line: moses.detokenize(line.split())


def averaged_model(exp: Experiment, save_dir: Path, count: int) -> tuple[Path, list[str]]:
    if not save_dir.is_dir():
        raise CliError(f"{save_dir}: no checkpoints; run scripts/train.sh {exp.name} {exp.model}")
    paths = last_checkpoints(str(save_dir), count, exp.checkpoints)
    if count == 1:
        return Path(paths[0]), paths
    output = save_dir / f"averaged-last{count}.pt"
    print(f"averaging {count} checkpoints: {', '.join(Path(p).name for p in paths)}", flush=True)
    save_state(average_checkpoints(paths), str(output))
    return output, paths


def generate_command(exp: Experiment, data_bin: Path, model: Path, extras: list[str]):
    """fairseq-generate on the test set, a progress line after each batch (a config or
    ``extras`` may say otherwise)."""
    return [*FAIRSEQ_COMMAND, "generate", str(data_bin), "--user-dir", str(PLUGIN_DIR),
            "--task", "tree_translation", "--source-lang", exp.source, "--target-lang", exp.target,
            *flag_args(exp.task), "--path", str(model), "--gen-subset", "test",
            "--log-interval", "1", *flag_args(exp.generate), *extras]


def write_lines(path: Path, lines: list[str]):
    with open_output(str(path)) as out:
        out.write("".join(x + "\n" for x in lines).encode("utf-8"))


def read_references(pair_dir: Path, tgt: str) -> tuple[list[str], list[str]]:
    """The recipe's tokenized and raw test references, which must align line by line."""
    tok, raw = (read_lines(pair_dir / sub / f"test.{tgt}") for sub in ("tok", "ref"))
    if len(tok) != len(raw):
        raise CliError(f"{pair_dir}: tok/test.{tgt} has {len(tok)} lines, "
                       f"ref/test.{tgt} has {len(raw)}")
    return tok, raw


def report(results: dict, path: Path):
    write_lines(path, [json.dumps(results, indent=2)])
    split = " (compound splitting)" if results["compound_split"] else ""
    print(f"tokenized {results['tokenized_bleu_line']}{split}")
    print(f"sacre{results['sacrebleu_line']}  {results['sacrebleu_signature']}")
    if results["paper_bleu"] is not None:
        print(f"paper (Table 1, tokenized BLEU): {results['paper_bleu']}")
    print(f"results: {path}")


def evaluate(exp: Experiment, env: dict, args, extras: list[str]) -> int:
    if exp.kind == "language_model":
        raise CliError(f"{exp.name}: a language model has no evaluate command here; the "
                       "benchmark that trains it scores it (see its config)")
    data_bin = check_data(exp, env["data"])
    save_dir = env["checkpoints"] / exp.name / exp.model
    if exp.kind == "classification":
        model, averaged = averaged_model(exp, save_dir, args.average or exp.average)
        return classification.evaluate(exp, data_bin, model, averaged, save_dir, extras)
    pair_dir, tgt = env["data"] / exp.pair, exp.target
    recipe = Recipe.read(pair_dir, kind="translation")
    lowercase = recipe.text.lowercase
    refs_tok, refs_raw = read_references(pair_dir, tgt)
    model, averaged = averaged_model(exp, save_dir, args.average or exp.average)
    cmd = generate_command(exp, data_bin, model, extras)
    print(shlex.join(cmd), flush=True)
    # its output kept (only once it succeeded), its log lines and progress still shown
    with open_output(str(save_dir / "generate-test.txt")) as out:
        run_command(cmd, out, show=lambda line: not GENERATE_OUTPUT.match(line),
                    merge_stderr=False)
    hyps = read_hypotheses(save_dir / "generate-test.txt", len(refs_tok))
    # of a model that writes trees: how many of its best hypotheses were malformed trees
    trees = WrittenTrees.last_reported((save_dir / "generate-test.txt").read_text(
        encoding="utf-8", errors="replace"))
    detok = list(map(detokenizer(recipe, tgt), hyps))
    write_lines(save_dir / f"translations.tok.{tgt}", hyps)
    write_lines(save_dir / f"translations.{tgt}", detok)
    results = {"pair": exp.pair, "model": exp.model, "averaged_checkpoints": averaged,
               "checkpoint": str(model), "generate_command": shlex.join(cmd),
               "sentences": len(hyps), "lowercase": lowercase,
               **({"written_trees": trees} if trees is not None else {}),
               **score(hyps, refs_tok, detok, refs_raw, exp.compound_split, lowercase),
               "paper_bleu": exp.paper_bleu}
    report(results, save_dir / "test-results.json")
    return 0


# ---------------------------------------------------------------------------------------------
# Command line


def get_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python configs/runner", allow_abbrev=False,
        description=__doc__.split("\n")[0],
        epilog="Environment: CONFIG_DIR (default configs), DATA (default data), "
        "CHECKPOINTS (default checkpoints), relative to the repository root when unset. Other "
        "arguments go to fairseq-train / -generate.")
    parser.add_argument("command", choices=["train", "evaluate"])
    parser.add_argument("pair", metavar="name", help="a config name, e.g. iwslt14-de-en or sst5")
    parser.add_argument("model", help="a model of that config, e.g. tree2seq, transformer, "
                        "tree_classifier or roberta")
    parser.add_argument("--dry-run", action="store_true", help="train: print the command only")
    parser.add_argument("--num-gpus", type=int, default=None, metavar="N",
                        help="train --dry-run: plan for N GPUs instead of the visible ones")
    parser.add_argument("--average", type=int, default=None, metavar="N",
                        help="evaluate: average the last N checkpoints (default: the config's)")
    return parser


def environment() -> dict:
    """The folders of a run: the environment's, or the repository's own."""
    root = Path(__file__).resolve().parents[2]
    return {name.lower(): Path(os.environ.get(name, root / default)) for name, default in
            (("CONFIG_DIR", "configs"), ("DATA", "data"), ("CHECKPOINTS", "checkpoints"))}


def cli_main(argv=None):
    """Console entry point: errors end the run with one line "experiment: error: ..."."""
    logging.basicConfig(format="%(asctime)s | %(levelname)s | %(name)s | %(message)s",
                        level=logging.INFO, stream=sys.stderr, force=True)
    ignore_library_warnings()
    args, extras = get_parser().parse_known_args(argv)
    env = environment()
    try:
        exp = load_experiment(env["config_dir"], args.pair, args.model)
        run = train if args.command == "train" else evaluate
        sys.exit(run(exp, env, args, extras))
    except (FairseqTreeError, OSError) as err:  # CliError, and recipe.json's errors
        sys.exit(f"experiment: error: {err}")


if __name__ == "__main__":
    cli_main()
