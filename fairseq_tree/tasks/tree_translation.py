"""The ``tree_translation`` task: translation from a source constituency tree to target text."""

import functools
import itertools
import logging
import os
from collections import deque
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Tuple

import numpy as np
import torch
from fairseq import utils
from fairseq.data import ConcatDataset, data_utils
from fairseq.data.list_dataset import ListDataset
from fairseq.dataclass import ChoiceEnum
from fairseq.tasks import register_task
from fairseq.tasks.translation import TranslationConfig, TranslationTask

from fairseq_tree.data.complete_batches import CompleteLanguagePairDataset
from fairseq_tree.data.label_dictionary import is_label_symbol
from fairseq_tree.data.linearized_tree import (
    CLOSE_SYMBOL,
    OPEN_SYMBOL,
    LinearizedTreeDataset,
    add_bracket_symbols,
    linearize,
)
from fairseq_tree.data.single_leaf_nodes import MultiLeafNodesDataset, multi_leaf_nodes
from fairseq_tree.data.tree_encoding import EncodedTree, encode_tree
from fairseq_tree.data.tree_files import LABELS, SPANS, TREE_PARTS, tree_file
from fairseq_tree.data.tree_language_pair_dataset import TreeLanguagePairDataset, collate_nodes
from fairseq_tree.data.tree_paths import embedding_paths
from fairseq_tree.errors import FairseqTreeError
from fairseq_tree.trees.bracketed import TreeSyntaxError
from fairseq_tree.trees.normal_form import NormalTree, parse_tree
from fairseq_tree.trees.subwords import split_words

logger = logging.getLogger(__name__)

TREE_INPUT_CHOICES = ChoiceEnum(["tree", "leaves-only", "linearized"])
# Options that change what the model reads or writes: a checkpoint records them (task_state),
# and a run without the same ones is refused.
REMEMBERED_FLAGS = ("drop_single_leaf_nodes", "target_trees")
MAX_TOKENS_COUNTS_CHOICES = ChoiceEnum(["leaves-and-nodes", "leaves"])


@dataclass
class TreeTranslationConfig(TranslationConfig):
    tree_input: TREE_INPUT_CHOICES = field(
        default="tree",
        metadata={
            "help": "what the model reads of the source: the whole tree (leaves, node labels, "
            "node spans); only its leaves as a plain token sequence (the Transformer baseline); "
            "or the bracketed tree as one token sequence, '[(] [NP] the dog [)] ...' (the "
            "linearized-tree baseline)"
        },
    )
    max_tokens_counts: MAX_TOKENS_COUNTS_CHOICES = field(
        default="leaves-and-nodes",
        metadata={
            "help": "what --max-tokens (and --max-source-positions) counts of a source tree with "
            "--tree-input tree: its leaves and nodes, the positions the tree encoder reads "
            "(the default), or its leaves alone, as the leaves-only Transformer's batches count "
            "them: then both models train on batches of the same sentences, and tree2seq's "
            "batches hold more positions (more memory) than --max-tokens"
        },
    )
    drop_single_leaf_nodes: bool = field(
        default=False,
        metadata={
            "help": "leave out every source tree node that spans a single leaf, in training and "
            "at inference: a gold tree with POS preterminals, (VP (VBD laughs)), is then read "
            "as the same tree with bare words, (VP laughs), whose one-word phrases are no "
            "nodes (with --tree-input tree or linearized; a checkpoint remembers it)"
        },
    )
    target_trees: bool = field(
        default=False,
        metadata={
            "help": "the decoder writes the target's tree, linearized as the linearized-tree "
            "baseline reads a source ('[(] [NP] the dog [)] ...': string-to-tree, Aharoni & "
            "Goldberg 2017), from the target trees of fairseq-tree-preprocess --target-trees; "
            "what is scored sees its leaves: fairseq-generate strips the brackets and labels "
            "from hypotheses and references (its BLEU is on the leaves), as the hub's translate "
            "does; given targets (the hub's score, --score-targets) are bracketed trees"
        },
    )


class InputTreeError(ValueError):
    """A bad inference input: ``index`` is its position in the lines given, ``reason`` says
    what is wrong."""

    def __init__(self, index: int, reason: str):
        self.index, self.reason = index, reason
        super().__init__(f"input {index}: {reason}")


def read_input_tree(line: str, index: int,
                    encode_fn: Optional[Callable[[str], str]] = None) -> NormalTree:
    """One bracketed inference input (the ``index``-th), ``encode_fn`` (a word -> its pieces
    joined by spaces: BPE) applied to each leaf; ``InputTreeError`` when it is no tree."""
    try:
        tree = parse_tree(line)
    except TreeSyntaxError as err:
        raise InputTreeError(index, f"malformed tree: {err}") from None
    return split_words(tree, lambda word: encode_fn(word).split()) if encode_fn else tree


@register_task("tree_translation", dataclass=TreeTranslationConfig)
class TreeTranslationTask(TranslationTask):
    """Translate from source trees binarised by ``fairseq-tree-preprocess``.

    With ``--tree-input tree`` batches carry ``src_node_labels`` and ``src_node_spans`` beside
    ``src_tokens`` (see ``TreeLanguagePairDataset``); with ``leaves-only`` this is fairseq's
    ``translation`` task on the leaves; with ``linearized`` it is fairseq's ``translation`` task
    on the bracketed trees (``LinearizedTreeDataset``), whose two bracket symbols are appended
    to the source dictionary (and to the target one when they are joined) at setup.
    ``fairseq-interactive`` reads one bracketed tree per line and applies the configured
    ``--bpe`` to each leaf.
    """

    cfg: TreeTranslationConfig

    def __init__(self, cfg: TreeTranslationConfig, src_dict, tgt_dict):
        joined = src_dict == tgt_dict
        if cfg.tree_input == "linearized":
            self.bracket_ids = add_bracket_symbols(src_dict)
            if joined and tgt_dict is not src_dict:  # keep a joined dictionary joined
                add_bracket_symbols(tgt_dict)
        if cfg.target_trees:
            if cfg.eval_bleu:
                raise FairseqTreeError("--eval-bleu with --target-trees: fairseq's validation "
                                       "BLEU would score the brackets; score the leaves with "
                                       "fairseq-generate after training")
            if OPEN_SYMBOL not in tgt_dict.indices:
                add_bracket_symbols(tgt_dict)
                if joined and src_dict is not tgt_dict:
                    add_bracket_symbols(src_dict)
            self.target_bracket_ids = (tgt_dict.index(OPEN_SYMBOL), tgt_dict.index(CLOSE_SYMBOL))
        super().__init__(cfg, src_dict, tgt_dict)
        # Saved in checkpoints (task_state), so a run with another --tree-input is refused; a
        # str pickles where the config's enum would not.
        remembered = {flag: bool(getattr(cfg, flag)) for flag in REMEMBERED_FLAGS}
        self.state.merge_state_dict({"tree_input": str(cfg.tree_input), **remembered})
        # Trees of interactive input, by leaf ids: fairseq-interactive passes only src_tokens on.
        self._interactive_trees: Dict[Tuple[int, ...], deque] = {}
        self._interactive_lines = 0

    @property
    def reads_trees(self) -> bool:
        return self.cfg.tree_input == "tree"

    def load_state_dict(self, state_dict):
        trained = state_dict.get("tree_input", self.cfg.tree_input)
        if trained != self.cfg.tree_input:
            raise FairseqTreeError(f"the checkpoint was trained with --tree-input {trained}; this run "
                             f"has --tree-input {self.cfg.tree_input}: give the same")
        for flag in REMEMBERED_FLAGS:
            trained_with = state_dict.get(flag, False)
            if trained_with != getattr(self.cfg, flag):
                said = "with" if trained_with else "without"
                raise FairseqTreeError(f"the checkpoint was trained {said} "
                                       f"--{flag.replace('_', '-')}: run {said} it too")
        super().load_state_dict(state_dict)

    def load_dataset(self, split, epoch=1, combine=False, **kwargs):
        if self.cfg.tree_input == "leaves-only" and not self.cfg.target_trees:
            super().load_dataset(split, epoch=epoch, combine=combine, **kwargs)
            self.datasets[split] = CompleteLanguagePairDataset.from_dataset(self.datasets[split])
            return
        if self.cfg.truncate_source or self.cfg.num_batch_buckets > 0:
            raise FairseqTreeError(
                "--truncate-source and --num-batch-buckets work with --tree-input leaves-only "
                "(and no --target-trees) only: they would cut or pad leaves under the node "
                "spans (or the brackets of a linearized tree)"
            )
        paths = utils.split_paths(self.cfg.data)
        if split != self.cfg.train_subset:
            paths = paths[:1]
        data_path = paths[(epoch - 1) % len(paths)]
        leaves, labels, spans, target, *target_tree = self.load_tree_parts(data_path, split,
                                                                            combine)
        if target_tree:
            target = LinearizedTreeDataset(target, *target_tree, *self.target_bracket_ids)
        if self.cfg.drop_single_leaf_nodes:
            labels, spans = (MultiLeafNodesDataset(labels, spans, part)
                             for part in MultiLeafNodesDataset.PARTS)
        pair = dict(
            tgt=target, tgt_sizes=target.sizes if target is not None else None,
            tgt_dict=self.tgt_dict, left_pad_source=self.cfg.left_pad_source,
            left_pad_target=self.cfg.left_pad_target, shuffle=split != "test",
            pad_to_multiple=self.cfg.required_seq_len_multiple,
        )
        if self.reads_trees:
            self.datasets[split] = TreeLanguagePairDataset(
                leaves, leaves.sizes, self.src_dict, labels, spans,
                count_nodes=self.cfg.max_tokens_counts == "leaves-and-nodes", **pair)
            return
        source = (leaves if self.cfg.tree_input == "leaves-only"
                  else LinearizedTreeDataset(leaves, labels, spans, *self.bracket_ids))
        self.datasets[split] = CompleteLanguagePairDataset(source, source.sizes, self.src_dict,
                                                           **pair)

    def load_tree_parts(self, data_path, split, combine):
        """The leaves, labels, spans and target datasets of ``split`` (its shards joined), and
        with --target-trees the target's labels and spans."""
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
        return tuple(self._concat(parts) for parts in zip(*shards))

    def _load_shard(self, prefix: str):
        src, tgt = self.cfg.source_lang, self.cfg.target_lang
        parts = []
        for kind in TREE_PARTS:  # leaves, node labels, node spans
            path = tree_file(prefix + src, kind)
            dataset = data_utils.load_indexed_dataset(path, None, "mmap")
            if dataset is None:
                raise FileNotFoundError(
                    f"tree dataset not found: {path}.{{bin,idx}} "
                    "(binarize with fairseq-tree-preprocess, or use --tree-input leaves-only)"
                )
            parts.append(dataset)
        parts.append(data_utils.load_indexed_dataset(prefix + tgt, None, "mmap"))
        if self.cfg.target_trees and parts[-1] is not None:
            for kind in (LABELS, SPANS):
                path = tree_file(prefix + tgt, kind)
                dataset = data_utils.load_indexed_dataset(path, None, "mmap")
                if dataset is None:
                    raise FileNotFoundError(
                        f"target tree dataset not found: {path}.{{bin,idx}} (binarize the "
                        "target trees with fairseq-tree-preprocess --target-trees)")
                parts.append(dataset)
        return parts

    def _concat(self, parts):
        if len(parts) == 1 or parts[0] is None:
            return parts[0]
        return ConcatDataset(parts, [self.cfg.upsample_primary] + [1] * (len(parts) - 1))

    def build_model(self, cfg, from_checkpoint=False):
        model = super().build_model(cfg, from_checkpoint)
        arch = getattr(cfg, "_name", None) or getattr(cfg, "arch", "?")
        if self.reads_trees and not getattr(model, "reads_trees", False):
            raise FairseqTreeError(
                f"--arch {arch} reads token sequences, not trees: use a tree2seq architecture, "
                "or --tree-input leaves-only (or linearized) to train it on the leaves of the "
                "trees (or on the bracketed trees)"
            )
        if not self.reads_trees and getattr(model, "reads_trees", False):
            raise FairseqTreeError(f"--arch {arch} reads trees: use --tree-input tree with it, not "
                             f"{self.cfg.tree_input}")
        return model

    # ---------------------------------------------------------------- inference

    @functools.cached_property
    def target_tree_symbols(self) -> set:
        """With --target-trees, the ids of what a written tree adds to its leaves: the bracket
        and label symbols of the target dictionary (what is stripped before scoring); empty
        otherwise."""
        if not self.cfg.target_trees:
            return set()
        return {*self.target_bracket_ids,
                *(i for i, symbol in enumerate(self.tgt_dict.symbols) if is_label_symbol(symbol))}

    def build_generator(self, models, args, seq_gen_cls=None, extra_gen_cls_kwargs=None,
                        prefix_allowed_tokens_fn=None):
        """fairseq's generator; with --target-trees it names the tree's symbols as symbols to
        strip from the output, which fairseq-generate leaves out of hypotheses and references
        alike before it prints and scores them."""
        if self.cfg.target_trees and not getattr(args, "score_reference", False):
            extra_gen_cls_kwargs = dict(extra_gen_cls_kwargs or {})
            extra_gen_cls_kwargs["symbols_to_strip_from_output"] = (
                set(extra_gen_cls_kwargs.get("symbols_to_strip_from_output") or ())
                | self.target_tree_symbols)
        return super().build_generator(models, args, seq_gen_cls, extra_gen_cls_kwargs,
                                       prefix_allowed_tokens_fn=prefix_allowed_tokens_fn)

    def target_item(self, tree: NormalTree) -> torch.Tensor:
        """A given target tree (of the model's units) as the decoder writes it, EOS last."""
        encoded = encode_tree(tree, self.tgt_dict)
        return linearize(encoded.leaves, encoded.labels, encoded.spans, *self.target_bracket_ids)

    def inference_item(self, tree: NormalTree):
        """What the model reads of one inference input, a tree of the model's units (subwords):
        the tree itself (``EncodedTree``) with --tree-input tree, else its token sequence (the
        leaves, or the linearized tree)."""
        encoded = encode_tree(tree, self.source_dictionary)
        if self.cfg.drop_single_leaf_nodes:
            encoded.labels, encoded.spans = multi_leaf_nodes(encoded.labels, encoded.spans)
        if self.cfg.tree_input == "linearized":
            return linearize(encoded.leaves, encoded.labels, encoded.spans, *self.bracket_ids)
        return encoded if self.reads_trees else encoded.leaves

    def inference_dataset(self, items: List, targets: Optional[List[torch.Tensor]] = None,
                          constraints=None):
        """A dataset of ``inference_item``s: for generation, or, given ``targets`` (ids ending in
        EOS), of the pairs for ``fairseq-generate --score-reference``'s scorer, batched as
        ``load_dataset``'s pairs are: every pair kept, the last batch too."""
        tokens = [item.leaves if isinstance(item, EncodedTree) else item for item in items]
        lengths = np.array([t.numel() for t in tokens])
        pair = dict(tgt_dict=self.target_dictionary, left_pad_source=self.cfg.left_pad_source)
        if targets is not None:
            pair.update(tgt=targets, tgt_sizes=np.array([t.numel() for t in targets]),
                        left_pad_target=self.cfg.left_pad_target, shuffle=False)
        if not self.reads_trees:
            if targets is None:
                return super().build_dataset_for_inference(tokens, lengths, constraints)
            return CompleteLanguagePairDataset(tokens, lengths, self.source_dictionary, **pair)
        return TreeLanguagePairDataset(
            tokens, lengths, self.source_dictionary,
            ListDataset([t.labels for t in items], [t.num_nodes for t in items]),
            ListDataset([t.spans.view(-1) for t in items], [2 * t.num_nodes for t in items]),
            constraints=constraints, **pair)

    # fairseq-interactive gives the task the lines (``get_interactive_tokens_and_lengths``) but
    # the model only the token rows of each batch (``inference_step``): with --tree-input tree
    # the trees of the lines read last wait here, by their leaves, until their rows come back.
    # Everything else (the hubs, fairseq-tree-translate) passes trees as items.

    def get_interactive_tokens_and_lengths(self, lines: List[str], encode_fn: Callable):
        """fairseq-interactive's hook: each line a bracketed tree, ``encode_fn`` (tokenizer +
        BPE) applied to each leaf; a bad line ends the run."""
        first = self._interactive_lines + 1
        self._interactive_lines += len(lines)
        self._interactive_trees.clear()
        tokens = []
        for index, line in enumerate(lines):
            try:
                item = self.inference_item(read_input_tree(line, index, encode_fn))
            except InputTreeError as err:
                raise FairseqTreeError(
                    f"tree_translation: input line {first + err.index}: {err.reason}"
                ) from None
            if isinstance(item, EncodedTree):
                self._interactive_trees.setdefault(tuple(item.leaves.tolist()), deque()).append(item)
                item = item.leaves
            tokens.append(item)
        return tokens, [t.numel() for t in tokens]

    def build_dataset_for_inference(self, src_tokens, src_lengths, constraints=None):
        if not self.reads_trees:
            return super().build_dataset_for_inference(src_tokens, src_lengths, constraints)
        return self.inference_dataset([self._interactive_tree(tokens, pop=False)
                                       for tokens in src_tokens], constraints=constraints)

    def _interactive_tree(self, leaf_ids: torch.Tensor, pop: bool) -> EncodedTree:
        queue = self._interactive_trees.get(tuple(leaf_ids.tolist()))
        if not queue:
            raise FairseqTreeError(
                "tree_translation: no tree known for this source sentence; fairseq-interactive's "
                "inputs come through get_interactive_tokens_and_lengths (bracketed trees), "
                "Python's through inference_item and inference_dataset"
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
        trees = [self._interactive_tree(row[row.ne(pad)].cpu(), pop=True) for row in src_tokens]
        samples = [{"node_labels": t.labels, "node_spans": t.spans} for t in trees]
        labels, spans = collate_nodes(
            samples, pad, src_tokens.cpu(), src_lengths.cpu(), self.cfg.left_pad_source
        )
        device = src_tokens.device
        return {**net_input, "src_node_labels": labels.to(device), "src_node_spans": spans.to(device),
                "src_embedding_paths": embedding_paths(spans).to(device)}
