"""Train several models of one experiment config on the same data at the same budget, evaluate
each on the test set, and print one table: tree2seq against fairseq's Transformer.

    python -m bench.lib.compare bible-en-fr-sample tree2seq transformer --json runs/quickstart.json
    python -m bench.lib.compare synthetic tree2seq transformer --data DIR --checkpoints DIR

Each model runs exactly as ``scripts/train.sh PAIR MODEL`` and ``scripts/evaluate.sh PAIR MODEL``
(the runner, ``configs/runner``), so the budget is the config's: the same number of updates and
the same batches for every model. The training log of each run is kept beside its checkpoints
(``train.log``, fairseq's progress logged as JSON); a run that already reached its last update is
not trained again, and its time is read from that log. Arguments after ``--`` go to
fairseq-train for every model.
"""

import argparse
import json
import os
import sys
import time
from pathlib import Path

from bench.lib.report import end_report, machine, markdown_table

ROOT = Path(__file__).resolve().parents[2]
from configs.runner.fairseq_logs import parameter_counts, progress_records, run_seconds, runs
from configs.runner.processes import run_command
from fairseq_tree.errors import CliError

RUNNER = ROOT / "configs" / "runner"
# fairseq-train's progress as JSON records, which the training record is read from (last: the
# config's log-format is for a person reading the terminal)
JSON_LOG = ["--log-format", "json"]


def valid_curve(log_text: str, metric: str = "accuracy") -> list[tuple[int, int, float]]:
    """(epoch, updates, valid metric) of every validation in a fairseq-train log, in order."""
    return [(int(r["epoch"]), int(r["num_updates"]), float(r[metric]))
            for r in progress_records(log_text, ["valid"]) if metric in r]


def experiment(command: str, pair: str, model: str, env: dict, extras=(), log=None):
    """``python configs/runner COMMAND PAIR MODEL``; its output is copied to ``log`` (a file
    open for appending bytes) and to our stderr as it comes."""
    cmd = [sys.executable, str(RUNNER), command, pair, model, *extras]
    try:
        run_command(cmd, log, env=env, cwd=ROOT)
    except CliError as err:
        sys.exit(f"compare: {command} {pair} {model} failed ({err})")


def training_record(log_text: str) -> dict:
    """Parameters, updates, epochs and seconds of a run, from its fairseq-train log: the last
    epoch summary, and the seconds summed over the runs of a resumed run (``run_seconds``: each
    up to its last epoch summary, validation and saving included, where the next run resumed;
    the rest of an epoch it was stopped in is trained again)."""
    params = parameter_counts(log_text)
    summaries = progress_records(log_text, ["train"])
    if not params or not summaries:
        raise SystemExit("compare: the training log has no parameter count or epoch summary")
    seconds = sum(run_seconds(run) for run in runs(log_text))
    return {"parameters": params[-1], "epochs": int(summaries[-1]["epoch"]),
            "updates": int(summaries[-1]["num_updates"]), "train_seconds": seconds}


def train_and_evaluate(pair: str, model: str, env: dict, extras=(), evaluate_args=()):
    """Train (or finish training) then evaluate one model: its test-results.json, its training
    log (all of it, earlier calls' included) and the seconds this call trained."""
    save_dir = Path(env["CHECKPOINTS"]) / pair / model
    save_dir.mkdir(parents=True, exist_ok=True)
    with open(save_dir / "train.log", "ab") as log:
        start = time.perf_counter()
        experiment("train", pair, model, env, [*extras, *JSON_LOG], log)
        seconds = time.perf_counter() - start
    experiment("evaluate", pair, model, env, evaluate_args)
    results = json.loads((save_dir / "test-results.json").read_text(encoding="utf-8"))
    return results, (save_dir / "train.log").read_text(encoding="utf-8"), seconds


def run_model(pair: str, model: str, env: dict, extras: list[str],
              generate_args: list[str]) -> dict:
    """Train (or finish training) then evaluate one model; its row of the table."""
    results, log_text, seconds = train_and_evaluate(pair, model, env, extras, generate_args)
    record = training_record(log_text)
    return {"model": model, **record, "this_call_seconds": round(seconds, 1),
            "sacrebleu": results["sacrebleu"], "tokenized_bleu": results["tokenized_bleu"],
            "sacrebleu_signature": results["sacrebleu_signature"],
            "test_sentences": results["sentences"], "checkpoint": results["checkpoint"]}


def results_table(report: dict) -> list[str]:
    """The report's Markdown table (bench/RESULTS.md's and the printed one): a row a model.
    ``train s`` is fairseq's wall clock of the run, validation included."""
    return markdown_table(
        ["model", "parameters", "updates", "train s", "sacreBLEU", "tokenized BLEU"],
        [[row["model"], f"{row['parameters']:,}", f"{row['updates']:,}", f"{row['train_seconds']:,}",
          f"{row['sacrebleu']:.2f}", f"{row['tokenized_bleu']:.2f}"]
         for row in report["results"]])

def parse_system(text: str) -> tuple[str, str]:
    config, sep, model = text.partition(":")
    if not sep or not config or not model:
        raise argparse.ArgumentTypeError(f"{text!r}: expected CONFIG:MODEL")
    return config, model



def get_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("pair", help="a config of --config-dir, e.g. bible-en-fr-sample")
    parser.add_argument("models", nargs="+", help="models of that config, e.g. tree2seq")
    parser.add_argument("--data", default=os.environ.get("DATA", str(ROOT / "data")),
                        help="the recipes' output root (default: $DATA or data)")
    parser.add_argument("--checkpoints", default=os.environ.get("CHECKPOINTS",
                                                                str(ROOT / "checkpoints")))
    parser.add_argument("--config-dir", default=os.environ.get("CONFIG_DIR",
                                                               str(ROOT / "configs")))
    parser.add_argument("--generate-arg", action="append", default=[], metavar="ARG",
                        help="an extra fairseq-generate argument (repeatable), e.g. "
                        "--generate-arg=--max-len-b=5")
    parser.add_argument("--json", metavar="FILE", help="also write the results here")
    return parser


def main(argv=None) -> dict:
    argv = sys.argv[1:] if argv is None else list(argv)
    extras = argv[argv.index("--") + 1:] if "--" in argv else []
    args = get_parser().parse_args(argv[:argv.index("--")] if "--" in argv else argv)
    env = {**os.environ, "DATA": str(Path(args.data).resolve()),
           "CHECKPOINTS": str(Path(args.checkpoints).resolve()),
           "CONFIG_DIR": str(Path(args.config_dir).resolve())}
    rows = [run_model(args.pair, model, env, extras, args.generate_arg) for model in args.models]
    report = {"benchmark": f"{args.pair}: {' vs '.join(args.models)}, same budget",
              "command": " ".join([Path(sys.argv[0]).name, *argv]),
              "machine": machine(),
              "date": time.strftime("%Y-%m-%d"), "fairseq_train_extras": extras,
              "results": rows}
    return end_report(report, results_table(report), args.json)


if __name__ == "__main__":
    main()
