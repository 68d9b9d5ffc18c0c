"""The encoders in half precision against float32 on the same weights: tree2seq's leaves and
nodes against fairseq's Transformer, and the part of the error the tree path's own arithmetic
makes.

    python -m bench.half_precision                        # data-bin built from tests/data/bible
    python -m bench.half_precision --data data/bible-en-fr-sample/data-bin \\
        --json bench/results/half-precision-cpu.json

For each seed, each model of the size (``--archs``, default the paper's IWSLT size) is built by
fairseq's task from the quickstart config's arguments and initialised from that seed; its
encoder reads --batches of the tree model's training batches (the Transformer the same
sentences) in float32 and again cast to each precision (``--precisions``: float16 and bfloat16,
what --fp16 and --bf16 run; ``amp``, float32 weights under ``torch.autocast`` to float16, what
--amp runs, here on the device's autocast). The error is the relative RMS of the difference over
the real units, ||half - float32|| / ||float32||, of the leaves' and of the nodes' final states.

The control: the tree encoder once more in half with its accumulation (``accumulate_values``,
Eqs. 5-10) computed in float64 from the same half-precision values and weights and rounded once;
the difference between the two is what the tree path's half-precision arithmetic adds.
"""

import argparse
import contextlib
import dataclasses
import statistics
import time

import torch
from fairseq import utils

import fairseq_tree.modules.tree_attention as tree_attention

from bench.lib.report import load_average, machine
from bench.lib.fairseq_training import (
    MODELS, build_setup, chosen_batches, collate, config_parser, run_benchmark, train_argv,
)

HALF = {"float16": torch.float16, "bfloat16": torch.bfloat16, "amp": torch.float16}
PARTS = {"leaves": ("encoder_out", "encoder_padding_mask"),
         "nodes": ("encoder_nodes", "encoder_node_padding_mask")}


@contextlib.contextmanager
def exact_accumulation():
    """Within it, the tree attentions accumulate in float64 and round the result once."""
    fast = tree_attention.accumulate_values

    def in_float64(plan, values, weights, table=None):
        double = {f.name: getattr(plan, f.name).double() for f in dataclasses.fields(plan)
                  if isinstance(getattr(plan, f.name), torch.Tensor)
                  and getattr(plan, f.name).is_floating_point()}
        table = None if table is None else table.double()
        return fast(dataclasses.replace(plan, **double), values.double(), weights.double(),
                    table).to(values.dtype)

    tree_attention.accumulate_values = in_float64
    try:
        yield
    finally:
        tree_attention.accumulate_values = fast


def encoder_states(model, batch: dict, precision: str | None) -> dict:
    """The encoder's final leaf and node states (float32) of ``batch`` on the real units,
    in float32 (``precision`` None) or the half precision named."""
    net_input = {k: v for k, v in batch["net_input"].items() if k != "prev_output_tokens"}
    context = contextlib.nullcontext()
    if precision == "amp":
        context = torch.autocast(next(model.parameters()).device.type, dtype=HALF["amp"])
    elif precision is not None:
        model = model.to(HALF[precision])
    with torch.no_grad(), context:
        out = model.encoder(**net_input)
    return {part: out[states][0].float()[~out[padding][0].t()]
            for part, (states, padding) in PARTS.items() if states in out}


def relative_error(half: torch.Tensor, exact: torch.Tensor) -> float:
    return float((half - exact).norm() / exact.norm())


def errors(setup, batches: list, precision: str, seed: int, device: str) -> dict:
    """The relative error of each part of the encoder's output in ``precision``, a freshly
    initialised model of ``setup``'s architecture (seeded), over ``batches``."""
    torch.manual_seed(seed)
    model = setup.task.build_model(setup.trainer.cfg.model).to(device).eval()
    exact = [encoder_states(model, batch, None) for batch in batches]
    weights = {k: v.clone() for k, v in model.state_dict().items()}
    runs = {"": contextlib.nullcontext}
    if setup.name == MODELS[0] and hasattr(tree_attention, "accumulate_values"):
        runs["exact accumulation"] = exact_accumulation  # (code before it had no such function)
    result = {}
    for label, context in runs.items():
        model.float().load_state_dict(weights)
        with context():
            half = [encoder_states(model, batch, precision) for batch in batches]
        for part in exact[0]:
            name = f"{part}, {label}" if label else part
            result[name] = relative_error(torch.cat([h[part] for h in half]),
                                          torch.cat([e[part] for e in exact]))
    return result


def on_device(batch: dict, device: str) -> dict:
    return utils.move_to_cuda(batch) if device == "cuda" else batch


def summary(rows: list) -> dict:
    keys = rows[0].keys()
    return {k: {"mean": statistics.mean(r[k] for r in rows),
                "sd": statistics.stdev(r[k] for r in rows) if len(rows) > 1 else 0.0}
            for k in keys}


def run(args, data_bin: str) -> dict:
    setups = {name: build_setup(name, train_argv(args, name, data_bin, arch))
              for name, arch in zip(MODELS, args.archs)}
    ids = chosen_batches(setups[MODELS[0]], args.batches)
    batches = {name: [on_device(collate(setup, i), args.device) for i in ids]
               for name, setup in setups.items()}
    report = {"benchmark": "encoders in half precision against float32 on the same weights",
              "settings": {k: v for k, v in vars(args).items() if k != "json"},
              "machine": machine(args.device), "date": time.strftime("%Y-%m-%d"),
              "batch_ids": ids, "results": {}}
    for precision in args.precisions:
        cell = {}
        for name, setup in setups.items():
            rows = [errors(setup, batches[name], precision, seed, args.device)
                    for seed in args.seeds]
            cell[name] = {"seeds": rows, **summary(rows)}
        tree, plain = cell[MODELS[0]], cell[MODELS[1]]
        cell["tree2seq/transformer"] = {
            part: tree[part]["mean"] / plain["leaves"]["mean"] for part in PARTS}
        if "nodes, exact accumulation" in tree:
            cell["tree path's own share of the nodes' error"] = (
                tree["nodes"]["mean"] / tree["nodes, exact accumulation"]["mean"] - 1)
        report["results"][precision] = cell
    report["machine"]["load_average_after"] = load_average()
    return report


def printed(report) -> list:
    lines = [f"{'precision':<10} {'transformer':>12} {'tree leaves':>12} {'tree nodes':>12} "
             f"{'nodes, exact acc.':>18}   (relative RMS error, mean over seeds)"]
    for precision, cell in report["results"].items():
        tree, plain = cell[MODELS[0]], cell[MODELS[1]]
        control = tree.get("nodes, exact accumulation", {"mean": float("nan")})["mean"]
        lines.append(f"{precision:<10} {plain['leaves']['mean']:>12.3e} "
                     f"{tree['leaves']['mean']:>12.3e} {tree['nodes']['mean']:>12.3e} "
                     f"{control:>18.3e}")
    return lines


def fenced_table(report) -> list:
    """RESULTS' table of ``report``: the printed one, as a code block."""
    return ["```", *printed(report), "```"]


def get_parser() -> argparse.ArgumentParser:
    parser = config_parser(__doc__.split("\n")[0])
    parser.add_argument("--archs", nargs=2, metavar=("TREE2SEQ", "TRANSFORMER"),
                        default=["tree2seq_iwslt_de_en", "transformer_iwslt_de_en"])
    parser.add_argument("--precisions", nargs="+", choices=sorted(HALF),
                        default=["float16", "bfloat16", "amp"])
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3, 4, 5])
    parser.add_argument("--batches", type=int, default=4, help="training batches read")
    return parser


def main(argv=None):
    return run_benchmark(get_parser(), run, printed, argv)


if __name__ == "__main__":
    main()
