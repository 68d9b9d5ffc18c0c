"""Beam-search generation speed: tree2seq against fairseq's Transformer of the same size, on the
same sentences.

    python -m bench.generation                       # data-bin built from tests/data/bible
    python -m bench.generation --data DATA_BIN --batch-sizes 1 32 --json FILE

Both models are built by fairseq's task and model machinery on the data-bin's dictionaries, with
random weights: the first of --archs by the ``tree_translation`` task on the source trees, the
second by the same task with ``--tree-input leaves-only``, on the leaves of the same trees, in the
same batches. Random weights put EOS anywhere (in practice hardly ever, so beams run to the
length limit), so the output length is forced: fairseq's SequenceGenerator with min_len =
max_len_b = --length and max_len_a = 0 blocks EOS before step --length and forces it there.
Every hypothesis is --length tokens + EOS and both models run --length + 1 decoder steps per
batch, so the comparison measures the cost of each step (and of the encoder), not how long each
model's translations would be.

For each batch size, over the test split (medians of --repeats passes, after a warm-up pass):
  generate   fairseq's generation (``task.inference_step``: encoder + beam search), from which
             sentences/s and ms per sentence
  encoder    the encoder alone (``forward_encoder`` of the generator) on the same batches
  steps      decoder steps per batch (calls of the output projection), hypothesis lengths, and
             the encoder-key projections per batch of each decoder layer's encoder attention
             (for tree2seq: builds of its source memory, keys and values in one product): 1
             where keys and values (for tree2seq: with the accumulated nodes) are cached over
             the steps
and the ratios tree2seq / transformer of both times. Without --data the test split is BPE'd and
binarized from tests/data/bible into a temporary folder, as scripts/example.sh does.
"""

import argparse
import shlex
import tempfile
import time
from dataclasses import dataclass

import torch
from fairseq import checkpoint_utils, options, tasks, utils
from fairseq.dataclass.utils import convert_namespace_to_omegaconf

from bench.lib.data_bins import BIBLE, build_data_bin, data_bin_parser
from bench.lib.report import load_average, machine, markdown_table, write_json
from bench.lib.timing import seconds

import fairseq_tree  # noqa: F401  (registers the plugin)
from fairseq_tree.modules import tree_attention
MODELS = ("tree2seq", "transformer")  # read the trees / the leaves of the same trees


@dataclass
class Setup:
    """One model ready to generate: its task (test split loaded), model and generator."""

    arch: str
    task: object
    model: torch.nn.Module
    generator: object


def generation_cfg(data: str, arch: str, tree_input: str, args):
    """fairseq's flags parsed as fairseq-generate would, with the model flags of fairseq-train:
    the output forced to ``args.length`` tokens, or (``args.length`` 0) fairseq-generate's own
    length limits."""
    parser = options.get_generation_parser()
    options.add_model_args(parser)
    length = ["--min-len", str(args.length), "--max-len-a", "0", "--max-len-b",
              str(args.length)] if args.length else []
    argv = [data, "--task", "tree_translation", "--tree-input", tree_input, "--arch", arch,
            "--gen-subset", "test", "--beam", str(args.beam), *length,
            *(["--fp16"] if args.fp16 else []), *shlex.split(args.model_args)]
    return convert_namespace_to_omegaconf(options.parse_args_and_arch(parser, argv))


def build_setup(data: str, arch: str, tree_input: str, args, checkpoint: str | None = None):
    """The task (test split loaded), the model (randomly initialised, or trained: the
    ``checkpoint`` fairseq-train saved, loaded as fairseq-generate loads it) and fairseq's
    SequenceGenerator."""
    cfg = generation_cfg(data, arch, tree_input, args)
    if checkpoint is None:
        task = tasks.setup_task(cfg.task)
        torch.manual_seed(args.seed)
        model = task.build_model(cfg.model)
    else:
        (model,), _, task = checkpoint_utils.load_model_ensemble_and_task(
            [checkpoint], arg_overrides={"data": data})
        arch = f"{model.cfg.arch if hasattr(model, 'cfg') else arch} (trained: {checkpoint})"
    task.load_dataset("test")
    model = model.half() if args.fp16 else model
    model = model.to(args.device)
    model.prepare_for_inference_(cfg)  # eval mode, as fairseq-generate prepares a model
    return Setup(arch, task, model, task.build_generator([model], cfg.generation))


def batch_ids(setup: Setup, batch_size: int, max_batches: int | None = None) -> list:
    """Sentence ids of each batch of ``batch_size``: fairseq's batching of the test split (by
    length, as the tree2seq task sorts it), used for both models so they see the same batches;
    at most ``max_batches`` of them, evenly spaced over that length order."""
    dataset = setup.task.dataset("test")
    batches = dataset.batch_by_size(dataset.ordered_indices(), max_sentences=batch_size)
    if max_batches and len(batches) > max_batches:
        step = len(batches) / max_batches
        batches = [batches[int(i * step)] for i in range(max_batches)]
    return [ids.tolist() for ids in batches]


def collate(setup: Setup, ids: list, device: str) -> dict:
    """One batch as this model's task collates it, moved to ``device`` beforehand so that no
    timing includes data loading."""
    dataset = setup.task.dataset("test")
    batch = dataset.collater([dataset[i] for i in ids])
    return utils.apply_to_sample(lambda t: t.to(device), batch)


def generate(setup: Setup, batches: list) -> list:
    """Beam search over every batch, as fairseq-generate runs it."""
    return [setup.task.inference_step(setup.generator, [setup.model], batch) for batch in batches]


def encode(setup: Setup, batches: list):
    """The encoder alone, called as the generator calls it."""
    with torch.no_grad():
        for batch in batches:
            setup.generator.model.forward_encoder(batch["net_input"])


class MemoryBuildCounter:
    """Calls ``hook`` once for every layer whose cross-attention memory tree2seq builds
    (``tree_attention.source_memories``, whether a layer builds its own or the decoder builds
    all together), until ``remove()``."""

    def __init__(self, hook):
        self.build = tree_attention.source_memories

        def counted(attentions, tree):
            for _ in attentions:
                hook()
            return self.build(attentions, tree)

        tree_attention.source_memories = counted

    def remove(self):
        tree_attention.source_memories = self.build


def decoding_counts(setup: Setup, batches: list) -> dict:
    """One generation pass (the warm-up) counting the decoder steps (output projections) and
    the encoder-key projections of the decoder layers' encoder attentions (for tree2seq, the
    builds of the source memory, keys and values in one product: each layer's own, or the
    decoder's for all layers together), per batch."""
    calls = {"steps": 0, "keys": 0}

    def counter(name):
        return lambda *_: calls.__setitem__(name, calls[name] + 1)

    decoder = setup.model.decoder
    hooks = [decoder.output_projection.register_forward_hook(counter("steps"))]
    if getattr(setup.model, "reads_trees", False):  # tree cross-attention: K and V in one product
        hooks.append(MemoryBuildCounter(counter("keys")))
    else:
        hooks += [layer.encoder_attn.k_proj.register_forward_hook(counter("keys"))
                  for layer in decoder.layers]
    try:
        outputs = generate(setup, batches)
    finally:
        for hook in hooks:
            hook.remove()
    lengths = [len(beams[0]["tokens"]) for output in outputs for beams in output]
    return {"steps_per_batch": calls["steps"] / len(batches),
            "encoder_keys_per_batch_and_layer": calls["keys"] / len(batches) / len(decoder.layers),
            "hypothesis_lengths": sorted(set(lengths)) if len(set(lengths)) <= 3 else
            [min(lengths), round(sum(lengths) / len(lengths), 1), max(lengths)],
            "hypotheses_per_sentence": sorted({len(beams) for out in outputs for beams in out})}


class ModuleTimer:
    """Time spent in the forward calls of ``modules``: CUDA events on a GPU (the stream's time
    from each call's first kernel to its last, idle gaps of a launch-bound stream included, so
    what the calls cost the generation), the CPU clock elsewhere."""

    def __init__(self, modules, device: str):
        self.cuda, self.spans, self.open = device == "cuda", [], {}
        self.handles = [h for m in modules for h in (m.register_forward_pre_hook(self.start),
                                                     m.register_forward_hook(self.stop))]

    def now(self):
        if not self.cuda:
            return time.perf_counter()
        event = torch.cuda.Event(enable_timing=True)
        event.record()
        return event

    def start(self, module, _):
        self.open[id(module)] = self.now()

    def stop(self, module, _, __):
        self.spans.append((self.open.pop(id(module)), self.now()))

    def seconds(self) -> float:
        for handle in self.handles:
            handle.remove()
        if not self.cuda:
            return sum(end - start for start, end in self.spans)
        torch.cuda.synchronize()
        return sum(start.elapsed_time(end) for start, end in self.spans) / 1000


def cross_attention_seconds(setup: Setup, batches: list, device: str) -> float:
    """One generation pass, the decoder layers' encoder attentions timed (``ModuleTimer``):
    tree2seq's attends over leaves and nodes, the Transformer's over the leaves."""
    timer = ModuleTimer([layer.encoder_attn for layer in setup.model.decoder.layers], device)
    generate(setup, batches)
    return timer.seconds()


def measure(setup: Setup, batches: list, args) -> dict:
    """Times (medians of ``args.repeats``) and counts of one model at one batch size."""
    counts = decoding_counts(setup, batches)
    generate_s = seconds(lambda: generate(setup, batches), args.repeats, args.device, warm_ups=0)
    encoder_s = seconds(lambda: encode(setup, batches), args.repeats, args.device)
    cross_s = cross_attention_seconds(setup, batches, args.device)
    sentences = sum(len(batch["id"]) for batch in batches)
    return {"generate_ms": 1000 * generate_s, "encoder_ms": 1000 * encoder_s,
            "cross_attention_ms": 1000 * cross_s,
            "sentences_per_s": sentences / generate_s,
            "ms_per_sentence": 1000 * generate_s / sentences,
            "encoder_share": encoder_s / generate_s, **counts}


def compare(setups: dict, batch_size: int, args) -> dict:
    """One result row: both models on the same batches of ``batch_size`` sentences."""
    ids = batch_ids(setups["tree2seq"], batch_size, args.max_batches)
    row = {"batch_size": batch_size, "batches": len(ids), "sentences": sum(map(len, ids))}
    for name in MODELS:
        batches = [collate(setups[name], batch, args.device) for batch in ids]
        row[name] = measure(setups[name], batches, args)
    row["tree2seq/transformer"] = {key: row["tree2seq"][key] / row["transformer"][key]
                                   for key in ("generate_ms", "encoder_ms", "cross_attention_ms")}
    row["tree2seq_extra_ms"] = {
        key: row["tree2seq"][key] - row["transformer"][key]
        for key in ("generate_ms", "encoder_ms", "cross_attention_ms")}
    return row


def model_summary(setup: Setup) -> dict:
    """Architecture name, parameters and the sizes read off the built model."""
    encoder, decoder = setup.model.encoder, setup.model.decoder
    return {"arch": setup.arch, "parameters": sum(p.numel() for p in setup.model.parameters()),
            "embed_dim": encoder.layers[0].embed_dim,
            "ffn": [encoder.layers[0].fc1.out_features, decoder.layers[0].fc1.out_features],
            "heads": [encoder.layers[0].self_attn.num_heads, decoder.layers[0].self_attn.num_heads],
            "layers": [len(encoder.layers), len(decoder.layers)]}


def split_sizes(setup: Setup) -> dict:
    """Mean leaves and nodes per test sentence, as the tree2seq encoder reads them, and mean
    reference length (tokens; EOS included in both)."""
    dataset = setup.task.dataset("test")
    samples = [dataset[i] for i in range(len(dataset))]
    return {key: sum(s[name].numel() for s in samples) / len(samples)
            for key, name in (("leaves", "source"), ("nodes", "node_labels"), ("target", "target"))}


LABELS = ("batch", "model", "sent/s", "ms/sent", "generate ms", "encoder ms", "encoder %",
          "cross-attn ms", "steps/batch", "hyp len", "keys/batch/layer")


def table_line(cells) -> str:
    """Cells right-aligned under their labels, the model name left-aligned."""
    return "  ".join(f"{cell:<11}" if label == "model" else f"{cell:>{max(len(label), 6)}}"
                     for cell, label in zip(cells, LABELS))


def table_lines(row) -> list:
    """Printed lines of one batch size: each model, then the ratio tree2seq / transformer."""
    lines = []
    for name in MODELS:
        r = row[name]
        lines.append(table_line([
            row["batch_size"], name, f"{r['sentences_per_s']:.2f}", f"{r['ms_per_sentence']:.1f}",
            f"{r['generate_ms']:.0f}", f"{r['encoder_ms']:.1f}", f"{100 * r['encoder_share']:.1f}",
            f"{r['cross_attention_ms']:.1f}", f"{r['steps_per_batch']:g}", ",".join(map(str, r["hypothesis_lengths"])),
            f"{r['encoder_keys_per_batch_and_layer']:g}"]))
    ratio = row["tree2seq/transformer"]
    lines.append(table_line([row["batch_size"], "tree/plain", "-", "-",
                             f"{ratio['generate_ms']:.3f}x", f"{ratio['encoder_ms']:.3f}x", "-",
                             f"{ratio['cross_attention_ms']:.3f}x"]))
    extra = row["tree2seq_extra_ms"]
    lines.append(f"  tree2seq's extra {extra['generate_ms']:.0f} ms: encoder "
                 f"{extra['encoder_ms']:+.0f}, cross-attention {extra['cross_attention_ms']:+.0f}, "
                 f"the rest {extra['generate_ms'] - extra['encoder_ms'] - extra['cross_attention_ms']:+.0f}")
    return lines


def generation_table(report) -> list:
    """RESULTS' table: each batch size's two models, then their ratio tree2seq / transformer of
    the generation and encoder times (a cross-attention column where the report measured it)."""
    cross = all("cross_attention_ms" in row[name] for row in report["results"] for name in MODELS)
    header = ["batch", "model", "sentences/s", "ms/sentence", "generate ms", "encoder ms",
              "encoder share", *(["cross-attn ms"] if cross else []), "steps/batch", "hyp len",
              "keys/batch/layer"]
    rows = []
    for row in report["results"]:
        for name in MODELS:
            r = row[name]
            rows.append([row["batch_size"], name, f"{r['sentences_per_s']:.2f}",
                         f"{r['ms_per_sentence']:.1f}", f"{r['generate_ms']:.0f}",
                         f"{r['encoder_ms']:.1f}", f"{100 * r['encoder_share']:.1f}%",
                         *([f"{r['cross_attention_ms']:.1f}"] if cross else []),
                         f"{r['steps_per_batch']:g}", ",".join(map(str, r["hypothesis_lengths"])),
                         f"{r['encoder_keys_per_batch_and_layer']:g}"])
        ratio = row["tree2seq/transformer"]
        rows.append([row["batch_size"], "tree2seq/transformer", "", "",
                     f"{ratio['generate_ms']:.3f}x", f"{ratio['encoder_ms']:.3f}x", "",
                     *([f"{ratio['cross_attention_ms']:.3f}x"] if cross else []), "", "", ""])
    return markdown_table(header, rows)


def preamble(report) -> list:
    """What was compared, printed above the table."""
    plain, tree = report["models"]["transformer"], report["models"]["tree2seq"]
    settings, source = report["settings"], report["source"]
    weights = "trained" if settings["checkpoints"] else "random weights"
    length = (f"output forced to {settings['length']} tokens + EOS (min_len = max_len_b = "
              f"{settings['length']}; the references have {source['target']:.1f} on average): "
              f"both models decode {settings['length'] + 1} steps per batch"
              if settings["length"] else
              f"each model's own translations (fairseq-generate's length limits; the "
              f"references have {source['target']:.1f} tokens on average)")
    return [
        f"tree2seq: {tree['arch']}, {tree['parameters']:,} parameters; transformer: "
        f"{plain['arch']}, {plain['parameters']:,} parameters ({weights}"
        f"{', fp16' if settings['fp16'] else ''})",
        f"{report['sentences']} test sentences of {report['data']}: {source['leaves']:.1f} leaves "
        f"+ {source['nodes']:.1f} nodes on average; beam {settings['beam']}",
        length,
        f"device {settings['device']}, {torch.get_num_threads()} threads, load average "
        f"{report['machine']['load_average'][0]:.2f} at the start, medians of "
        f"{settings['repeats']} passes after a warm-up pass",
        "keys/batch/layer: encoder-key projections (tree2seq: source-memory builds) per batch "
        "in each decoder layer (1: the encoder attention's keys and values are cached over the "
        "steps)",
    ]


def get_parser() -> argparse.ArgumentParser:
    parser = data_bin_parser(__doc__.split("\n")[0])
    parser.add_argument("--archs", nargs=2, metavar=("TREE2SEQ", "TRANSFORMER"),
                        default=["tree2seq_iwslt_de_en", "transformer_iwslt_de_en"])
    parser.add_argument("--model-args", default="--share-all-embeddings",
                        help="more fairseq model flags for both models, one string")
    parser.add_argument("--beam", type=int, default=5)
    parser.add_argument("--length", type=int,
                        help="forced output length in tokens (default 25 with random weights; "
                        "with --checkpoints the translations' own lengths, fairseq-generate's "
                        "limits; 0 also asks for those)")
    parser.add_argument("--checkpoints", nargs=2, metavar=("TREE2SEQ", "TRANSFORMER"),
                        help="trained models (fairseq-train's checkpoints on --data) instead of "
                        "random weights of --archs")
    parser.add_argument("--fp16", action="store_true", help="generate in half precision, as "
                        "fairseq-generate --fp16")
    parser.add_argument("--max-batches", type=int, metavar="K",
                        help="at most K batches at each batch size, evenly spaced over the "
                        "test split's length order (default: every batch)")
    parser.add_argument("--batch-sizes", type=int, nargs="+", default=[1, 32], metavar="B")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=1, help="of the random weights")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--json", metavar="FILE", help="also write the results here")
    parser.add_argument("--markdown", action="store_true",
                        help="at the end, print the table as bench/RESULTS.md shows it")
    return parser


def run(args, data: str) -> dict:
    """Build both models, measure every batch size, print as it goes; returns the report."""
    if args.length is None:
        args.length = 0 if args.checkpoints else 25
    checkpoints = args.checkpoints or (None, None)
    setups = dict(zip(MODELS, (build_setup(data, args.archs[0], "tree", args, checkpoints[0]),
                               build_setup(data, args.archs[1], "leaves-only", args,
                                           checkpoints[1]))))
    report = {
        "benchmark": "beam-search generation, tree2seq vs transformer, "
                     + ("forced output length" if args.length else "trained models"),
        "settings": {k: v for k, v in vars(args).items() if k not in ("json", "markdown")},
        "data": args.data or f"{BIBLE.relative_to(BIBLE.parents[2])} (BPE {args.bpe_symbols})",
        "sentences": len(setups["tree2seq"].task.dataset("test")),
        "source": split_sizes(setups["tree2seq"]),
        "models": {name: model_summary(setup) for name, setup in setups.items()},
        "machine": machine(args.device),
        "date": time.strftime("%Y-%m-%d"),
        "results": [],
    }
    print("\n".join(preamble(report) + [table_line(LABELS)]), flush=True)
    for batch_size in args.batch_sizes:
        report["results"].append(compare(setups, batch_size, args))
        print("\n".join(table_lines(report["results"][-1])), flush=True)
    report["machine"]["load_average_after"] = load_average()
    return report


def main(argv=None):
    args = get_parser().parse_args(argv)
    with tempfile.TemporaryDirectory() as work:
        report = run(args, args.data or build_data_bin(work, args.bpe_symbols))
    if args.markdown:
        print("\n".join(generation_table(report)), flush=True)
    if args.json:
        write_json(args.json, report)
    return report


if __name__ == "__main__":
    main()
