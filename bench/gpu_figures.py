"""The GPU figures' tables: from what bench/lib/device.sh's figure steps brought back from a lent
GPU machine, and (the functions ending in ``_table``) RESULTS' tables of the device calls made so
far, each from its JSON (bench/lib/tables.py calls them).

    python -m bench.gpu_figures RESULTS --json bench/results/SUMMARY.json

RESULTS holds the step reports of bench/lib/device.sh (``e2e-fp16-4096.json`` or, with its
floor counted, ``e2e-fp16-4096-floor.json``, ``e2e-fp32-4096.json``, ``sweep.json``,
``generation.json``, ``quickstart.json``). Printed as Markdown; the JSON holds the same figures.
fp16's quality: each model's training loss at every log interval of the ``--fp16`` run against
the float32 run of the same command (same seed, same batches): all finite, and within
``--tolerance`` (1%) of float32's.
"""

import argparse
import json
import math
from pathlib import Path

from bench.lib.report import end_report, markdown_table

MODELS = ("tree2seq", "transformer")


def read(folder: Path, *names: str) -> dict | None:
    """The first of ``names`` that exists in ``folder``, read."""
    for name in names:
        if (folder / name).is_file():
            return json.loads((folder / name).read_text(encoding="utf-8"))
    return None


def throughput(report: dict) -> dict:
    """Each model's median time per update, target tokens a second and peak memory, and the
    ratios to the floors (per update and per target token) where the floor was counted."""
    row = {}
    for name in MODELS:
        median, runs = report["median"][name], report["runs"][name]
        peaks = [r["peak_gib"] for r in runs if "peak_gib" in r]
        row[name] = {"ms_per_update": 1000 * median["seconds_per_update"],
                     "target_tokens_per_second": median.get("target_tokens_per_second"),
                     "peak_gib": max(peaks) if peaks else None, "runs": len(runs),
                     "updates": [runs[0]["from_update"], runs[0]["to_update"]]}
    row["ratio"] = report["ratio"]["wall"]
    if "floor" in report:
        row.update({"floor": report["floor"]["ratio"], "ratio / floor": report["ratio / floor"],
                    "same_batches": report["floor"]["same_batches"],
                    "batch_sizes_as_logged": report["batch_sizes_as_logged"],
                    "per_target_token": report.get("per_target_token")})
    return row


def losses(report: dict, name: str) -> dict:
    """{update: training loss} of fairseq's log lines of the model's first run."""
    return {int(r["num_updates"]): float(r["loss"]) for r in report["logs"][name]
            if r["kind"] == "train_inner"}


def half_precision(fp16: dict, fp32: dict, tolerance: float) -> dict:
    """Per model: the losses of both runs at each logged update, the largest relative difference
    and whether every fp16 loss is finite and within ``tolerance`` of fp32's."""
    result = {}
    for name in MODELS:
        half, full = losses(fp16, name), losses(fp32, name)
        common = sorted(set(half) & set(full))
        worst = max((abs(half[u] - full[u]) / abs(full[u]) for u in common), default=None)
        finite = all(math.isfinite(half[u]) for u in half)
        result[name] = {"updates": common, "fp16": [half[u] for u in common],
                        "fp32": [full[u] for u in common], "largest_relative_difference": worst,
                        "all_finite": finite,
                        "within_tolerance": finite and worst is not None and worst <= tolerance}
    return result


def lines_of(summary: dict) -> list[str]:
    lines = []
    for tokens, row in summary["throughput"].items():
        lines += [f"\n--max-tokens {tokens}, --fp16 (updates {row['tree2seq']['updates'][0]}-"
                  f"{row['tree2seq']['updates'][1]}, {row['tree2seq']['runs']} run(s) a model)",
                  "| model | ms / update | target tokens / s | peak GiB |", "|---|---|---|---|"]
        for name in MODELS:
            r = row[name]
            peak = "-" if r["peak_gib"] is None else f"{r['peak_gib']:.2f}"
            lines.append(f"| {name} | {r['ms_per_update']:.1f} | "
                         f"{r['target_tokens_per_second']:,.0f} | {peak} |")
        text = f"tree2seq / Transformer: {row['ratio']:.3f}x per update"
        if "floor" in row:
            text += f", floor {row['floor']:.3f}x, ratio / floor {row['ratio / floor']:.3f}"
            per = row.get("per_target_token")
            if per:
                text += (f"; per target token {per['time_ratio']:.3f}x, floor {per['floor']:.3f}x,"
                         f" ratio / floor {per['ratio / floor']:.3f}")
            text += f" (same batches: {row['same_batches']}; {row['batch_sizes_as_logged']})"
        lines.append(text)
    for tokens, quality in summary.get("fp16_quality", {}).items():
        lines += [f"\nfp16 against float32 at --max-tokens {tokens}, training loss at each log "
                  "line:", *quality_table(quality)]
    if "sweep" in summary:
        lines += ["\nlargest --max-tokens (peak GiB of one update of the largest batch):"]
        for name in MODELS:
            sizes = summary["sweep"][name]["sizes"]
            cells = ", ".join(f"{s['max_tokens']}: " + (
                "OOM" if not s["fits"] else "fits" if s["peak_gib"] is None
                else f"{s['peak_gib']:.1f}") for s in sizes)
            lines.append(f"- {name}: largest {summary['sweep'][name]['largest_fitting']} "
                         f"({cells})")
    if "generation" in summary:
        lines += ["\n| batch | tree2seq sent/s | Transformer sent/s | ratio (time) | extra ms: "
                  "encoder | cross-attention | rest |", "|---|---|---|---|---|---|---|"]
        for row in summary["generation"]:
            extra = row["tree2seq_extra_ms"]
            rest = extra["generate_ms"] - extra["encoder_ms"] - extra["cross_attention_ms"]
            lines.append(f"| {row['batch_size']} | {row['tree2seq']['sentences_per_s']:.1f} | "
                         f"{row['transformer']['sentences_per_s']:.1f} | "
                         f"{row['tree2seq/transformer']['generate_ms']:.3f}x | "
                         f"{extra['encoder_ms']:+.0f} | {extra['cross_attention_ms']:+.0f} | "
                         f"{rest:+.0f} |")
    if "quickstart" in summary:
        lines.append("\nquickstart models trained on the GPU: " + ", ".join(
            f"{r['model']} {r['sacrebleu']:.2f} sacreBLEU ({r['updates']} updates, "
            f"{r['train_seconds']} s)" for r in summary["quickstart"]))
    return lines


def calls_table(report: dict, call: str) -> list[str]:
    """The figures of one device call of ``bench/results/gpu-calls.json`` (read from its logs, which
    git keeps at the call's commit, or the report's), a row each."""
    commit = report["calls"][call].get("commit", report["commit"])[:7]
    return markdown_table(
        ["figure", "value", f"read from (`git show {commit}:PATH`)"],
        [[f["what"], f["value"], ", ".join(f"`{s.strip()}`" for s in f["source"].split(","))]
         for f in report["calls"][call]["figures"]])


def cuda_training_table(report: dict) -> list[str]:
    """bench/training.py's update on the GPU: times, FLOP floor, peak memory, load average."""
    r, t, p = report["results"], report["results"]["tree2seq"], report["results"]["transformer"]
    ratio = r["tree2seq/transformer"]
    return markdown_table(
        ["tree2seq ms", "Transformer ms", "ratio", "side-by-side median", "FLOP floor",
         "time / floor", "peak MB tree2seq", "peak MB Transformer", "load average"],
        [[f"{t['ms_per_update']:.1f}", f"{p['ms_per_update']:.1f}",
          f"{ratio['ms_per_update']:.3f}x", f"{ratio['median_pair_ratio']:.3f}x",
          f"{ratio['flops (floor)']:.3f}x", f"{ratio['time / floor']:.3f}",
          f"{t['peak_mb']:.1f}", f"{p['peak_mb']:.1f}",
          f"{report['machine']['load_average'][0]:.2f}"]])


def cuda_accumulation_table(report: dict) -> list[str]:
    """bench/accumulation.py on the GPU: ms and MB of ours and the dense S, ms of the attentions
    and encoder layers."""
    def cell(row, name, unit):
        return "-" if not row[name] else f"{row[name][unit]:.{1 if unit == 'peak_mb' else 2}f}"
    return markdown_table(
        ["n", "ours ms", "ours MB", "dense S ms", "dense S MB", "MHA ms", "tree attention ms",
         "encoder layer ms", "tree encoder layer ms"],
        [[row["n"], cell(row, "ours", "ms"), cell(row, "ours", "peak_mb"), cell(row, "dense", "ms"),
          cell(row, "dense", "peak_mb"), cell(row, "mha", "ms"), cell(row, "tree-attn", "ms"),
          cell(row, "layer", "ms"), cell(row, "tree-layer", "ms")] for row in report["results"]])


def cuda_generation_table(report: dict) -> list[str]:
    """bench/generation.py on the GPU: sentences a second, the time ratio, the encoders."""
    rows = []
    for row in report["results"]:
        tree, plain = row["tree2seq"], row["transformer"]
        rows.append([row["batch_size"], f"{tree['sentences_per_s']:.1f}",
                     f"{plain['sentences_per_s']:.1f}",
                     f"{row['tree2seq/transformer']['generate_ms']:.3f}x",
                     f"{tree['encoder_ms']:.1f}", f"{plain['encoder_ms']:.1f}",
                     f"{100 * tree['encoder_share']:.1f}%"])
    return markdown_table(["batch", "tree2seq sent/s", "Transformer sent/s", "ratio (time)",
                           "encoder ms tree2seq", "encoder ms Transformer",
                           "tree2seq's encoder share"], rows)


def end_to_end_table(report: dict) -> list[str]:
    """bench/train_end_to_end.py's fairseq-train runs on the GPU: a model a row."""
    row = throughput(report)
    lines = markdown_table(
        ["model", "ms / update", "target tokens / s", "peak GiB", "updates timed"],
        [[name, f"{row[name]['ms_per_update']:.1f}",
          f"{row[name]['target_tokens_per_second']:,.0f}",
          "-" if row[name]["peak_gib"] is None else f"{row[name]['peak_gib']:.2f}",
          f"{row[name]['updates'][0]}-{row[name]['updates'][1]}"] for name in MODELS])
    return lines + ["", f"tree2seq / Transformer: {row['ratio']:.3f}x an update; load average "
                        f"{report['machine']['load_average'][0]:.2f}"]


def quality_table(quality: dict, tolerance: float | None = None) -> list[str]:
    """``half_precision``'s comparison, a model a row (the tolerance in the header where given)."""
    within = "within tolerance" + ("" if tolerance is None else f" ({100 * tolerance:g}%)")
    rows = []
    for name, r in quality.items():
        worst = r["largest_relative_difference"]
        rows.append([name, f"{r['updates'][0]}-{r['updates'][-1]}",
                     "-" if worst is None else f"{100 * worst:.2f}%",
                     "yes" if r["all_finite"] else "no", "yes" if r["within_tolerance"] else "no"])
    return markdown_table(["model", "logged updates", "largest relative difference", "all finite",
                           within], rows)


def fp16_losses_table(report: dict, fp32: str, tolerance: float = 0.01) -> list[str]:
    """fairseq-train's training losses in fp16 (``report``) against float32 (the report at
    ``fp32``, a path from the repository's root), the same commands: a model a row."""
    full = json.loads((Path(__file__).resolve().parents[1] / fp32).read_text(encoding="utf-8"))
    return quality_table(half_precision(report, full, tolerance), tolerance)


def sweep_table(report: dict) -> list[str]:
    """bench/training.py --max-tokens-sweep: the largest batch tried and whether every size fit."""
    rows = []
    for name in MODELS:
        largest = max(report[name]["sizes"], key=lambda s: s["max_tokens"])
        rows.append([name, f"{largest['max_tokens']:,}", f"{largest['sentences']:,}",
                     "yes" if report[name]["all_fit"] else "no",
                     f"{report[name]['largest_fitting']:,}"])
    return markdown_table(["model", "largest --max-tokens tried", "its sentences",
                           "every size fit", "largest fitting"], rows)


def summarize(folder: Path, tolerance: float) -> dict:
    summary = {"results": str(folder), "throughput": {}}
    machine = folder / "machine.txt"
    if machine.is_file():
        summary["machine"] = machine.read_text(encoding="utf-8", errors="replace")
    for path in sorted(folder.glob("e2e-fp16-*.json"), key=lambda p: int(p.stem.split("-")[2])):
        tokens = path.stem.split("-")[2]
        if path.stem.endswith("-floor") or tokens in summary["throughput"]:
            continue
        report = read(folder, f"e2e-fp16-{tokens}-floor.json", path.name)
        summary["throughput"][tokens] = throughput(report)
        summary.setdefault("load_average", {})[tokens] = [
            report["machine"].get("load_average"), report["machine"].get("load_average_after")]
    for path in sorted(folder.glob("e2e-fp32-*.json")):
        tokens = path.stem.split("-")[2]
        fp16 = read(folder, f"e2e-fp16-{tokens}.json")
        if fp16:
            summary.setdefault("fp16_quality", {})[tokens] = half_precision(
                fp16, read(folder, path.name), tolerance)
    sweep = read(folder, "sweep.json")
    if sweep:
        summary["sweep"] = {name: sweep[name] for name in MODELS if name in sweep}
    generation = read(folder, "generation.json")
    if generation:
        summary["generation"] = generation["results"]
        summary["generation_models"] = generation["models"]
    quickstart = read(folder, "quickstart.json")
    if quickstart:
        summary["quickstart"] = quickstart["results"]
    return summary


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("results", type=Path)
    parser.add_argument("--tolerance", type=float, default=0.01)
    parser.add_argument("--json", metavar="FILE")
    args = parser.parse_args(argv)
    summary = summarize(args.results, args.tolerance)
    return end_report(summary, lines_of(summary), args.json)


if __name__ == "__main__":
    main()
