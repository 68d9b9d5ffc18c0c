"""Evaluating a classification experiment (``kind: classification`` in configs/): fairseq-validate
on the valid and test splits of the task's data-bin, its metric (the config's ``metric``:
accuracy, or mse for scores) written to test-results.json.

fairseq-validate builds the task and criterion the checkpoint was trained with, so the accuracy
is the criterion's: one label per example (``sentence_prediction``), or the root's class of
``node_classification`` (grouped, e.g. SST-2 from five classes, with ``--class-groups``); the
mse (and Pearson's r) of ``score_distribution``'s expected scores.
"""

import json
import shlex
from pathlib import Path

from configs.runner.config import FAIRSEQ_COMMAND, PLUGIN_DIR, Experiment, flag_args
from configs.runner.fairseq_logs import progress_records
from configs.runner.processes import run_command
from fairseq_tree.errors import CliError
from fairseq_tree.line_files import open_output

# fairseq-validate's summary of each split as a JSON record: {"test_loss": "1.23",
# "test_accuracy": "45.6", ...} under the name "test"
JSON_LOG = ["--log-format", "json"]


def check_data(data_bin: Path, recipe_command: str) -> Path:
    """The task's data-bin (input0/ and label/: a class dictionary, or scores); a clear error
    naming the recipe otherwise."""
    for part, names in (("input0", ["dict.txt"]), ("label", ["dict.txt", "train.label"])):
        if not any((data_bin / part / name).is_file() for name in names):
            raise CliError(f"{data_bin}: no binarized data (no {part}/{names[0]}); run "
                           f"{recipe_command} first")
    return data_bin


def test_subsets(data_bin: Path) -> list[str]:
    """test, then the further test splits (fairseq's test1, test2, ...) the data-bin holds."""
    subsets = ["test"]
    while any((data_bin / "label" / f"test{len(subsets)}{suffix}").is_file()
              for suffix in (".idx", ".label")):
        subsets.append(f"test{len(subsets)}")
    return subsets


def validate_command(exp: Experiment, data_bin: Path, model: Path, extras: list[str]):
    """fairseq-validate on valid and every test split, its summaries logged as JSON (last, so
    that the config and ``extras`` cannot change the format read)."""
    subsets = ",".join(["valid", *test_subsets(data_bin)])
    return [*FAIRSEQ_COMMAND, "validate", str(data_bin), "--user-dir", str(PLUGIN_DIR),
            "--task", exp.fairseq_task, *flag_args(exp.task), "--path", str(model),
            "--valid-subset", subsets, *flag_args(exp.validate or {}), *extras, *JSON_LOG]


def read_metrics(output: str, subsets: list[str]) -> dict[str, dict[str, float]]:
    """Each subset's numbers from fairseq-validate's summary records."""
    return {record.pop("kind"): {key: float(value) for key, value in record.items()}
            for record in progress_records(output, subsets)}


def evaluate(exp: Experiment, data_bin: Path, model: Path, averaged: list[str], save_dir: Path,
             extras: list[str]) -> int:
    """fairseq-validate on valid, test and any further test split (test1, ...); test-results.json
    beside the checkpoints (every split's numbers in ``metrics``)."""
    cmd = validate_command(exp, data_bin, model, extras)
    print(shlex.join(cmd), flush=True)
    with open_output(str(save_dir / "validate.log")) as log:
        output = run_command(cmd, log)
    metrics = read_metrics(output, ["valid", *test_subsets(data_bin)])
    metric = exp.metric
    if metric not in metrics.get("test", {}):
        raise CliError(f"fairseq-validate printed no test {metric} (see {save_dir}/validate.log)")
    results = {"name": exp.name, "model": exp.model, "checkpoint": str(model),
               "averaged_checkpoints": averaged, "validate_command": shlex.join(cmd),
               "metric": metric, metric: metrics["test"][metric],
               f"valid_{metric}": metrics.get("valid", {}).get(metric),
               "metrics": metrics, f"paper_{metric}": exp.paper_result}
    path = save_dir / "test-results.json"
    with open_output(str(path)) as sink:
        sink.write(json.dumps(results, indent=2).encode("utf-8") + b"\n")
    digits = 2 if metric == "accuracy" else 4
    print(f"test {metric} {results[metric]:.{digits}f} (valid {results[f'valid_{metric}']})")
    if exp.paper_result is not None:
        print(f"paper ({metric}): {exp.paper_result}")
    print(f"results: {path}")
    return 0
