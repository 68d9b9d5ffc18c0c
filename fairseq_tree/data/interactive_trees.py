"""The trees of fairseq-interactive's lines, kept until their batches come back.

fairseq-interactive gives the task the lines (``get_interactive_tokens_and_lengths``) but the
model only the token rows of each batch (``inference_step``): a model that reads whole trees
would lose their nodes. The trees of the lines read last wait here, by their leaves, until
their rows come back. Everything else (the hubs, fairseq-tree-translate) passes trees as
items.
"""

from collections import deque
from typing import Callable, Dict, List, Tuple

import torch

from fairseq_tree.data.tree_encoding import EncodedTree
from fairseq_tree.data.tree_language_pair_dataset import collate_nodes
from fairseq_tree.data.tree_paths import embedding_paths
from fairseq_tree.errors import FairseqTreeError
from fairseq_tree.trees.inputs import InputTreeError, read_input_tree


class InteractiveTrees:
    """The queue of trees of fairseq-interactive's lines; ``item`` makes what the model reads of
    one tree (``SourceFormat.item``)."""

    def __init__(self, item: Callable):
        self.item = item
        self.waiting: Dict[Tuple[int, ...], deque] = {}
        self.lines = 0

    def read(self, lines: List[str], encode_fn: Callable) -> List[torch.Tensor]:
        """The token rows of ``lines`` (a bracketed tree each, ``encode_fn`` applied to each
        leaf), their trees kept; a bad line ends the run."""
        first = self.lines + 1
        self.lines += len(lines)
        self.waiting.clear()
        tokens = []
        for index, line in enumerate(lines):
            try:
                item = self.item(read_input_tree(line, index, encode_fn))
            except InputTreeError as err:
                raise FairseqTreeError(
                    f"tree_translation: input line {first + err.index}: {err.reason}"
                ) from None
            if isinstance(item, EncodedTree):
                self.waiting.setdefault(tuple(item.leaves.tolist()), deque()).append(item)
                item = item.leaves
            tokens.append(item)
        return tokens

    def tree(self, leaf_ids: torch.Tensor, pop: bool) -> EncodedTree:
        queue = self.waiting.get(tuple(leaf_ids.tolist()))
        if not queue:
            raise FairseqTreeError(
                "tree_translation: no tree known for this source sentence; fairseq-interactive's "
                "inputs come through get_interactive_tokens_and_lengths (bracketed trees), "
                "Python's through inference_item and inference_dataset"
            )
        return queue.popleft() if pop else queue[0]

    def attach(self, net_input: Dict, pad: int, left_pad_source: bool) -> Dict:
        """Give back the tree inputs that fairseq-interactive drops from its batches."""
        src_tokens, src_lengths = net_input["src_tokens"], net_input["src_lengths"]
        trees = [self.tree(row[row.ne(pad)].cpu(), pop=True) for row in src_tokens]
        samples = [{"node_labels": t.labels, "node_spans": t.spans} for t in trees]
        labels, spans = collate_nodes(samples, pad, src_tokens.cpu(), src_lengths.cpu(),
                                      left_pad_source)
        device = src_tokens.device
        return {**net_input, "src_node_labels": labels.to(device),
                "src_node_spans": spans.to(device),
                "src_embedding_paths": embedding_paths(spans).to(device)}
