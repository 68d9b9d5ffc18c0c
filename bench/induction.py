"""Tree Transformer benchmarks on English text (Wang et al., 2019): (a) how good the induced
trees are, and (b) the perplexity of masked words, constituent_transformer against the plain
Transformer of the same size.

    python -m bench.induction --json bench/results/induction.json

(a) For each corpus and seed, a ``constituent_transformer_tiny`` masked LM is trained on the
corpus' training sentences, trees are induced for its test sentences (Algorithm 1,
``fairseq-tree-parse --parser induced``) and scored with ``fairseq-tree-score-parses`` next to
the left-branching, right-branching and random trees of the same sentences:

* ``synthetic``: the English side of bench/tasks/synthetic_task.py (its gold trees; no BPE, the
  vocabulary is small). The grammar is mostly right-branching: RB is the baseline to beat;
* ``bible``: the quickstart's English Bible sample (data-prep/bible-sample: 12,000 training
  verses, 500 test verses of Acts), one unit per word (first piece of 4,000 BPE merges), scored
  against its link-grammar trees (silver); the test verses link-grammar could not parse (flat
  fallback trees) are left out.

(b) On the Bible sample, ``plain_transformer_mlm_tiny`` is trained like the constituent model
(same data, seeds and budget), and both are scored on the test verses, one word masked at a
time (Table 4's protocol).

A run is one model of one corpus and seed (a row of the results); each finished run is written to
``--json`` at once, and a run found there is not run again (nor its corpus prepared when none of
its runs is missing), so the benchmark may be made in several sessions: commit the JSON and run
the same command again. A JSON made with other settings (updates, data sizes, BPE, fairseq-train
arguments, perplexity) is refused rather than mixed.
"""

import argparse
import gzip
import statistics
import sys
import time
from pathlib import Path

from bench.lib import masked_lm
from bench.tasks import synthetic_task
from bench.lib.report import (difference_cell, end_report, machine, markdown_table, paired_t_test,
                          previous_report, write_json)

from fairseq_tree.data.recipe import has_recipe
from fairseq_tree.parsing.base import FLAT_LABEL

SAMPLE = masked_lm.ROOT / "data-prep" / "bible-sample"
CONSTITUENT, PLAIN = "constituent_transformer_tiny", "plain_transformer_mlm_tiny"
# the settings that change what a row means: a resumed run must have the same
RESULT_SETTINGS = ("max_update", "synthetic_train", "valid", "test", "bible_train", "bpe_merges",
                   "perplexity", "extra")


def synthetic_corpus(work: Path, args) -> dict:
    """Text and gold trees of the synthetic grammar (one data set for every seed)."""
    pair = work / "data" / "synthetic"
    if not has_recipe(pair):
        sizes = {"train": args.synthetic_train, "valid": args.valid, "test": args.test}
        synthetic_task.write_dataset(work / "data", sizes, 1, "synthetic", binarise=False)
    return {"texts": {split: pair / "tok" / f"{split}.src" for split in ("train", "valid", "test")},
            "gold": pair / "trees" / "test.src", "bpe_merges": 0}


def bible_corpus(work: Path, args) -> dict:
    """The Bible sample's English text; test verses with a real link-grammar tree only."""
    out = work / "data" / "bible"
    out.mkdir(parents=True, exist_ok=True)
    read = lambda path: gzip.open(path, "rt", encoding="utf-8").read().splitlines()
    for split, count in (("train", args.bible_train), ("valid", None)):
        lines = read(SAMPLE / "cased" / f"{split}.en.gz")[:count]
        (out / f"{split}.txt").write_text("".join(x + "\n" for x in lines), encoding="utf-8")
    trees, text = read(SAMPLE / "parsed" / "test.en.gz"), read(SAMPLE / "cased" / "test.en.gz")
    parsed = [i for i, tree in enumerate(trees) if not tree.startswith(f"({FLAT_LABEL} ")]
    (out / "test.txt").write_text("".join(text[i] + "\n" for i in parsed[:args.test]),
                                  encoding="utf-8")
    (out / "test.gold").write_text("".join(trees[i] + "\n" for i in parsed[:args.test]),
                                   encoding="utf-8")
    return {"texts": {split: out / f"{split}.txt" for split in ("train", "valid", "test")},
            "gold": out / "test.gold", "bpe_merges": args.bpe_merges,
            "flat_test_verses_left_out": len(trees) - len(parsed)}


def run_corpus(name: str, make_corpus, work: Path, args, rows: list[dict], finish):
    """(a) for every seed, and (b) on the Bible: the runs not in ``rows`` yet, each passed to
    ``finish`` when done."""
    archs = [CONSTITUENT, PLAIN] if name == "bible" and args.perplexity else [CONSTITUENT]
    done = {(r["arch"], r["seed"]) for r in rows if r["corpus"] == name}
    todo = [(seed, arch) for seed in args.seeds for arch in archs if (arch, seed) not in done]
    if not todo:
        return
    corpus = make_corpus(work, args)
    codes = masked_lm.make_lm_data(corpus["texts"], work / name, corpus["bpe_merges"])
    data_bin = work / name / "data-bin"
    for seed, arch in todo:
        row = {"corpus": name, **masked_lm.train(
            data_bin, arch, work / name / f"{arch}-seed{seed}", seed, args.max_update,
            args.extra)}
        if arch == CONSTITUENT:
            row["parsing"] = masked_lm.induce_and_score(
                Path(row["checkpoint"]), codes, corpus["texts"]["test"], corpus["gold"],
                work / name / f"test-seed{seed}")
        if name == "bible" and args.perplexity:
            row["masked_words"] = masked_lm.masked_word_perplexity(
                Path(row["checkpoint"]), work / name / "units" / "test.txt")
        finish(row)


CORPUS_LABELS = {"synthetic": "synthetic grammar, gold trees",
                 "bible": "Bible sample (Acts), link-grammar trees"}


def mean_sd(values: list[float]) -> str:
    return f"{statistics.mean(values):.2f} ± {statistics.stdev(values):.2f}" if len(values) > 1 \
        else f"{values[0]:.2f}"


def f1_table(report: dict) -> list[str]:
    """(a) as a Markdown table (bench/RESULTS.md's and the printed one): per corpus, the
    induced trees' F1 over the seeds (mean ± sd, median, by seed), then the baselines."""
    rows = report["results"]
    body = []
    for corpus in dict.fromkeys([*report.get("settings", {}).get("corpora", []),
                                 *(r["corpus"] for r in rows)]):
        mine = sorted((r for r in rows if r["corpus"] == corpus and "parsing" in r),
                      key=lambda r: r["seed"])
        if not mine:
            continue
        f1 = [r["parsing"]["pred_scores"]["sentence_f1"] for r in mine]
        corpus_f1 = [r["parsing"]["pred_scores"]["corpus_f1"] for r in mine]
        base = mine[0]["parsing"]
        body.append([f"{CORPUS_LABELS.get(corpus, corpus)} ({base['sentences']:,}, "
                     f"{base['mean_words']:.1f})",
                     f"induced, seeds {','.join(str(r['seed']) for r in mine)} (mean ± sd; "
                     f"median {statistics.median(f1):.2f})", mean_sd(f1), mean_sd(corpus_f1),
                     ", ".join(f"{x:.2f}" for x in f1)])
        for key, label in (("left_branching", "left-branching"),
                           ("right_branching", "right-branching")):
            body.append(["", label, f"{base[key]['sentence_f1']:.2f}",
                         f"{base[key]['corpus_f1']:.2f}", ""])
        body.append(["", f"random (median of {base['random_runs']})",
                     f"{base['random']['sentence_f1']['median']:.2f}",
                     f"{base['random']['corpus_f1']['median']:.2f}", ""])
    return markdown_table(["corpus (test sentences, words)", "trees", "sentence F1",
                           "corpus F1", "sentence F1 by seed"], body)


def perplexity_table(report: dict) -> list[str]:
    """(b) as a Markdown table: masked-word perplexity per model over the seeds, this call's
    seconds per run, and each model's seed-level paired t-test against the first."""
    rows = [r for r in report["results"] if "masked_words" in r]
    archs = list(dict.fromkeys(r["arch"] for r in rows))
    by_seed = {arch: {r["seed"]: r for r in rows if r["arch"] == arch} for arch in archs}
    body = []
    for arch in archs:
        seeds = sorted(by_seed[arch])
        perplexity = [by_seed[arch][s]["masked_words"]["perplexity"] for s in seeds]
        shared = sorted(set(seeds) & set(by_seed[archs[0]]))
        test = "" if arch == archs[0] else difference_cell(paired_t_test(
            [by_seed[archs[0]][s]["masked_words"]["perplexity"] for s in shared],
            [by_seed[arch][s]["masked_words"]["perplexity"] for s in shared]))
        body.append([arch, f"{by_seed[arch][seeds[0]]['parameters']:,}", mean_sd(perplexity),
                     ", ".join(f"{x:.2f}" for x in perplexity),
                     ", ".join(f"{by_seed[arch][s]['this_call_seconds']:.0f}" for s in seeds),
                     test])
    return markdown_table(["model", "parameters", "masked-word perplexity, mean ± sd", "by seed",
                           "train s by seed", f"minus {archs[0]}, seed-level t-test (p)"]
                          if archs else [], body)


def summary(report: dict) -> list[str]:
    """The printed tables: (a), then (b)."""
    return f1_table(report) + [""] + perplexity_table(report)


def get_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--corpora", nargs="+", choices=["synthetic", "bible"],
                        default=["synthetic", "bible"])
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--max-update", type=int, default=1500, help="updates of each masked LM")
    parser.add_argument("--synthetic-train", type=int, default=20000)
    parser.add_argument("--valid", type=int, default=300, help="synthetic valid sentences")
    parser.add_argument("--test", type=int, default=500, help="test sentences (at most)")
    parser.add_argument("--bible-train", type=int, default=None,
                        help="Bible training verses (default: all 12,000)")
    parser.add_argument("--bpe-merges", type=int, default=4000, help="Bible units")
    parser.add_argument("--no-perplexity", dest="perplexity", action="store_false",
                        help="skip (b): no plain Transformer, no perplexity")
    parser.add_argument("--work", default="runs/induction", type=Path)
    parser.add_argument("--json", metavar="FILE",
                        help="results (read first: finished runs are not run again)")
    parser.add_argument("extra", nargs="*", help="after --: more fairseq-train arguments")
    return parser


def main(argv=None) -> dict:
    args = get_parser().parse_args(argv)
    started = time.time()
    settings = {**vars(args), "work": str(args.work)}
    rows = previous_report(args.json, settings, RESULT_SETTINGS).get("results", [])

    def report() -> dict:
        return {"benchmark": "Tree Transformer: induced trees (a) and masked-word perplexity (b)",
                "command": " ".join(["bench/induction.py", *(argv if argv is not None
                                                            else sys.argv[1:])]),
                "machine": machine(),
                "date": time.strftime("%Y-%m-%d"), "settings": settings,
                "lm_train_flags": masked_lm.TRAIN,
                "wall_seconds_this_call": round(time.time() - started), "results": rows}

    def finish(row: dict):
        rows.append(row)
        if args.json:
            write_json(args.json, report())  # a finished run is never lost

    corpora = {"synthetic": synthetic_corpus, "bible": bible_corpus}
    for name in args.corpora:
        run_corpus(name, corpora[name], args.work, args, rows, finish)
    return end_report(report(), summary(report()), args.json)


if __name__ == "__main__":
    main()
