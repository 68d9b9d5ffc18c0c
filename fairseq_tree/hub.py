"""Translating from Python, as fairseq's hub models do: raw sentences or bracketed trees in,
translations out. An application pipeline over a model, a task and a parser (tokenize, parse,
BPE, generate, detokenize), so it sits above them, as fairseq's ``hub_utils`` above its models.

    from fairseq_tree.models import Tree2SeqModel

    hub = Tree2SeqModel.from_pretrained(
        "checkpoints/tree2seq", checkpoint_file="checkpoint_best.pt",
        data_name_or_path="/data/bible-en-fr/data-bin", bpe="subword_nmt",
        bpe_codes="/data/bible-en-fr/bpe/codes", parser="link-grammar")
    hub.translate("In the beginning, God created the heavens and the earth.")
    hub.translate(["(S (NP the dog) (VP barked))", ...], trees=True)   # batched
    Tree2SeqModel.from_pretrained("checkpoints/tree2seq", "checkpoint_best.pt",
                                  recipe="data/iwslt14-de-en", parser="stanza")

A raw sentence goes through the steps that made the training data (``fairseq-tree-translate``
is a command line over this): Moses tokenisation, parsing with a ``fairseq-tree-parse`` backend,
lowercasing of the leaves where the recipe lowercased, BPE on each leaf (fairseq's ``--bpe``),
beam search, BPE removal and Moses detokenisation. Any checkpoint of the ``tree_translation``
task loads (tree2seq, or a Transformer on the leaves or the linearized trees).
"""

import copy
import dataclasses
import logging
import os
from typing import Dict, List, Optional, Union

import torch
from fairseq import hub_utils, utils
from fairseq.hub_utils import GeneratorHubInterface
from omegaconf import open_dict

from fairseq_tree.data.recipe import TranslationRecipe, read_recipe, read_settings, with_recipe
from fairseq_tree.errors import FairseqTreeError
from fairseq_tree.parsing import Parser
from fairseq_tree.parsing.moses import build_tokenizer
from fairseq_tree.parsing.options import recorded_options
from fairseq_tree.parsing.raw_text import RawTextParser, RawTextSteps
from fairseq_tree.tasks.tree_translation import InputTreeError, TreeTranslationTask
from fairseq_tree.trees.bracketed import lowercase_leaf

logger = logging.getLogger(__name__)

# What a source size counts, by --tree-input.
SIZE_UNITS = {"tree": "leaves + nodes", "leaves-only": "leaves", "linearized": "linearized tree"}


class TranslationInputError(FairseqTreeError):
    """An input sentence that cannot be translated; the message names it."""


@dataclasses.dataclass
class TextSteps:
    """How a raw source sentence becomes a tree, and a translation text (the options of
    ``fairseq-tree-translate``)."""

    parser: Optional[Union[str, Parser]] = None  # a fairseq-tree-parse backend; None: trees only
    parser_options: Dict = dataclasses.field(default_factory=dict)  # its build_parser options
    tokenize: str = "moses"  # or "none": whitespace-separated tokens
    normalize_punctuation: bool = False  # Moses punctuation normalisation first
    quote: bool = False  # ’ -> ' first, as the recipes do to their test sets
    aggressive_dash_splits: bool = False  # Moses -a
    lowercase: bool = False  # lowercase the leaves after parsing (the IWSLT recipes)
    detokenize: bool = True  # Moses detokenisation of the output


def from_pretrained(model_name_or_path: str, checkpoint_file: str = "model.pt",
                    data_name_or_path: Optional[str] = None, recipe: Optional[str] = None,
                    archive_map=None, **kwargs) -> "TreeHubInterface":
    """fairseq's ``hub_utils.from_pretrained`` for the tree_translation task (see
    ``Tree2SeqModel.from_pretrained``)."""
    if recipe is not None:
        kwargs = with_recipe({"data_name_or_path": data_name_or_path, **kwargs},
                             TranslationRecipe.read(recipe).hub_options())
        data_name_or_path = kwargs.pop("data_name_or_path")
    steps = TextSteps(**{f.name: kwargs.pop(f.name) for f in dataclasses.fields(TextSteps)
                         if f.name in kwargs})
    data = _local_folder(model_name_or_path, data_name_or_path or ".")
    kwargs.setdefault("bpe", _bpe_method(model_name_or_path, kwargs))
    kwargs = {key: value for key, value in kwargs.items() if value is not None}  # None: not given
    if "tokenizer" in kwargs:
        raise FairseqTreeError("tokenizer=: raw sentences are tokenised for parsing and the output "
                         "detokenised by the tree pipeline: use tokenize= and detokenize=")
    loaded = hub_utils.from_pretrained(model_name_or_path, checkpoint_file, data,
                                       archive_map=archive_map, **kwargs)
    return TreeHubInterface(loaded["args"], loaded["task"], loaded["models"], steps)


def recipe_parser(folder: str) -> Dict:
    """The parser a translation recipe made its training trees with, as ``from_pretrained``
    keywords: ``parser`` (recipe.json) and ``parser_options`` (the parser arguments settings.json
    recorded, and the spaCy pipeline recipe.json names); empty when it records no parser."""
    record = read_recipe(folder)
    if not record.get("parser"):
        return {}
    try:
        options = recorded_options(read_settings(folder).get("parser_arg") or [])
    except ValueError as err:
        raise FairseqTreeError(f"{folder}/settings.json: {err}") from None
    if record.get("spacy"):
        options["spacy_model"] = record["spacy"]["model"]
    return {"parser": record["parser"], "parser_options": options}


# BPE files that fairseq's from_pretrained takes from a model folder, and their --bpe.
MODEL_FOLDER_BPE = {"code": "subword_nmt", "bpecodes": "subword_nmt",
                    "sentencepiece.bpe.model": "sentencepiece"}


def _bpe_method(model_folder: str, kwargs: Dict) -> Optional[str]:
    """fairseq's ``--bpe`` for the BPE files given (or found in the model folder, where
    fairseq finds them): codes without it would be read but never applied."""
    if kwargs.get("bpe_codes"):
        return "subword_nmt"
    if kwargs.get("sentencepiece_model"):
        return "sentencepiece"
    for name, method in MODEL_FOLDER_BPE.items():
        if os.path.exists(os.path.join(model_folder, name)):
            return method
    return None


def _local_folder(model_name_or_path: str, data_name_or_path: str) -> str:
    """The data folder as fairseq resolves it (a path starting with "." is inside the model
    folder), checked here: fairseq turns a missing folder into an obscure failure later."""
    if "://" in data_name_or_path or "://" in model_name_or_path:
        return data_name_or_path
    if not os.path.isdir(model_name_or_path):
        raise FileNotFoundError(f"{model_name_or_path}: no such model folder")
    path = data_name_or_path
    if path.startswith("."):
        path = os.path.join(model_name_or_path, path)
    if not os.path.isdir(path):
        raise FileNotFoundError(f"{path}: no such data folder (data_name_or_path)")
    return os.path.abspath(path)


class TreeHubInterface(GeneratorHubInterface):
    """fairseq's ``GeneratorHubInterface`` for the tree_translation task.

    ``translate(sentences, beam=5, verbose=False, trees=False, names=None,
    skip_invalid_size_inputs=False, **generation_options)`` takes one string or a list (translated
    in batches of ``--batch-size`` / ``--max-tokens``): raw sentences, parsed by ``steps.parser``,
    or with ``trees=True`` bracketed trees of tokenised text. It returns the best hypothesis of
    each, "" for an empty sentence. A sentence longer than the model accepts raises
    ``TranslationInputError``, or with ``skip_invalid_size_inputs`` gives None and a warning;
    ``names`` (one per sentence, e.g. FILE:LINE) name sentences in errors and warnings.
    ``flat_fallbacks`` counts the sentences the parser could not parse (flat trees).

    ``score(sources, targets, trees=False, names=None)`` gives the model's log-probability of
    each given translation instead (see its docstring).
    """

    def __init__(self, cfg, task, models, steps: Optional[TextSteps] = None):
        if not isinstance(task, TreeTranslationTask):
            raise FairseqTreeError(f"{type(task).__name__}: the checkpoint's task is not "
                             "tree_translation")
        super().__init__(cfg, task, models)
        self.eval()
        self.steps = steps or TextSteps()
        self.source_lang, self.target_lang = task.cfg.source_lang, task.cfg.target_lang
        self.raw_text = None
        if self.steps.parser is not None:
            self.raw_text = RawTextParser(RawTextSteps(
                self.steps.parser, self.steps.parser_options, self.steps.tokenize,
                normalize=self.steps.normalize_punctuation,
                aggressive=self.steps.aggressive_dash_splits, quote=self.steps.quote),
                self.source_lang)
        self.detokenizer = None
        if self.steps.detokenize:
            from sacremoses import MosesDetokenizer

            self.detokenizer = MosesDetokenizer(lang=self.target_lang)

    @property
    def flat_fallbacks(self) -> int:
        """Sentences the parser could not parse (given flat trees) so far."""
        return self.raw_text.flat_fallbacks if self.raw_text else 0

    def sample(self, sentences, beam: int = 1, verbose: bool = False, trees: bool = False,
               names: Optional[List[str]] = None, skip_invalid_size_inputs: bool = False,
               **kwargs):
        """Translations of ``sentences`` (see the class docstring)."""
        if isinstance(sentences, str):
            return self.sample([sentences], beam, verbose, trees, names or ["sentence"],
                               skip_invalid_size_inputs, **kwargs)[0]
        names = names or [f"sentences[{i}]" for i in range(len(sentences))]
        if len(names) != len(sentences):
            raise FairseqTreeError(f"{len(names)} names for {len(sentences)} sentences")
        outputs: List[Optional[str]] = ["" if not s.strip() else None for s in sentences]
        real = [i for i, sentence in enumerate(sentences) if sentence.strip()]
        if not real:
            return outputs
        tokens = self.encode_sources([sentences[i] for i in real], trees, [names[i] for i in real])
        fitting = self.fitting(tokens, [names[i] for i in real], skip_invalid_size_inputs)
        if fitting:
            hypos = self.generate([tokens[k] for k in fitting], beam, verbose, **kwargs)
            for k, best in zip(fitting, hypos):
                outputs[real[k]] = self.decode(best[0]["tokens"])
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
        src_tokens = self.encode_sources(list(sources), trees, names)
        tgt_tokens = self.encode_targets(list(targets), names)
        self.fitting(src_tokens, names, skip=False)
        self.fitting_targets(tgt_tokens, names)
        scores: List[Optional[torch.Tensor]] = [None] * len(sources)
        generation = copy.deepcopy(self.cfg.generation)
        with open_dict(generation):
            generation.score_reference = True
        scorer = self.task.build_generator(self.models, generation)
        batches = self.task.get_batch_iterator(
            dataset=self.task.build_dataset_for_scoring(src_tokens, tgt_tokens),
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

    def encode_targets(self, sentences: List[str], names: List[str]) -> List[torch.Tensor]:
        """Target token ids (ending in EOS) of translations, tokenised (Moses, in the target
        language), lowercased and split into subwords as the recipe made the training targets."""
        tokenize = build_tokenizer(self.steps.tokenize, self.target_lang,
                                   normalize=self.steps.normalize_punctuation,
                                   aggressive=self.steps.aggressive_dash_splits,
                                   quote=self.steps.quote)
        encoded = []
        for name, sentence in zip(names, sentences):
            text = " ".join(tokenize(sentence))
            pieces = self.apply_bpe(text.lower() if self.steps.lowercase else text)
            ids = self.tgt_dict.encode_line(pieces, add_if_not_exist=False,
                                            append_eos=True).long()
            if ids[:-1].eq(self.tgt_dict.unk()).all():
                raise TranslationInputError(f"{name}: no subword of the target is in the model's "
                                            "target dictionary")
            encoded.append(ids)
        return encoded

    def fitting_targets(self, tokens: List[torch.Tensor], names: List[str]):
        """Raise ``TranslationInputError`` for the first target longer than the model accepts."""
        limit = self.max_positions[1] if isinstance(self.max_positions, tuple) else None
        for name, ids in zip(names, tokens):
            if limit is not None and ids.numel() > limit:
                raise TranslationInputError(f"{name}: {ids.numel()} target tokens exceed the "
                                            f"model's {limit}")

    def parse(self, sentences: List[str]) -> List[str]:
        """Raw sentences -> bracketed trees (tokenised as ``steps`` say)."""
        if self.raw_text is None:
            raise TranslationInputError("no parser for raw sentences: load the model with "
                                        "parser=... (a fairseq-tree-parse backend), or give "
                                        "bracketed trees with trees=True")
        return [result.tree for result in self.raw_text.parse(sentences)]

    def encode_sources(self, sentences: List[str], trees: bool,
                       names: List[str]) -> List[torch.Tensor]:
        """Source token ids of each sentence, as the task gives them to the model."""
        if not trees:
            sentences = self.parse(sentences)
        try:
            return self.task.inference_sources(sentences, self.encode_leaf)
        except InputTreeError as err:
            raise TranslationInputError(f"{names[err.index]}: {err.reason}") from None

    def encode_leaf(self, word: str) -> str:
        """One leaf as BPE pieces joined by spaces (what the task's tree reader expects)."""
        return self.apply_bpe(lowercase_leaf(word) if self.steps.lowercase else word)

    def fitting(self, tokens: List[torch.Tensor], names: List[str], skip: bool) -> List[int]:
        """Indices of the sources the model accepts; the others raise, or are warned about
        when ``skip``."""
        sizes = self.task.build_dataset_for_inference(tokens, [t.numel() for t in tokens]).src_sizes
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

    def detokenize(self, sentence: str) -> str:
        return self.detokenizer.detokenize(sentence.split()) if self.detokenizer else sentence
