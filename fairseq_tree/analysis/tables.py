"""The attention analysis (``analysis.attention``) as text: ``fairseq-tree-analyze``'s summary,
and the Markdown tables bench/RESULTS.md generates from its JSON."""

import json
import os
from typing import List, Optional

from fairseq_tree.analysis.attention import PAPER_TABLE_4


def table(result: dict) -> List[str]:
    lines = [f"{result['split']}: {result['sentences']:,} sentences, {result['target_tokens']:,} "
             f"target tokens; source constituents: words {result['constituents']['words']:.1f}% "
             f"/ nodes {result['constituents']['nodes']:.1f}%"]
    for kind, title in (("decoder", "target -> source (cross-attention)"),
                        ("encoder", "source nodes -> source (self-attention, node queries)")):
        shares = result[kind]
        if shares is None:
            continue
        lines.append(f"{title}: nodes {shares['nodes']:.1f}%  words {shares['words']:.1f}%  "
                     f"EOS {shares['eos']:.1f}%")
        lines.append("  per layer (nodes): " + "  ".join(
            f"{row['layer']}: {row['nodes']:.1f}" for row in shares["per_layer"]))
        top = list(shares["per_label"].items())[:8]
        lines.append("  per label (attention % / share of nodes %): " + "  ".join(
            f"{label} {row['attention']:.1f}/{row['share_of_nodes']:.1f}" for label, row in top))
    lines.append("paper, Table 4 (Leaves/Nodes; Target->Nodes): " + "; ".join(
        f"{pair} {row['leaves']}/{row['nodes']}; {row['target_to_nodes']}"
        for pair, row in PAPER_TABLE_4.items()))
    return lines


def _model_name(result: dict) -> str:
    """A column's name: the recipe folder of the data the model was read on."""
    return os.path.basename(os.path.dirname(result["data"].rstrip("/"))) + " model"


def _others(other: Optional[str]) -> List[dict]:
    """The JSON of ``other`` (a path from the checkout's root), as a list; none without it."""
    if other is None:
        return []
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    with open(os.path.join(root, other), encoding="utf-8") as source:
        return [json.load(source)]


def _markdown(header: List[str], rows: List[List[str]]) -> List[str]:
    return ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)] + [
        "| " + " | ".join(row) + " |" for row in rows]


def markdown_table(result: dict, other: Optional[str] = None,
                   paper: tuple = ("En-Fr", "En-De")) -> List[str]:
    """The paper's Table 4 as bench/RESULTS.md gives it: the source constituents that are words
    and nodes, the decoder's attention on nodes (all layers, then by layer) and the encoder's
    node queries' attention on nodes, for ``result`` and the model of the JSON ``other`` (a
    path from the checkout's root), then the paper's models of ``paper``."""
    results = [result, *_others(other)]
    paper_rows = [result["paper_table_4"][pair] for pair in paper]
    layers = " / ".join(str(row["layer"]) for row in result["decoder"]["per_layer"])

    def by_layer(shares: dict, sep: str = "% / ") -> str:
        return sep.join(f"{row['nodes']:.1f}" for row in shares["per_layer"]) + "%" * (sep != " / ")

    rows = [["source constituents: words / nodes",
             *(f"{r['constituents']['words']:.1f}% / {r['constituents']['nodes']:.1f}%"
               for r in results),
             *(f"{p['leaves']}% / {p['nodes']}%" for p in paper_rows)],
            ["target -> nodes (decoder cross-attention)",
             *(f"{r['decoder']['nodes']:.1f}% (words {r['decoder']['words']:.1f}%, "
               f"EOS {r['decoder']['eos']:.1f}%)" for r in results),
             *(f"{p['target_to_nodes']}%" for p in paper_rows)],
            [f"by decoder layer {layers}", *(by_layer(r["decoder"]) for r in results),
             *("" for _ in paper_rows)],
            ["source nodes -> nodes (encoder, node queries)",
             *(f"{r['encoder']['nodes']:.1f}% (layers: {by_layer(r['encoder'], ' / ')})"
               for r in results), *("" for _ in paper_rows)]]
    header = ["", *(f"{_model_name(r)} ({r['sentences']:,} {r['split']} sentences)"
                    for r in results), *(f"paper, {pair}" for pair in paper)]
    return _markdown(header, rows)


def label_table(result: dict, other: Optional[str] = None, min_share: float = 2.0) -> List[str]:
    """By node label: the decoder's attention on the label as a share of all its attention on
    nodes, against the label's share of the nodes (what uniform attention would give), for
    ``result`` and the model of the JSON ``other``; the labels with at least ``min_share``
    percent of either in some model, by ``result``'s attention share."""
    results = [result, *_others(other)]

    def shares(r: dict, label: str) -> tuple:
        row = r["decoder"]["per_label"].get(label)
        if row is None:
            return None
        return 100 * row["attention"] / r["decoder"]["nodes"], row["share_of_nodes"]

    labels = [label for label in dict.fromkeys(l for r in results for l in r["decoder"]["per_label"])
              if any(max(shares(r, label) or (0, 0)) >= min_share for r in results)]
    labels.sort(key=lambda label: -(shares(result, label) or (0, 0))[0])
    rows = [[label, *("-" if shares(r, label) is None else
                      "{:.1f}% / {:.1f}%".format(*shares(r, label)) for r in results)]
            for label in labels]
    return _markdown(["label", *(f"{_model_name(r)}: share of node attention / of nodes"
                                 for r in results)], rows)
