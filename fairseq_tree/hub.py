"""Translating from Python, as fairseq's hub models do: raw sentences or bracketed trees in,
translations out. An application pipeline over a model, a task and a parser (tokenize, parse,
BPE, generate, detokenize), so it sits above them, as fairseq's ``hub_utils`` above its models.

    from fairseq_tree.models import Tree2SeqModel

    hub = Tree2SeqModel.from_pretrained(
        "checkpoints/tree2seq", checkpoint_file="checkpoint_best.pt",
        data_name_or_path="/data/bible-en-fr/data-bin",
        bpe_codes="/data/bible-en-fr/bpe/codes", parser="link-grammar")
    hub.translate("In the beginning, God created the heavens and the earth.")
    hub.translate(["(S (NP the dog) (VP barked))", ...], trees=True)   # batched
    Tree2SeqModel.from_pretrained("checkpoints/tree2seq", "checkpoint_best.pt",
                                  recipe="data/iwslt14-de-en", parser="stanza")

A raw sentence goes through the steps that made the training data (``fairseq-tree-translate``
is a command line over this): Moses tokenisation, parsing with a ``fairseq-tree-parse`` backend,
lowercasing of the leaves where the recipe lowercased, BPE on each leaf (subword-nmt codes or a
sentencepiece model), beam search, BPE removal and Moses detokenisation: the one text pipeline
(``fairseq_tree.inference.text``) over the one loader (``fairseq_tree.inference.loading``). Any checkpoint of the ``tree_translation``
task loads (tree2seq, or a Transformer on the leaves or the linearized trees).
"""

import copy
import logging
from typing import List, Optional, Tuple, Union

import torch
from fairseq import utils
from fairseq.hub_utils import GeneratorHubInterface
from omegaconf import open_dict

from fairseq_tree.data.recipe import Recipe, TextSteps
from fairseq_tree.data.tree_encoding import EncodedTree
from fairseq_tree.errors import FairseqTreeError
from fairseq_tree.inference.loading import load_for_inference
from fairseq_tree.inference.text import TextPipeline
from fairseq_tree.tasks.tree_translation import TreeTranslationTask
from fairseq_tree.trees.inputs import InputTreeError, read_input_tree

logger = logging.getLogger(__name__)

__all__ = ["TextSteps", "TranslationInputError", "TreeHubInterface", "from_pretrained"]

# What a source size counts, by --tree-input.
SIZE_UNITS = {"tree": "leaves + nodes", "leaves-only": "leaves", "linearized": "linearized tree"}


class TranslationInputError(FairseqTreeError):
    """An input sentence that cannot be translated; the message names it."""


def from_pretrained(model_name_or_path: str, checkpoint_file: str = "model.pt",
                    data_name_or_path: Optional[str] = None, recipe: Optional[str] = None,
                    archive_map=None, detokenize: bool = True, **kwargs) -> "TreeHubInterface":
    """A checkpoint of the tree_translation task for translating from Python (see
    ``Tree2SeqModel.from_pretrained``): the one loader (``inference.loading``) and the one text
    pipeline, with the recipe's text steps (its parser included) under the ones given."""
    if "tokenizer" in kwargs:
        raise FairseqTreeError("tokenizer=: raw sentences are tokenised for parsing and the output "
                               "detokenised by the tree pipeline: use tokenize= and detokenize=")
    if archive_map and model_name_or_path in archive_map:
        model_name_or_path = archive_map[model_name_or_path]
    record, overrides = None, {}
    if recipe is not None:
        record = Recipe.read(recipe, kind="translation")
        overrides = {"source_lang": record.src, "target_lang": record.tgt}
        data_name_or_path = data_name_or_path or record.data_bin
    loaded = load_for_inference(model_name_or_path, checkpoint_file, data_name_or_path,
                                text=kwargs, recipe=record, overrides=overrides)
    languages = (record.language(record.src), record.language(record.tgt)) if record else None
    return TreeHubInterface(loaded.cfg, loaded.task, loaded.models, loaded.text,
                            detokenize=detokenize, languages=languages)


class TreeHubInterface(GeneratorHubInterface):
    """fairseq's ``GeneratorHubInterface`` for the tree_translation task.

    ``translate(sentences, beam=5, verbose=False, trees=False, names=None,
    skip_invalid_size_inputs=False, **generation_options)`` takes one string or a list (translated
    in batches of ``--batch-size`` / ``--max-tokens``): raw sentences, parsed by ``text.parser``,
    or with ``trees=True`` bracketed trees of tokenised text. It returns the best hypothesis of
    each, "" for an empty sentence. A sentence longer than the model accepts raises
    ``TranslationInputError``, or with ``skip_invalid_size_inputs`` gives None and a warning;
    ``names`` (one per sentence, e.g. FILE:LINE) name sentences in errors and warnings.
    ``flat_fallbacks`` counts the sentences the parser could not parse (flat trees). Of a model
    that writes trees (``--target-trees``) a translation is the leaves of the tree written;
    with ``output_trees=True`` it is that tree, bracketed (``(S (NP le chien) (VN a aboyé))``:
    subwords joined into words, not detokenized), and ``written_trees`` tallies the malformed
    ones (none while the task keeps the trees it writes well formed, its default).

    ``score(sources, targets, trees=False, names=None)`` gives the model's log-probability of
    each given translation instead (see its docstring). Sources and targets go through one text
    pipeline each (``inference.text.TextPipeline``), and reach the task as items
    (``inference_item``, ``inference_dataset``).
    """

    def __init__(self, cfg, task, models, steps: Optional[TextSteps] = None,
                 detokenize: bool = True, languages: Optional[Tuple[str, str]] = None):
        if not isinstance(task, TreeTranslationTask):
            raise FairseqTreeError(f"{type(task).__name__}: the checkpoint's task is not "
                                   "tree_translation")
        super().__init__(cfg, task, models)
        self.eval()
        self.steps = steps or TextSteps()
        self.source_lang, self.target_lang = task.cfg.source_lang, task.cfg.target_lang
        # the parser's and Moses' languages: the sides' names unless the recipe says otherwise
        source_language, target_language = languages or (self.source_lang, self.target_lang)
        self.source_text = TextPipeline(self.steps, source_language)
        self.target_text = TextPipeline(self.steps, target_language,  # the same BPE, read once
                                        segment=self.source_text.segment)
        self.detokenizer = None
        if detokenize:
            from sacremoses import MosesDetokenizer

            self.detokenizer = MosesDetokenizer(lang=target_language)

    @property
    def flat_fallbacks(self) -> int:
        """Sentences the parser could not parse (given flat trees) so far."""
        return self.source_text.flat_fallbacks

    @property
    def written_trees(self):
        """Of a model that writes trees, the best hypotheses written so far and how many of
        them were malformed trees (``.written``, ``.malformed``; none are while the task's
        well-formed trees are on)."""
        return self.task.written_trees

    @property
    def text(self) -> TextPipeline:
        """The pipeline raw input goes through (the sources)."""
        return self.source_text

    def sample(self, sentences, beam: int = 1, verbose: bool = False, trees: bool = False,
               names: Optional[List[str]] = None, skip_invalid_size_inputs: bool = False,
               output_trees: bool = False, **kwargs):
        """Translations of ``sentences`` (see the class docstring)."""
        if isinstance(sentences, str):
            return self.sample([sentences], beam, verbose, trees, names or ["sentence"],
                               skip_invalid_size_inputs, output_trees, **kwargs)[0]
        if output_trees and self.task.output_tree is None:
            raise FairseqTreeError("output_trees: the model writes text, not trees (it was "
                                   "trained without --target-trees)")
        names = names or [f"sentences[{i}]" for i in range(len(sentences))]
        if len(names) != len(sentences):
            raise FairseqTreeError(f"{len(names)} names for {len(sentences)} sentences")
        outputs: List[Optional[str]] = ["" if not s.strip() else None for s in sentences]
        real = [i for i, sentence in enumerate(sentences) if sentence.strip()]
        if not real:
            return outputs
        items = self.encode_sources([sentences[i] for i in real], trees, [names[i] for i in real])
        fitting = self.fitting(items, [names[i] for i in real], skip_invalid_size_inputs)
        if fitting:
            # the task tallies written trees; the hub's caller reads the tally
            hypos = self.generate([items[k] for k in fitting], beam, verbose,
                                  inference_step_args={"log_written_trees": False}, **kwargs)
            for k, best in zip(fitting, hypos):
                outputs[real[k]] = (
                    self.task.output_tree.bracketed(best[0]["tokens"], self.remove_bpe)
                    if output_trees else self.decode(best[0]["tokens"]))
        return outputs

    def score(self, sources: Union[str, List[str]], targets: Union[str, List[str]],
              trees: bool = False, names: Optional[List[str]] = None,
              per_token: bool = False) -> Union[float, List[float], List[List[float]]]:
        """The model's log-probability (natural log) of each target given its source: the sum over
        the target's subword tokens and its end of sentence, what ``fairseq-generate
        --score-reference`` computes (the task's reference scorer, fairseq's
        ``SequenceScorer``; it prints the mean over the tokens, in base 2). Sources go through
        ``translate``'s steps (parsing unless ``trees``); targets are tokenised, lowercased and
        split into subwords as the training targets were. ``per_token``: each target's
        per-token log-probabilities instead of their sum. An empty source or target, a target
        with no known subword, or a pair longer than the model accepts raises
        ``TranslationInputError`` naming the pair (``names``, one per pair, e.g. FILE:LINE)."""
        if isinstance(sources, str) and isinstance(targets, str):
            return self.score([sources], [targets], trees, names or ["pair"], per_token)[0]
        if len(sources) != len(targets):
            raise FairseqTreeError(f"{len(sources)} sources for {len(targets)} targets")
        names = names or [f"pairs[{i}]" for i in range(len(sources))]
        if len(names) != len(sources):
            raise FairseqTreeError(f"{len(names)} names for {len(sources)} pairs")
        for name, source, target in zip(names, sources, targets):
            if not source.strip() or not target.strip():
                side = "source" if not source.strip() else "target"
                raise TranslationInputError(f"{name}: empty {side}: nothing to score")
        if not sources:
            return []
        items = self.encode_sources(list(sources), trees, names)
        tgt_tokens = self.encode_targets(list(targets), names)
        self.fitting(items, names, skip=False)
        self.fitting_targets(tgt_tokens, names)
        scores: List[Optional[torch.Tensor]] = [None] * len(sources)
        generation = copy.deepcopy(self.cfg.generation)
        with open_dict(generation):
            generation.score_reference = True
        scorer = self.task.build_generator(self.models, generation)
        batches = self.task.get_batch_iterator(
            dataset=self.task.inference_dataset(items, tgt_tokens),
            max_tokens=self.cfg.dataset.max_tokens, max_sentences=self.cfg.dataset.batch_size,
            max_positions=self.max_positions, ignore_invalid_inputs=False,
            disable_iterator_cache=True).next_epoch_itr(shuffle=False)
        for batch in batches:
            batch = utils.apply_to_sample(lambda t: t.to(self.device), batch)
            for index, hypos in zip(batch["id"].tolist(),
                                    self.task.inference_step(scorer, self.models, batch)):
                scores[index] = hypos[0]["positional_scores"].float().cpu()
        if per_token:
            return [s.tolist() for s in scores]
        return [s.double().sum().item() for s in scores]

    def parse(self, sentences: List[str]) -> List[str]:
        """Raw sentences -> bracketed trees (tokenised and parsed as ``steps`` say)."""
        if not self.source_text.parses:
            raise TranslationInputError("no parser for raw sentences: load the model with "
                                        "parser=... (a fairseq-tree-parse backend), or give "
                                        "bracketed trees with trees=True")
        return [result.tree for result in self.source_text.parse(sentences)]

    def encode_sources(self, sentences: List[str], trees: bool, names: List[str]) -> List:
        """Each source as the task's ``inference_item``: parsed unless ``trees``, read as a
        tree, its leaves lowercased and split into subwords as the recipe's were."""
        if not trees:
            sentences = self.parse(sentences)
        items = []
        for index, (line, name) in enumerate(zip(sentences, names)):
            try:
                tree = self.source_text.subword_tree(read_input_tree(line, index))
            except InputTreeError as err:
                raise TranslationInputError(f"{name}: {err.reason}") from None
            except ValueError as err:
                raise TranslationInputError(f"{name}: {err}") from None
            items.append(self.task.inference_item(tree))
        return items

    def encode_targets(self, sentences: List[str], names: List[str]) -> List[torch.Tensor]:
        """Target token ids (ending in EOS) of translations, tokenised (in the target language),
        lowercased and split into subwords as the recipe made the training targets; a model
        that writes trees is given bracketed target trees, their leaves split into subwords, as
        the tree it would write."""
        if self.task.output_tree is not None:
            return [self.encode_target_tree(line, index, name)
                    for index, (line, name) in enumerate(zip(sentences, names))]
        encoded = []
        for name, sentence in zip(names, sentences):
            pieces = self.target_text.subword_text(sentence)
            ids = self.tgt_dict.encode_line(pieces, add_if_not_exist=False,
                                            append_eos=True).long()
            if ids[:-1].eq(self.tgt_dict.unk()).all():
                raise TranslationInputError(f"{name}: no subword of the target is in the model's "
                                            "target dictionary")
            encoded.append(ids)
        return encoded

    def encode_target_tree(self, line: str, index: int, name: str) -> torch.Tensor:
        try:
            tree = self.target_text.subword_tree(read_input_tree(line, index))
        except InputTreeError as err:
            raise TranslationInputError(f"{name}: the model writes trees, and the target "
                                        f"is not one: {err.reason}") from None
        except ValueError as err:
            raise TranslationInputError(f"{name}: {err}") from None
        return self.task.output_tree.item(tree)

    def fitting_targets(self, tokens: List[torch.Tensor], names: List[str]):
        """Raise ``TranslationInputError`` for the first target longer than the model accepts."""
        limit = self.max_positions[1] if isinstance(self.max_positions, tuple) else None
        for name, ids in zip(names, tokens):
            if limit is not None and ids.numel() > limit:
                raise TranslationInputError(f"{name}: {ids.numel()} target tokens exceed the "
                                            f"model's {limit}")

    def fitting(self, items: List, names: List[str], skip: bool) -> List[int]:
        """Indices of the sources the model accepts; the others raise, or are warned about
        when ``skip``."""
        sizes = self.task.inference_dataset(items).src_sizes
        limit = self.max_positions[0] if isinstance(self.max_positions, tuple) else None
        keep = []
        for k, size in enumerate(sizes):
            if limit is None or size <= limit:
                keep.append(k)
                continue
            message = (f"{names[k]}: {size} source tokens "
                       f"({SIZE_UNITS[self.task.cfg.tree_input]}) exceed the model's {limit}")
            if not skip:
                raise TranslationInputError(message)
            logger.warning(f"{message}; not translated")
        return keep

    def _build_batches(self, items: List, skip_invalid_size_inputs: bool):
        """fairseq's batches of the sources, built from the items themselves."""
        return self.task.get_batch_iterator(
            dataset=self.task.inference_dataset(items), max_tokens=self.cfg.dataset.max_tokens,
            max_sentences=self.cfg.dataset.batch_size, max_positions=self.max_positions,
            ignore_invalid_inputs=skip_invalid_size_inputs, disable_iterator_cache=True,
        ).next_epoch_itr(shuffle=False)

    def string(self, tokens) -> str:
        """The target symbols of ``tokens``; of a written tree, its leaves."""
        output_tree = self.task.output_tree
        return self.tgt_dict.string(tokens.leaves if isinstance(tokens, EncodedTree) else tokens,
                                    extra_symbols_to_ignore=output_tree.stripped_ids
                                    if output_tree is not None else set())

    def remove_bpe(self, sentence: str) -> str:
        return self.target_text.merge_subwords(sentence)

    def detokenize(self, sentence: str) -> str:
        return self.detokenizer.detokenize(sentence.split()) if self.detokenizer else sentence
