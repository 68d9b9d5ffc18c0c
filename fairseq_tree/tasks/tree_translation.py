"""The ``tree_translation`` task: translation from a source constituency tree to target text
(or to the target's tree), fairseq's hooks over ``fairseq_tree.data.tree_pairs``."""

import logging
from dataclasses import dataclass, field
from typing import Callable, List, Optional

import torch
from fairseq import utils
from fairseq.dataclass import ChoiceEnum
from fairseq.sequence_scorer import SequenceScorer
from fairseq.tasks import register_task
from fairseq.tasks.translation import TranslationConfig, TranslationTask

from fairseq_tree.data.complete_batches import CompleteLanguagePairDataset
from fairseq_tree.data.interactive_trees import InteractiveTrees
from fairseq_tree.data.linearized_tree import add_tree_symbols
from fairseq_tree.data.output_tree import OutputTree
from fairseq_tree.data.tree_pairs import (
    SourceFormat,
    inference_pair_dataset,
    load_tree_pair_dataset,
)
from fairseq_tree.errors import FairseqTreeError
from fairseq_tree.tasks.tree_generation import (
    TreeSequenceGenerator,
    TreeSequenceGeneratorWithAlignment,
    WrittenTrees,
    writes_well_formed,
)
from fairseq_tree.trees.normal_form import NormalTree

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
    no_well_formed_trees: bool = field(
        default=False,
        metadata={
            "help": "with --target-trees, let generation write any token where it likes: by "
            "default each hypothesis is kept a well-formed tree as it is written (a label after "
            "each opening bracket and nowhere else, a closing bracket only in an open "
            "constituent that holds a word, end of sentence only with every bracket closed, "
            "brackets closed before the length limit); either way fairseq-generate logs how "
            "many best hypotheses were malformed"
        },
    )


@register_task("tree_translation", dataclass=TreeTranslationConfig)
class TreeTranslationTask(TranslationTask):
    """Translate from source trees binarised by ``fairseq-tree-preprocess``.

    With ``--tree-input tree`` batches carry ``src_node_labels`` and ``src_node_spans`` beside
    ``src_tokens`` (see ``TreeLanguagePairDataset``); with ``leaves-only`` this is fairseq's
    ``translation`` task on the leaves; with ``linearized`` it is fairseq's ``translation`` task
    on the bracketed trees (``LinearizedTreeDataset``), whose two bracket symbols are appended
    to the source dictionary (and to the target one when they are joined) at setup. A model
    that writes trees has its ``output_tree`` (``data/output_tree.py``), the brackets appended
    to the target dictionary. The pairs are ``data/tree_pairs.py``'s; ``fairseq-interactive``
    reads one bracketed tree per line and applies the configured ``--bpe`` to each leaf, its
    trees waiting in ``data/interactive_trees.py``'s queue.
    """

    cfg: TreeTranslationConfig

    def __init__(self, cfg: TreeTranslationConfig, src_dict, tgt_dict):
        if cfg.target_trees and cfg.eval_bleu:
            raise FairseqTreeError("--eval-bleu with --target-trees: fairseq's validation BLEU "
                                   "would score the brackets; score the leaves with "
                                   "fairseq-generate after training")
        linearized = cfg.tree_input == "linearized"
        # The bracket symbols join each dictionary that holds linearized trees, and both of a
        # joined pair (two equal dictionaries), so that they stay joined.
        bracketed = [d for d, holds in ((src_dict, linearized), (tgt_dict, cfg.target_trees))
                     if holds]
        if bracketed and src_dict == tgt_dict:
            bracketed = [src_dict, tgt_dict]
        symbols = {id(d): added for d, added in zip(bracketed, add_tree_symbols(*bracketed))}
        self.output_tree = OutputTree(symbols[id(tgt_dict)]) if cfg.target_trees else None
        self.source = SourceFormat(src_dict, str(cfg.tree_input), cfg.drop_single_leaf_nodes,
                                   symbols.get(id(src_dict)) if linearized else None)
        super().__init__(cfg, src_dict, tgt_dict)
        # Saved in checkpoints (task_state), so a run with another --tree-input is refused; a
        # str pickles where the config's enum would not.
        remembered = {flag: bool(getattr(cfg, flag)) for flag in REMEMBERED_FLAGS}
        self.state.merge_state_dict({"tree_input": str(cfg.tree_input), **remembered})
        self.interactive = InteractiveTrees(self.source.item)
        self.written_trees = WrittenTrees()  # the best hypotheses generated so far

    @property
    def reads_trees(self) -> bool:
        return self.source.reads_trees

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
        if self.cfg.tree_input == "leaves-only" and self.output_tree is None:
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
        self.datasets[split] = load_tree_pair_dataset(
            paths[(epoch - 1) % len(paths)], split, self.cfg.source_lang, self.cfg.target_lang,
            self.source, self.tgt_dict, self.output_tree, combine=combine,
            upsample_primary=self.cfg.upsample_primary,
            count_nodes=self.cfg.max_tokens_counts == "leaves-and-nodes",
            left_pad_source=self.cfg.left_pad_source, left_pad_target=self.cfg.left_pad_target,
            shuffle=split != "test", pad_to_multiple=self.cfg.required_seq_len_multiple)

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

    def build_generator(self, models, args, seq_gen_cls=None, extra_gen_cls_kwargs=None,
                        prefix_allowed_tokens_fn=None):
        """fairseq's generator; for a model that writes trees it names the tree's symbols as
        symbols to strip from the output, which fairseq-generate leaves out of hypotheses and
        references alike before it prints and scores them, and (unless a ``seq_gen_cls`` is
        given) it is fairseq's generator writing well-formed trees (``tree_generation``;
        without the grammar's mask under ``--no-well-formed-trees``)."""
        if self.output_tree is not None and not getattr(args, "score_reference", False):
            extra_gen_cls_kwargs = dict(extra_gen_cls_kwargs or {})
            extra_gen_cls_kwargs["symbols_to_strip_from_output"] = (
                set(extra_gen_cls_kwargs.get("symbols_to_strip_from_output") or ())
                | self.output_tree.stripped_ids)
            if seq_gen_cls is None:
                seq_gen_cls = TreeSequenceGenerator
                if getattr(args, "print_alignment", False):
                    seq_gen_cls = TreeSequenceGeneratorWithAlignment
                    extra_gen_cls_kwargs["print_alignment"] = args.print_alignment
                extra_gen_cls_kwargs["tree_grammar"] = self.output_tree.grammar
                extra_gen_cls_kwargs["well_formed"] = not self.cfg.no_well_formed_trees
        return super().build_generator(models, args, seq_gen_cls, extra_gen_cls_kwargs,
                                       prefix_allowed_tokens_fn=prefix_allowed_tokens_fn)

    def inference_item(self, tree: NormalTree):
        """What the model reads of one inference input, a tree of the model's units
        (``SourceFormat.item``)."""
        return self.source.item(tree)

    def inference_dataset(self, items: List, targets: Optional[List[torch.Tensor]] = None,
                          constraints=None):
        """A dataset of ``inference_item``s, with ``targets`` of the pairs to score
        (``tree_pairs.inference_pair_dataset``)."""
        return inference_pair_dataset(items, self.source, self.target_dictionary, targets,
                                      constraints, self.cfg.left_pad_source,
                                      self.cfg.left_pad_target)

    def get_interactive_tokens_and_lengths(self, lines: List[str], encode_fn: Callable):
        """fairseq-interactive's hook: each line a bracketed tree, ``encode_fn`` (tokenizer +
        BPE) applied to each leaf; a bad line ends the run."""
        tokens = self.interactive.read(lines, encode_fn)
        return tokens, [t.numel() for t in tokens]

    def build_dataset_for_inference(self, src_tokens, src_lengths, constraints=None):
        if not self.reads_trees:
            return super().build_dataset_for_inference(src_tokens, src_lengths, constraints)
        return self.inference_dataset([self.interactive.tree(tokens, pop=False)
                                       for tokens in src_tokens], constraints=constraints)

    def inference_step(self, generator, models, sample, prefix_tokens=None, constraints=None,
                       log_written_trees: bool = True):
        """fairseq's step; of a model that writes trees, the best hypothesis of each sentence
        is counted in ``written_trees`` (well formed or not), and the tally logged unless
        ``log_written_trees`` is False (the hub, whose caller reads the tally)."""
        net_input = sample["net_input"]
        if self.reads_trees and "src_node_labels" not in net_input:
            sample = {**sample, "net_input": self.interactive.attach(
                net_input, self.source_dictionary.pad(), self.cfg.left_pad_source)}
        hypos = super().inference_step(
            generator, models, sample, prefix_tokens=prefix_tokens, constraints=constraints
        )
        if self.output_tree is not None and not isinstance(generator, SequenceScorer):
            batch = self.written_trees.add(self.output_tree.grammar, hypos)
            if log_written_trees:
                logger.info(self.written_trees.report(batch, writes_well_formed(generator)))
        return hypos
