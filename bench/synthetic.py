"""Does the tree help? tree2seq vs fairseq's Transformer on the synthetic tree-transduction task
(bench/tasks/synthetic_task.py) against the training size, at the same budget, plus the ablations of
the paper's Table 3 (-HierEmb, -SubMask).

    python -m bench.synthetic --json bench/results/synthetic.json --plot bench/results/synthetic.png

For each training size (default 1k, 2k, 5k, 20k pairs; the same valid and test sets for all),
the data set is generated and binarized, then every model of configs/synthetic.yaml named by
``--models`` (and ``--ablations`` at the ``--ablation-sizes``) is trained and evaluated with
bench/lib/compare.py, which runs scripts/train.sh and scripts/evaluate.sh's code. Scores: sacreBLEU,
exact match of whole sentences, and exact match on the *ambiguous* test sentences, those whose
words have a second tree (a PP that may modify the noun or the verb phrase) with another target:
only the tree says which target is right there.
"""

import argparse
import logging
import sys
import time
from pathlib import Path

from bench.lib import compare
from bench.lib.report import end_report, markdown_table
from bench.tasks import synthetic_task

from fairseq_tree.data.recipe import has_recipe
from fairseq_tree.trees import parse_bracketed

PAIR = "synthetic"


def ambiguous_lines(pair_dir: Path) -> list[bool]:
    """Per test sentence: does another tree of its words give another target?"""
    trees = (pair_dir / "trees" / "test.src").read_text(encoding="utf-8").splitlines()
    return [synthetic_task.ambiguity(parse_bracketed(tree))["target"] for tree in trees]


def exact_match(pair_dir: Path, run_dir: Path, ambiguous: list[bool]) -> dict:
    """Percentages of test hypotheses equal to their reference: all, and ambiguous ones."""
    refs = (pair_dir / "tok" / "test.tgt").read_text(encoding="utf-8").splitlines()
    hyps = (run_dir / "translations.tok.tgt").read_text(encoding="utf-8").splitlines()
    if len(hyps) != len(refs):
        raise SystemExit(f"synthetic: {run_dir}: {len(hyps)} hypotheses for {len(refs)} refs")
    same = [h.split() == r.split() for h, r in zip(hyps, refs)]
    picked = [s for s, a in zip(same, ambiguous) if a]
    return {"exact_match": 100 * sum(same) / len(same),
            "exact_match_ambiguous": 100 * sum(picked) / max(len(picked), 1),
            "ambiguous_test_sentences": len(picked)}


def run_size(size: int, models: list[str], args) -> list[dict]:
    """Generate the data set of one training size, train and score ``models`` on it."""
    data = Path(args.work) / f"train-{size}" / "data"
    sizes = {"train": size, "valid": args.valid, "test": args.test}
    if not has_recipe(data / PAIR):
        synthetic_task.write_dataset(data, sizes, args.seed, PAIR)
    checkpoints = Path(args.work) / f"train-{size}" / "checkpoints"
    report = compare.main([PAIR, *models, "--data", str(data), "--checkpoints",
                           str(checkpoints), "--config-dir", args.config_dir,
                           *(f"--generate-arg={arg}" for arg in args.generate_arg),
                           "--", *args.extra])
    ambiguous = ambiguous_lines(data / PAIR)
    return [{"train_pairs": size, **row,
             **exact_match(data / PAIR, checkpoints / PAIR / row["model"], ambiguous)}
            for row in report["results"]]


# The ablations as the paper's Table 3 names them
LABELS = {"tree2seq-no-hier-embed": "tree2seq -HierEmb (`--no-hier-embed`)",
          "tree2seq-no-subtree-mask": "tree2seq -SubMask (`--no-subtree-mask`)"}


def results_table(report: dict, parameters: bool = False, train_seconds: bool = True) -> list[str]:
    """The report's Markdown table (bench/RESULTS.md's and the printed one): a row a training
    size and model; exact match in percent of the test sentences and of the ambiguous ones
    (``train s``: fairseq's wall clock of the run)."""
    header = ["training pairs", "model", *(["parameters"] if parameters else []), "sacreBLEU",
              "exact %", "ambiguous exact %", *(["train s"] if train_seconds else [])]
    return markdown_table(header, [
        [f"{row['train_pairs']:,}", LABELS.get(row["model"], row["model"]),
         *([f"{row['parameters']:,}"] if parameters else []), f"{row['sacrebleu']:.2f}",
         f"{row['exact_match']:.1f}", f"{row['exact_match_ambiguous']:.1f}",
         *([row["train_seconds"]] if train_seconds else [])] for row in report["results"]])


def plot(rows: list[dict], models: list[str], path: str):
    """sacreBLEU and ambiguous-sentence exact match against the training size, one line a
    model (matplotlib, from the bench extra)."""
    import matplotlib

    logging.getLogger("matplotlib").setLevel(logging.WARNING)  # fairseq set the root to DEBUG
    matplotlib.use("Agg")
    from matplotlib import pyplot

    figure, axes = pyplot.subplots(1, 2, figsize=(10, 4))
    for model in models:
        mine = sorted((r for r in rows if r["model"] == model), key=lambda r: r["train_pairs"])
        sizes = [r["train_pairs"] for r in mine]
        axes[0].plot(sizes, [r["sacrebleu"] for r in mine], marker="o", label=model)
        axes[1].plot(sizes, [r["exact_match_ambiguous"] for r in mine], marker="o", label=model)
    for axis, title in zip(axes, ("test sacreBLEU", "exact match, ambiguous test sentences (%)")):
        axis.set_xscale("log")
        axis.set_xlabel("training pairs")
        axis.set_title(title)
        axis.grid(alpha=0.3)
    axes[0].legend()
    figure.tight_layout()
    figure.savefig(path, dpi=100)


def get_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 2000, 5000, 20000])
    parser.add_argument("--valid", type=int, default=500)
    parser.add_argument("--test", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--models", nargs="+", default=["tree2seq", "transformer"])
    parser.add_argument("--ablations", nargs="*",
                        default=["tree2seq-no-hier-embed", "tree2seq-no-subtree-mask"])
    parser.add_argument("--ablation-sizes", type=int, nargs="*", default=[2000],
                        help="training sizes at which the ablations also run")
    parser.add_argument("--work", default="runs/synthetic", help="data and checkpoints")
    parser.add_argument("--config-dir", default=str(compare.ROOT / "configs"))
    parser.add_argument("--generate-arg", action="append", default=[], metavar="ARG",
                        help="an extra fairseq-generate argument (repeatable)")
    parser.add_argument("--json", metavar="FILE")
    parser.add_argument("--plot", metavar="PNG")
    parser.add_argument("extra", nargs="*", help="after --: more fairseq-train arguments")
    return parser


def main(argv=None) -> dict:
    args = get_parser().parse_args(argv)
    started = time.time()
    rows = []
    for size in args.sizes:
        ablations = args.ablations if size in args.ablation_sizes else []
        rows += run_size(size, args.models + ablations, args)
    report = {"benchmark": "synthetic tree transduction: BLEU against training size",
              "command": " ".join(["bench/synthetic.py", *(argv or sys.argv[1:])]),
              "date": time.strftime("%Y-%m-%d"), "settings": vars(args),
              "wall_seconds": round(time.time() - started), "results": rows}
    end_report(report, results_table(report), args.json)
    if args.plot:
        plot(rows, args.models + args.ablations, args.plot)
    return report


if __name__ == "__main__":
    main()
