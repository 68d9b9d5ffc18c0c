"""Scores a checkpoint on McCoy et al.'s (2020) tense reinflection or question formation
(data-prep/prepare-hierarchical-generalization.sh): on the in-distribution test set and on the
generalization set, how often the output is the whole target, how often the word the paper
scores is right (tense: the main verb; question: the first word), and how often that word follows
the linear rule instead (the verb agreeing with the noun nearest before it; the first auxiliary
moved), overall and by what modifies the main subject (none, PP, relative clause).

    python -m bench.hierarchical_generalization --recipe data/tense \
        --checkpoint checkpoints/tense/tree2seq/checkpoint_best.pt --json tense-tree2seq.json

reads the recipe folder's gold trees of each split (``--split``, default test and gen), gives the
model what the recipe gave it (the gold trees themselves, or the recipe's own parses of them),
decodes greedily (``--beam``), and writes the JSON and prints its table. ``--gold-trees FILE``
scores other sentences of the same grammar instead, one bracketed gold tree a line (as the
recipe writes them: the marker under the root): held-out sets the repository does not contain
(a recipe of parsed trees parses their tokens with its parser, through fairseq_tree.hub).
A language model's recipe (``TASK-lm``, fairseq's ``transformer_lm``) is scored on its greedy
continuation of each source sentence and marker.
"""

import argparse
import json
import sys
import time
from pathlib import Path

from bench.lib.report import end_report, machine, markdown_table
from fairseq_tree.data import recipe as data_recipe
from fairseq_tree.errors import FairseqTreeError
from fairseq_tree.trees import TreeSyntaxError, format_bracketed, parse_bracketed
from bench.tasks import hierarchical_grammar as hg

ROOT = Path(__file__).resolve().parents[1]
MEASURES = ("full_sentence", "scored_word", "linear_word", "linear_sentence")
SCORED_WORD = {"tense": "main verb", "question": "first word"}


def read_gold_trees(path: Path) -> list:
    """The gold trees of ``path``, one a line; a line that is no tree of these grammars is an
    error naming the file and line."""
    trees = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        try:
            tree = parse_bracketed(line)
            hg.analyze(tree)
        except (TreeSyntaxError, hg.NotOfTheGrammar) as error:
            raise FairseqTreeError(f"{path}:{number}: {error}") from None
        trees.append(tree)
    return trees


def example_scores(tree, analysis: hg.Analysis, output: list[str]) -> dict:
    """One example's measures (booleans): the output is the target; its scored word is the
    target's; it is the linear rule's where the two rules differ there (else False); the output
    is the linear rule's whole target where that differs from the hierarchical one."""
    hierarchical, linear = hg.target(tree), hg.target(tree, linear=True)
    index = hg.scored_index(analysis)
    word = output[index] if index < len(output) else None
    decisive = hierarchical[index] != linear[index]
    return {"full_sentence": output == hierarchical, "scored_word": word == hierarchical[index],
            "linear_word": decisive and word == linear[index],
            "linear_sentence": linear != hierarchical and output == linear}


def summarize(trees: list, outputs: list[list[str]]) -> dict:
    """{"all": ..., "by_subject_modifier": {modifier: ...}}, each the count of examples and the
    percentage of each measure."""
    groups: dict = {"all": []}
    for tree, output in zip(trees, outputs, strict=True):
        analysis = hg.analyze(tree)
        scores = example_scores(tree, analysis, output)
        groups["all"].append(scores)
        groups.setdefault(analysis.subject_modifier, []).append(scores)

    def percentages(rows):
        return {"examples": len(rows), **{measure: round(100 * sum(r[measure] for r in rows)
                                                         / len(rows), 2) for measure in MEASURES}}

    return {"all": percentages(groups.pop("all")),
            "by_subject_modifier": {modifier: percentages(groups[modifier])
                                    for modifier in hg.MODIFIERS if modifier in groups}}


def model_inputs(trees: list, recipe: dict, parsed: Path | None = None) -> tuple[list[str], bool]:
    """What the model reads for these gold trees: the trees themselves (a gold-tree recipe), the
    recipe's own parse of them (``parsed``, a recipe split's trees/ file: what the model was
    trained and validated on), or the source tokens for the hub to parse as the recipe did."""
    if recipe["trees"] == "gold":
        return [format_bracketed(tree) for tree in trees], True
    if parsed is not None:
        lines = parsed.read_text(encoding="utf-8").splitlines()
        if len(lines) != len(trees):
            raise FairseqTreeError(f"{parsed}: {len(lines)} trees for {len(trees)} gold trees")
        return lines, True
    return [" ".join(hg.leaves(tree)) for tree in trees], False


def is_language_model(recipe: dict) -> bool:
    return recipe.get("kind") == "language_model"


def load(checkpoint: Path, recipe_dir: Path, batch_size: int, recipe: dict | None = None):
    """The checkpoint through the translation hub, with the recipe's text steps (a language
    model's recipe: through fairseq's language-model hub)."""
    if is_language_model(recipe or {}):
        from fairseq.models.transformer_lm import TransformerLanguageModel

        return TransformerLanguageModel.from_pretrained(
            str(checkpoint.parent), checkpoint.name, str(recipe_dir / "data-bin"),
            batch_size=batch_size, max_tokens=None)
    from fairseq_tree import hub

    return hub.from_pretrained(str(checkpoint.parent), checkpoint.name, recipe=str(recipe_dir),
                               detokenize=False, batch_size=batch_size)


def continue_sequences(model, prefixes: list[str]) -> list[list[str]]:
    """A language model's greedy continuation of each prefix (a source sentence and its
    marker) up to EOS, at most a token for every prefix token and one more, as ``translate``
    bounds a target."""
    encoded = [model.encode(prefix) for prefix in prefixes]  # each ends in EOS, which
    # fairseq's language_modeling task moves to the front: the model's start of a sequence
    outputs = []
    for ids, hypotheses in zip(encoded, model.generate(encoded, beam=1, max_len_a=2,
                                                       max_len_b=1)):
        continuation = hypotheses[0]["tokens"][len(ids) - 1:]
        outputs.append(model.string(continuation).split())
    return outputs


def translate(model, lines: list[str], trees: bool, beam: int,
              batch_size: int) -> list[list[str]]:
    """The outputs (their leaves, where the model writes trees), at most a token for every
    source token and one more (fairseq's length limit): every target of both tasks is one
    token shorter than its source; a written tree of n leaves has at most 2n - 1 nodes of 3
    tokens each, 7 tokens a source token then."""
    tokens_per_word = model.task.output_tree.TOKENS_PER_WORD if model.task.output_tree else 1
    outputs = []
    for start in range(0, len(lines), batch_size * 8):
        outputs += model.translate(lines[start:start + batch_size * 8], beam=beam, trees=trees,
                                   max_len_a=tokens_per_word, max_len_b=1)
    return [output.split() for output in outputs]


def score(recipe_dir: Path, checkpoint: Path, sources: dict[str, Path], recipe: dict,
          beam: int = 1, batch_size: int = 64, parsed: dict[str, Path] | None = None) -> dict:
    """{name: summary} of the checkpoint on each gold-tree file of ``sources`` ({name: path}),
    the model loaded once; ``parsed`` ({name: path}) the recipe's own parses of those that are
    its splits."""
    model = load(checkpoint, recipe_dir, batch_size, recipe)
    splits = {}
    for name, path in sources.items():
        trees = read_gold_trees(path)
        if is_language_model(recipe):
            outputs = continue_sequences(model, [" ".join(hg.leaves(tree)) for tree in trees])
        else:
            lines, given_trees = model_inputs(trees, recipe, (parsed or {}).get(name))
            outputs = translate(model, lines, given_trees, beam, batch_size)
        splits[name] = summarize(trees, outputs)
        print(f"{name}: {splits[name]['all']}", file=sys.stderr)
    return splits


def key_columns(keys: dict, offset: int, spans, real_nodes, num_columns: int) -> dict:
    """{role: column indices} of one source among the keys [leaves; nodes] of a batch row (leaf
    ``j`` at column ``offset + j``, node ``m`` at ``num_columns + m``): the words of ``keys``
    (``hg.key_words`` of its tree); the nodes of each of its phrases' spans ("... phrase"; none where the
    tree has no such node; a node counts once, for the first role it fits); the nodes that
    start at the main verb or auxiliary (its VP), those over it and the subject (the clause,
    the root); the other words, the other nodes and EOS (the last leaf)."""
    columns = {role: [offset + index] for role, index in keys["words"].items()}
    taken = {offset + index for index in keys["words"].values()}
    node_spans = {num_columns + m: (spans[m][0] - offset, spans[m][1] - offset)
                  for m in real_nodes}

    def claim(role, fits):
        columns[role] = [c for c, span in node_spans.items() if c not in taken and fits(span)]
        taken.update(columns[role])

    main = keys["main_index"]
    for name, phrase in keys["phrases"].items():
        claim(f"{name} phrase", lambda span, phrase=tuple(phrase): span == phrase)
    claim("main word's VP", lambda span: span[0] == main)
    claim("clause and root", lambda span: span[0] < main < span[1])
    eos = offset + keys["length"]
    columns["other words"] = [c for c in range(offset, eos) if c not in taken]
    claim("other nodes", lambda span: True)
    columns["EOS"] = [eos]
    return columns


class Shares:
    """Sums of attention shares {role: probability} by group, as mean percentages."""

    def __init__(self):
        self.groups: dict = {}

    def add(self, group, shares: dict):
        bucket = self.groups.setdefault(group, {"count": 0, "shares": {}})
        bucket["count"] += 1
        for role, share in shares.items():
            bucket["shares"][role] = bucket["shares"].get(role, 0.0) + share

    def percent(self, group, per: int = 1) -> dict:
        bucket = self.groups[group]
        return {role: round(100 * total / bucket["count"], 2)
                for role, total in bucket["shares"].items()} | {"examples": bucket["count"] // per}

    def report(self, layers: int) -> dict:
        return {"all": self.percent("all", layers),
                "by_prediction": {group: self.percent(group, layers)
                                  for group in PREDICTIONS if group in self.groups},
                "per_layer": {str(layer): self.percent(layer)
                              for layer in range(1, layers + 1)}}


PREDICTIONS = ("hierarchical", "linear", "other")


def head_weights(module, args, kwargs):
    """A forward pre-hook that asks an attention for its per-head weights."""
    return args, {**kwargs, "need_weights": True, "need_head_weights": True}


def heads_averaged(weights):
    """B x T x S weights: fairseq's attention returns H x B x T x S per head, or (torch's fused
    path) their mean already."""
    return weights.mean(dim=0) if weights.dim() == 4 else weights


def decoder_attention(checkpoint: Path, recipe_dir: Path, recipe: dict, split: str = "gen",
                      max_sentences: int | None = None, max_tokens: int = 4096) -> dict:
    """Where a decoder looks when it writes the scored word (tense: the main verb; question:
    the first word), teacher-forced on the hierarchical target, heads averaged, in percent:
    a tree2seq decoder's cross-attention on each role of ``key_columns`` (fairseq-tree-analyze's
    recorder), and for tense any decoder's self-attention on the target prefix it has written
    (the same words at the same positions): on the main subject's noun, on the noun nearest
    before the verb, on the rest. Each overall (layers averaged), per decoder layer, and by what
    the model predicts there (the hierarchical rule's word, the linear rule's, another)."""
    import torch

    from fairseq_tree.cli.analyze import AttentionRecorder, load

    model, task = load(str(recipe_dir / "data-bin"), str(checkpoint), trees_only=False)
    reads_trees = getattr(task.cfg, "tree_input", "tree") == "tree"
    binarized = recipe["splits"][split]
    trees = read_gold_trees(recipe_dir / recipe["gold_trees"] / f"{split}.src")
    task.load_dataset(binarized)
    batches = task.get_batch_iterator(task.dataset(binarized), max_tokens=max_tokens,
                                      max_positions=None, ignore_invalid_inputs=False,
                                      ).next_epoch_itr(shuffle=False)
    cross: list = []
    recorder = AttentionRecorder(model, lambda kind, layer, probs:
                                 cross.append(probs.mean(dim=1)) if kind == "decoder" else None)
    prefix: list = []
    handles = []
    if recipe["task"] == "tense":
        for layer in model.decoder.layers:
            handles.append(layer.self_attn.register_forward_pre_hook(head_weights,
                                                                     with_kwargs=True))
            handles.append(layer.self_attn.register_forward_hook(
                lambda module, args, output: prefix.append(heads_averaged(output[1]))))
    shares = {"cross_attention": Shares(), "self_attention": Shares()}
    model.eval()
    try:
        with torch.no_grad():
            for sample in batches:
                cross.clear()
                prefix.clear()
                logits = model(**sample["net_input"])[0]
                net = sample["net_input"]
                width = net["src_tokens"].size(1)
                spans = net["src_node_spans"].tolist() if reads_trees else None
                for row, index in enumerate(sample["id"].tolist()):
                    if max_sentences is not None and index >= max_sentences:
                        continue
                    tree = trees[index]
                    keys = hg.key_words(tree)
                    position = keys["scored_index"]
                    offset = width - int(net["src_lengths"][row]) if task.cfg.left_pad_source \
                        else 0
                    columns = {}
                    if reads_trees:
                        real = [m for m, (a, b) in enumerate(spans[row]) if a < b]
                        columns["cross_attention"] = key_columns(keys, offset, spans[row], real,
                                                                 width)
                    if prefix:  # target token j is the decoder's input j + 1 (after EOS)
                        words = keys["words"]
                        named = {role: [words[role] + 1] for role in ("subject noun",
                                                                      "nearest noun")}
                        columns["self_attention"] = {**named, "rest of the prefix": [
                            j for j in range(position + 1)
                            if j not in (words["subject noun"] + 1, words["nearest noun"] + 1)]}
                    predicted = task.target_dictionary[int(logits[row, position].argmax())]
                    group = ("hierarchical" if predicted == hg.target(tree)[position] else
                             "linear" if predicted == hg.target(tree, linear=True)[position]
                             else "other")
                    for kind, probs in (("cross_attention", cross), ("self_attention", prefix)):
                        for layer, weights in enumerate(probs):
                            at = weights[row, position]
                            one = {role: float(at[cols].sum()) if cols else 0.0
                                   for role, cols in columns[kind].items()}
                            for name in ("all", group, layer + 1):
                                shares[kind].add(name, one)
    finally:
        recorder.remove()
        for handle in handles:
            handle.remove()
    if not any(found.groups for found in shares.values()):
        raise FairseqTreeError(f"{checkpoint}: nothing to analyze (no tree to cross-attend, and "
                               "a question's first word has no prefix)")
    return {"split": split, "query": f"the target position of the {SCORED_WORD[recipe['task']]}",
            **{kind: found.report(len(model.decoder.layers))
               for kind, found in shares.items() if found.groups},
            "choices": "teacher forcing on the hierarchical target; probability mass, heads and "
                       "layers averaged with equal weight; prediction: the argmax there"}


def read_recipe(recipe_dir: Path) -> dict:
    """The recipe.json of a prepare-hierarchical-generalization.sh folder."""
    recipe = data_recipe.read_recipe(recipe_dir)
    if recipe.get("task") not in hg.TASKS:
        raise FairseqTreeError(f"{data_recipe.recipe_path(recipe_dir)}: not a recipe of "
                               "prepare-hierarchical-generalization.sh (no task)")
    return recipe


def recipe_sources(recipe_dir: Path, recipe: dict, splits) -> dict[str, Path]:
    """{split: the split's gold-tree file} of a recipe folder."""
    return {split: recipe_dir / recipe["gold_trees"] / f"{split}.src" for split in splits}


def recipe_parses(recipe_dir: Path, splits) -> dict[str, Path]:
    """{split: the split's source trees as the recipe wrote them (its parser's)}."""
    return {split: recipe_dir / "trees" / f"{split}.src" for split in splits}


def markdown_lines(report: dict, splits=None) -> list[str]:
    """The table of a report (or of several models' reports, ``{"models": {name: report}}``):
    a row a split and subject modifier, the examples and each measure in percent."""
    models = report.get("models") or {report.get("model", "model"): report}
    task = next(iter(models.values()))["task"]
    header = ["model", "split", "subject", "examples", "sentence %",
              f"{SCORED_WORD[task]} %", f"{SCORED_WORD[task]} by the linear rule %"]
    rows = []
    for name, one in models.items():
        for split, summary in one["splits"].items():
            if splits and split not in splits:
                continue
            for subject, cells in [("all", summary["all"]),
                                   *summary["by_subject_modifier"].items()]:
                rows.append([name, split, subject, f"{cells['examples']:,}",
                             f"{cells['full_sentence']:.2f}", f"{cells['scored_word']:.2f}",
                             f"{cells['linear_word']:.2f}"])
    return markdown_table(header, rows)


def attention_lines(report: dict, kind: str = "cross_attention", also: str = "") -> list[str]:
    """The table of a report's ``attention``, with the reports of ``also`` (JSON files of this
    scorer, comma-separated, relative to the repository root) after it: a row a model, split
    and prediction group, the percent of the decoder's ``kind`` of attention (cross_attention,
    self_attention) on each role."""
    models = {report.get("model", "model"): report}
    for path in filter(None, also.split(",")):
        other = json.loads((ROOT / path).read_text(encoding="utf-8"))
        models[other.get("model", path)] = other
    first = next(iter(report["attention"].values()))[kind]
    roles = [role for role in first["all"] if role != "examples"]
    rows = []
    for name, one in models.items():
        for split, result in one["attention"].items():
            found = result[kind]
            for group, cells in [("all", found["all"]), *found["by_prediction"].items()]:
                rows.append([name, split, group, f"{cells['examples']:,}",
                             *(f"{cells[role]:.1f}" for role in roles)])
    return markdown_table(["model", "split", "prediction", "examples",
                           *(f"{role} %" for role in roles)], rows)


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--recipe", required=True, type=Path,
                        help="a folder of prepare-hierarchical-generalization.sh (recipe.json)")
    parser.add_argument("--checkpoint", required=True, type=Path)
    parser.add_argument("--split", action="append", choices=("train", "valid", "test", "gen"),
                        help="recipe splits to score (default: test and gen)")
    parser.add_argument("--gold-trees", action="append", type=Path, metavar="FILE",
                        help="score these gold trees instead (named by the file's stem)")
    parser.add_argument("--model", help="the model's name in the report and table")
    parser.add_argument("--beam", type=int, default=1, help="1: greedy, as the paper")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--attention", type=int, metavar="N", default=0,
                        help="also where a tree2seq decoder looks when it writes the scored word, "
                        "on the first N sentences of each recipe split scored (teacher-forced)")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    if args.attention and args.gold_trees:
        parser.error("--attention reads the recipe's binarized splits, not --gold-trees")
    started = time.perf_counter()
    try:
        recipe = read_recipe(args.recipe)
        sources = ({path.stem: path for path in args.gold_trees} if args.gold_trees else
                   recipe_sources(args.recipe, recipe, args.split or ("test", "gen")))
        splits = score(args.recipe, args.checkpoint, sources, recipe, args.beam,
                       args.batch_size, None if args.gold_trees else
                       recipe_parses(args.recipe, sources))
        attention = {split: decoder_attention(args.checkpoint, args.recipe, recipe, split,
                                              args.attention)
                     for split in (sources if args.attention else ())}
    except (OSError, FairseqTreeError) as error:
        sys.exit(f"error: {error}")
    report = {"task": recipe["task"], "trees": recipe["trees"],
              "model": args.model or args.checkpoint.parent.name,
              "checkpoint": str(args.checkpoint), "recipe": str(args.recipe),
              "beam": args.beam, "splits": splits,
              **({"attention": attention} if attention else {}),
              "seconds": round(time.perf_counter() - started, 1),
              "command": " ".join(["python -m bench.hierarchical_generalization",
                                   *(argv if argv is not None else sys.argv[1:])]),
              "machine": machine()}
    lines = markdown_lines(report)
    for kind in ("cross_attention", "self_attention"):
        if attention and all(kind in result for result in attention.values()):
            lines += ["", *attention_lines(report, kind)]
    return end_report(report, lines, str(args.json) if args.json else None)


if __name__ == "__main__":
    main()
