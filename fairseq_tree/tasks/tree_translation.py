"""The ``tree_translation`` task: translation from a source constituency tree to target text."""

import itertools
import logging
import os
from collections import deque
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Tuple

import torch
from fairseq import utils
from fairseq.data import ConcatDataset, data_utils
from fairseq.data.list_dataset import ListDataset
from fairseq.dataclass import ChoiceEnum
from fairseq.tasks import register_task
from fairseq.tasks.translation import TranslationConfig, TranslationTask

from fairseq_tree.data.complete_batches import CompleteLanguagePairDataset
from fairseq_tree.data.tree_encoding import EncodedTree, encode_tree
from fairseq_tree.data.tree_language_pair_dataset import TreeLanguagePairDataset, collate_nodes
from fairseq_tree.trees.bracketed import TreeSyntaxError
from fairseq_tree.trees.normal_form import parse_tree
from fairseq_tree.trees.subwords import split_words

logger = logging.getLogger(__name__)

TREE_INPUT_CHOICES = ChoiceEnum(["tree", "leaves-only"])
SOURCE_SUFFIXES = ("", ".labels", ".spans")  # leaves, node labels, node spans


@dataclass
class TreeTranslationConfig(TranslationConfig):
    tree_input: TREE_INPUT_CHOICES = field(
        default="tree",
        metadata={
            "help": "what the model reads of the source: the whole tree (leaves, node labels, "
            "node spans), or only its leaves as a plain token sequence (the Transformer baseline)"
        },
    )


@register_task("tree_translation", dataclass=TreeTranslationConfig)
class TreeTranslationTask(TranslationTask):
    """Translate from source trees binarised by ``fairseq-tree-preprocess``.

    With ``--tree-input tree`` batches carry ``src_node_labels`` and ``src_node_spans`` beside
    ``src_tokens`` (see ``TreeLanguagePairDataset``); with ``leaves-only`` this is fairseq's
    ``translation`` task on the leaves. ``fairseq-interactive`` reads one bracketed tree per line
    and applies the configured ``--bpe`` to each leaf.
    """

    cfg: TreeTranslationConfig

    def __init__(self, cfg: TreeTranslationConfig, src_dict, tgt_dict):
        super().__init__(cfg, src_dict, tgt_dict)
        # Trees of interactive input, by leaf ids: fairseq-interactive passes only src_tokens on.
        self._inference_trees: Dict[Tuple[int, ...], deque] = {}
        self._interactive_lines = 0

    @property
    def reads_trees(self) -> bool:
        return self.cfg.tree_input == "tree"

    def load_dataset(self, split, epoch=1, combine=False, **kwargs):
        if not self.reads_trees:
            super().load_dataset(split, epoch=epoch, combine=combine, **kwargs)
            self.datasets[split] = CompleteLanguagePairDataset.from_dataset(self.datasets[split])
            return
        if self.cfg.truncate_source or self.cfg.num_batch_buckets > 0:
            raise ValueError(
                "--truncate-source and --num-batch-buckets would cut or pad leaves under the "
                "node spans; they work with --tree-input leaves-only only"
            )
        paths = utils.split_paths(self.cfg.data)
        if split != self.cfg.train_subset:
            paths = paths[:1]
        data_path = paths[(epoch - 1) % len(paths)]
        self.datasets[split] = self.load_tree_dataset(data_path, split, combine, split != "test")

    def load_tree_dataset(self, data_path, split, combine, shuffle) -> TreeLanguagePairDataset:
        """Load the leaves, labels, spans and target datasets of ``split`` (and its shards)."""
        shards = []
        for k in itertools.count():
            prefix = os.path.join(
                data_path, f"{split}{k if k > 0 else ''}.{self.cfg.source_lang}-{self.cfg.target_lang}."
            )
            if k > 0 and not os.path.exists(prefix + self.cfg.source_lang + ".idx"):
                break
            shards.append(self._load_shard(prefix))
            logger.info(f"{data_path} {split}{k or ''} {len(shards[-1][0])} tree examples")
            if not combine:
                break
        leaves, labels, spans, target = (self._concat(parts) for parts in zip(*shards))
        return TreeLanguagePairDataset(
            leaves, leaves.sizes, self.src_dict, labels, spans,
            target, target.sizes if target is not None else None, self.tgt_dict,
            left_pad_source=self.cfg.left_pad_source, left_pad_target=self.cfg.left_pad_target,
            shuffle=shuffle, pad_to_multiple=self.cfg.required_seq_len_multiple,
        )

    def _load_shard(self, prefix: str):
        src, tgt = self.cfg.source_lang, self.cfg.target_lang
        parts = []
        for suffix in SOURCE_SUFFIXES:
            dataset = data_utils.load_indexed_dataset(prefix + src + suffix, None, "mmap")
            if dataset is None:
                raise FileNotFoundError(
                    f"tree dataset not found: {prefix + src + suffix}.{{bin,idx}} "
                    "(binarize with fairseq-tree-preprocess, or use --tree-input leaves-only)"
                )
            parts.append(dataset)
        parts.append(data_utils.load_indexed_dataset(prefix + tgt, None, "mmap"))
        return parts

    def _concat(self, parts):
        if len(parts) == 1 or parts[0] is None:
            return parts[0]
        return ConcatDataset(parts, [self.cfg.upsample_primary] + [1] * (len(parts) - 1))

    def build_model(self, cfg, from_checkpoint=False):
        model = super().build_model(cfg, from_checkpoint)
        if self.reads_trees and not getattr(model, "reads_trees", False):
            raise ValueError(
                f"--arch {getattr(cfg, '_name', None) or getattr(cfg, 'arch', '?')} reads token "
                "sequences, not trees: use a tree2seq architecture, or --tree-input leaves-only "
                "to train it on the leaves of the trees"
            )
        return model

    # ---------------------------------------------------------------- interactive / inference

    def get_interactive_tokens_and_lengths(self, lines: List[str], encode_fn: Callable):
        """Parse one bracketed tree per line, apply ``encode_fn`` (tokenizer + BPE) to each leaf."""
        self._inference_trees.clear()
        tokens = []
        for line in lines:
            self._interactive_lines += 1
            encoded = self._encode_input_tree(line, encode_fn)
            key = tuple(encoded.leaves.tolist())
            self._inference_trees.setdefault(key, deque()).append(encoded)
            tokens.append(encoded.leaves)
        return tokens, [t.numel() for t in tokens]

    def _encode_input_tree(self, line: str, encode_fn: Callable) -> EncodedTree:
        try:
            tree = parse_tree(line)
        except TreeSyntaxError as err:
            raise SystemExit(
                f"tree_translation: input line {self._interactive_lines}: malformed tree: {err}"
            ) from None
        tree = split_words(tree, lambda word: encode_fn(word).split())
        return encode_tree(tree, self.source_dictionary)

    def build_dataset_for_inference(self, src_tokens, src_lengths, constraints=None):
        if not self.reads_trees:
            return super().build_dataset_for_inference(src_tokens, src_lengths, constraints)
        trees = [self._inference_tree(tokens, pop=False) for tokens in src_tokens]
        labels = ListDataset([t.labels for t in trees], [t.num_nodes for t in trees])
        spans = ListDataset([t.spans.view(-1) for t in trees], [2 * t.num_nodes for t in trees])
        return TreeLanguagePairDataset(
            src_tokens, src_lengths, self.source_dictionary, labels, spans,
            tgt_dict=self.target_dictionary, constraints=constraints,
            left_pad_source=self.cfg.left_pad_source,
        )

    def _inference_tree(self, leaf_ids: torch.Tensor, pop: bool) -> EncodedTree:
        queue = self._inference_trees.get(tuple(leaf_ids.tolist()))
        if not queue:
            raise ValueError(
                "tree_translation: no tree known for this source sentence; inference inputs must "
                "come through get_interactive_tokens_and_lengths (bracketed trees)"
            )
        return queue.popleft() if pop else queue[0]

    def inference_step(self, generator, models, sample, prefix_tokens=None, constraints=None):
        net_input = sample["net_input"]
        if self.reads_trees and "src_node_labels" not in net_input:
            sample = {**sample, "net_input": self._attach_trees(net_input)}
        return super().inference_step(
            generator, models, sample, prefix_tokens=prefix_tokens, constraints=constraints
        )

    def _attach_trees(self, net_input: Dict) -> Dict:
        """Give back the tree inputs that fairseq-interactive drops from its batches."""
        src_tokens, src_lengths = net_input["src_tokens"], net_input["src_lengths"]
        pad = self.source_dictionary.pad()
        trees = [self._inference_tree(row[row.ne(pad)].cpu(), pop=True) for row in src_tokens]
        samples = [{"node_labels": t.labels, "node_spans": t.spans} for t in trees]
        labels, spans = collate_nodes(
            samples, pad, src_tokens.cpu(), src_lengths.cpu(), self.cfg.left_pad_source
        )
        device = src_tokens.device
        return {**net_input, "src_node_labels": labels.to(device), "src_node_spans": spans.to(device)}
