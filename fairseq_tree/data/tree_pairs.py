"""The pairs of ``tree_translation``, as fairseq's ``load_langpair_dataset`` makes a
translation task's: a source tree read whole (``TreeLanguagePairDataset``), as its leaves, or
as its linearized tree (``SourceFormat.tree_input``), paired with target text or, with an
``OutputTree``, a written tree; from the binarized shards of a split, or from trees given at
inference.
"""

import itertools
import logging
import os
from dataclasses import dataclass
from typing import List, Optional, Union

import numpy as np
import torch
from fairseq.data import ConcatDataset, Dictionary, LanguagePairDataset, data_utils
from fairseq.data.list_dataset import ListDataset

from fairseq_tree.data.complete_batches import CompleteLanguagePairDataset
from fairseq_tree.data.linearized_tree import TreeSymbols
from fairseq_tree.data.output_tree import OutputTree
from fairseq_tree.data.single_leaf_nodes import MultiLeafNodesDataset, multi_leaf_nodes
from fairseq_tree.data.tree_encoding import EncodedTree, encode_tree
from fairseq_tree.data.tree_files import TREE_PARTS, tree_file
from fairseq_tree.data.tree_language_pair_dataset import TreeLanguagePairDataset
from fairseq_tree.trees.normal_form import NormalTree

logger = logging.getLogger(__name__)


@dataclass
class SourceFormat:
    """What a model reads of a source tree: the whole tree (``tree``), its leaves
    (``leaves-only``) or its linearized tree (``linearized``, with the ``symbols`` of
    ``dictionary``); without its one-leaf nodes with ``drop_single_leaf_nodes``."""

    dictionary: Dictionary
    tree_input: str = "tree"
    drop_single_leaf_nodes: bool = False
    symbols: Optional[TreeSymbols] = None

    @property
    def reads_trees(self) -> bool:
        return self.tree_input == "tree"

    def item(self, tree: NormalTree) -> Union[EncodedTree, torch.Tensor]:
        """What the model reads of one tree of its units (subwords): the tree itself
        (``EncodedTree``) with ``tree``, else its token sequence (the leaves, or the linearized
        tree)."""
        encoded = encode_tree(tree, self.dictionary)
        if self.drop_single_leaf_nodes:
            encoded.labels, encoded.spans = multi_leaf_nodes(encoded.labels, encoded.spans)
        if self.tree_input == "linearized":
            return self.symbols.linearize(encoded)
        return encoded if self.reads_trees else encoded.leaves


def load_tree_pair_dataset(
    data_path: str, split: str, src: str, tgt: str, source: SourceFormat,
    tgt_dict: Dictionary, output_tree: Optional[OutputTree] = None, combine: bool = False,
    upsample_primary: int = 1, count_nodes: bool = True, **pair,
):
    """The pairs of ``split`` in ``data_path`` (its shards joined with ``combine``), binarized
    by fairseq-tree-preprocess; ``pair``: more keywords of fairseq's ``LanguagePairDataset``
    (padding, shuffle)."""
    shards = []
    for k in itertools.count():
        prefix = os.path.join(data_path, f"{split}{k if k > 0 else ''}.{src}-{tgt}.")
        if k > 0 and not os.path.exists(prefix + src + ".idx"):
            break
        shards.append(load_shard(prefix, src, tgt, output_tree))
        logger.info(f"{data_path} {split}{k or ''} {len(shards[-1][0])} tree examples")
        if not combine:
            break
    leaves, labels, spans, target, *target_nodes = (
        parts[0] if len(parts) == 1 or parts[0] is None
        else ConcatDataset(parts, [upsample_primary] + [1] * (len(parts) - 1))
        for parts in zip(*shards))
    if target_nodes:
        target = output_tree.dataset(target, *target_nodes)
    if source.drop_single_leaf_nodes:
        labels, spans = (MultiLeafNodesDataset(labels, spans, part)
                         for part in MultiLeafNodesDataset.PARTS)
    pair.update(tgt=target, tgt_sizes=target.sizes if target is not None else None,
                tgt_dict=tgt_dict)
    if source.reads_trees:
        return TreeLanguagePairDataset(leaves, leaves.sizes, source.dictionary, labels, spans,
                                       count_nodes=count_nodes, **pair)
    if source.tree_input == "linearized":
        leaves = source.symbols.dataset(leaves, labels, spans)
    return CompleteLanguagePairDataset(leaves, leaves.sizes, source.dictionary, **pair)


def load_shard(prefix: str, src: str, tgt: str, output_tree: Optional[OutputTree]) -> list:
    """The leaves, node labels, node spans and target datasets of one shard (the target None
    where it has none), and with ``output_tree`` the target's node labels and spans."""
    parts = []
    for kind in TREE_PARTS:
        path = tree_file(prefix + src, kind)
        dataset = data_utils.load_indexed_dataset(path, None, "mmap")
        if dataset is None:
            raise FileNotFoundError(
                f"tree dataset not found: {path}.{{bin,idx}} "
                "(binarize with fairseq-tree-preprocess, or use --tree-input leaves-only)"
            )
        parts.append(dataset)
    parts.append(data_utils.load_indexed_dataset(prefix + tgt, None, "mmap"))
    if output_tree is not None and parts[-1] is not None:
        parts += output_tree.load_nodes(prefix + tgt)
    return parts


def inference_pair_dataset(items: List, source: SourceFormat, tgt_dict: Dictionary,
                           targets: Optional[List[torch.Tensor]] = None, constraints=None,
                           left_pad_source: bool = True, left_pad_target: bool = False):
    """A dataset of ``SourceFormat.item``s: for generation, or, given ``targets`` (ids ending
    in EOS), of the pairs for ``fairseq-generate --score-reference``'s scorer, batched as the
    binarized pairs are: every pair kept, the last batch too."""
    tokens = [item.leaves if isinstance(item, EncodedTree) else item for item in items]
    lengths = np.array([t.numel() for t in tokens])
    pair = dict(tgt_dict=tgt_dict, left_pad_source=left_pad_source)
    if targets is not None:
        pair.update(tgt=targets, tgt_sizes=np.array([t.numel() for t in targets]),
                    left_pad_target=left_pad_target, shuffle=False)
    if not source.reads_trees:
        if targets is None:  # as fairseq's translation task builds it
            return LanguagePairDataset(tokens, lengths, source.dictionary, tgt_dict=tgt_dict,
                                       constraints=constraints)
        return CompleteLanguagePairDataset(tokens, lengths, source.dictionary, **pair)
    return TreeLanguagePairDataset(
        tokens, lengths, source.dictionary,
        ListDataset([t.labels for t in items], [t.num_nodes for t in items]),
        ListDataset([t.spans.view(-1) for t in items], [2 * t.num_nodes for t in items]),
        constraints=constraints, **pair)
