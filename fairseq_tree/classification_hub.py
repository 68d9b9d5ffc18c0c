"""Classifying from Python, as fairseq's ``RobertaHubInterface.predict``: raw sentences (sentence
pairs, bracketed trees) in, each one's class and class probabilities out, for any checkpoint of
the ``tree_classification`` task (tree_classifier, the recursive classifiers, fairseq's roberta
on the leaves). An application pipeline over a model, a task and a parser, above them all, as
``fairseq_tree.hub`` is for translation.

    from fairseq_tree.classification_hub import from_pretrained

    hub = from_pretrained("checkpoints/agreement/roberta", "checkpoint_best.pt",
                          recipe="data/agreement")
    hub.predict(["The keys to the cabinet"])   # [Prediction(label="1", probabilities={"0":
                                               #  0.12, "1": 0.88}, name="plural (VBP)")]
    hub.predict(["(S (NP (DT The) (NNS keys)))"], trees=True)
    hub.predict([("A man is playing a guitar", "A person plays")])   # pairs: SICK-E, MSRP

A raw sentence goes through the steps that made the recipe's trees, read from its
``recipe.json`` (``data.recipe.Recipe``): its tokenization (Moses with punctuation
normalization; IMDB's sentence splitting and cut; the agreement recipe's spaCy tokenizer), its
parser with the recorded arguments and spaCy pipeline, BPE on each leaf with its codes. The task
then makes of it the batch that ``load_dataset`` makes of a binarized example
(``TreeClassificationTask.inference_dataset``: the leaves for roberta, the trees, the spaCy
parse's dependency heads for DTT), and the model classifies it as fairseq-validate does.
``fairseq-tree-classify`` is a command line over this.
"""

import logging
import os
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple, Union

import torch
import torch.nn.functional as F
from fairseq import utils
from fairseq.data import Dictionary
from torch import nn

from fairseq_tree.criterions.node_classification import parse_class_groups
from fairseq_tree.data.dependency_heads import lowercase_forms, parse_heads, subword_conllu
from fairseq_tree.data.label_dictionary import class_symbols
from fairseq_tree.data.recipe import Recipe, TextSteps
from fairseq_tree.data.tree_files import HEADS
from fairseq_tree.errors import FairseqTreeError
from fairseq_tree.checkpoints import read_checkpoint
from fairseq_tree.inference.loading import TEXT_STEPS, load_for_inference
from fairseq_tree.inference.text import TextPipeline
from fairseq_tree.tasks.tree_classification import TreeClassificationTask
from fairseq_tree.trees.inputs import InputTreeError, read_input_tree

logger = logging.getLogger(__name__)

Sentence = Union[str, Tuple[str, str]]  # one sentence, or a sentence pair


class ClassificationInputError(FairseqTreeError):
    """An input that cannot be classified; the message names it."""


@dataclass(frozen=True)
class Prediction:
    """One input's class: its symbol in the class dictionary ("0", "1", ...), the probability of
    every class, and the class's name where the recipe gives one."""

    label: str
    probabilities: Dict[str, float]
    name: Optional[str] = None

    @property
    def probability(self) -> float:
        return self.probabilities[self.label]


def from_pretrained(model_name_or_path: str, checkpoint_file: str = "model.pt",
                    data_name_or_path: Optional[str] = None, recipe: Optional[str] = None,
                    view: Optional[str] = None, class_names: Optional[List[str]] = None,
                    batch_size: int = 32, raw_text_refused: Optional[str] = None,
                    lang: str = "en", **kwargs) -> "TreeClassifierHubInterface":
    """Load a checkpoint of the ``tree_classification`` task for classifying from Python.

    Args:
        model_name_or_path: the folder of the checkpoint; checkpoint_file: its file name.
        data_name_or_path: the data-bin folder (dictionaries; default: the recipe's).
        recipe: a classification recipe's output folder: its ``recipe.json`` gives the data-bin
            of ``view`` (default: the view whose data-bin the checkpoint was trained on, or the
            only one), the class names, BPE codes, parser and text steps.
        kwargs: ``TextSteps``' fields (``parser``, ``parser_options``, ``tokenize``, ...,
            ``bpe_codes``); given ones win over the recipe's (a flag is on where either sets it).
        raw_text_refused: why raw text is not to be read (e.g. "--trees"; a recipe may say).
    """
    unknown = sorted(set(kwargs) - TEXT_STEPS)
    if unknown:
        raise TypeError(f"from_pretrained: unknown keywords {', '.join(unknown)}")
    path = os.path.join(model_name_or_path, checkpoint_file)
    state = read_checkpoint(path)
    record, refused = None, raw_text_refused
    if recipe is not None:
        record = Recipe.read(recipe, kind="classification")
        view = record.view(view, state["cfg"].task.data)
        data_name_or_path = data_name_or_path or record.view_data_bin(view)
        class_names = class_names or record.class_names(view)
        refused = refused or record.raw_text_refused
    if not data_name_or_path or not os.path.isdir(data_name_or_path):
        raise FileNotFoundError(f"{data_name_or_path}: no such data folder (data_name_or_path)")
    loaded = load_for_inference(model_name_or_path, checkpoint_file,
                                os.path.abspath(data_name_or_path), text=kwargs, recipe=record,
                                state=state)
    return TreeClassifierHubInterface(loaded.cfg, loaded.task, loaded.models[0], loaded.text,
                                      class_names=class_names, raw_text_refused=refused,
                                      batch_size=batch_size, lang=lang)


class TreeClassifierHubInterface(nn.Module):
    """``predict(sentences, trees=False, names=None)`` for a ``tree_classification`` model.

    ``sentences``: one input or a list (classified in batches of ``batch_size``): raw text
    (tokenized and parsed as ``steps`` say), a pair of them for a model of sentence pairs, or
    with ``trees=True`` bracketed trees of tokenized text (a pair: two trees). Returns a
    ``Prediction`` for each. An input that cannot be classified (empty, not a tree, longer than
    the model accepts) raises ``ClassificationInputError`` naming it (``names``: one per input,
    e.g. FILE:LINE). Models trained on node targets (SST) are read at the root, with the
    criterion's ``--class-groups`` where it had them (SST-2 from five classes).
    ``flat_fallbacks`` counts the sentences the parser could not parse (flat trees).
    """

    def __init__(self, cfg, task, model, steps: Optional[TextSteps] = None,
                 class_names: Optional[List[str]] = None,
                 raw_text_refused: Optional[str] = None, batch_size: int = 32,
                 lang: str = "en"):
        super().__init__()
        if not isinstance(task, TreeClassificationTask):
            raise FairseqTreeError(f"{type(task).__name__}: the checkpoint's task is not "
                                   "tree_classification")
        if task.cfg.regression_target:
            raise FairseqTreeError("the checkpoint predicts scores (--regression-target), not "
                                   "classes: predict() is for classifiers")
        self.cfg, self.task, self.model = cfg, task, model
        self.model.eval()
        self.steps, self.batch_size = steps or TextSteps(), batch_size
        self.raw_text_refused = raw_text_refused  # why raw text cannot be read (None: it can)
        self.text = TextPipeline(self.steps, lang)
        if not raw_text_refused:
            self.text.prepare()
        self.reads_heads = task.leaf_annotations.get(HEADS, False)
        self.check_heads()
        self.symbols, self.group_of = self.classes()
        self.class_names = class_names
        self.max_positions = utils.resolve_max_positions(task.max_positions(),
                                                         model.max_positions())
        self.register_buffer("_float_tensor", torch.tensor([0], dtype=torch.float),
                             persistent=False)

    @property
    def device(self):
        return self._float_tensor.device

    @property
    def flat_fallbacks(self) -> int:
        """Sentences the parser could not parse (given flat trees) so far."""
        return self.text.flat_fallbacks

    def check_heads(self):
        """A model that reads dependency heads (DTT) gets them from a spaCy parse, as the recipe
        did: no other parser gives them."""
        parser = self.steps.parser
        name = parser if isinstance(parser, str) or parser is None else parser.name
        if self.reads_heads and name is not None and name != "spacy" \
                and not self.raw_text_refused:
            raise FairseqTreeError(f"{self.task.model_name} reads dependency heads, which come "
                                   f"from a spaCy parse: parser {name!r} gives none "
                                   "(parser='spacy', --parser spacy)")

    def classes(self) -> Tuple[List[str], Optional[torch.Tensor]]:
        """The class symbols predicted, and the class of each output when the criterion grouped
        them (``node_classification --class-groups``: SST-2 from a five-class model), whose
        symbols are the data's sentence classes (label/dict.txt) where it has as many."""
        symbols = class_symbols(self.task.label_dictionary)
        spec = getattr(self.cfg.criterion, "class_groups", None) if self.task.cfg.node_targets \
            else None
        group_of = parse_class_groups(spec, self.task.label_dictionary)
        if group_of is None:
            return symbols, None
        groups = spec.split("/")
        labels = os.path.join(self.task.cfg.data, "label", "dict.txt")
        if os.path.isfile(labels) and len(class_symbols(Dictionary.load(labels))) == len(groups):
            groups = class_symbols(Dictionary.load(labels))
        return groups, group_of

    def predict(self, sentences: Union[Sentence, Sequence[Sentence]], trees: bool = False,
                names: Optional[List[str]] = None) -> Union[Prediction, List[Prediction]]:
        """The class of each input (see the class docstring)."""
        if isinstance(sentences, (str, tuple)):
            return self.predict([sentences], trees, names or ["sentence"])[0]
        names = names or [f"sentences[{i}]" for i in range(len(sentences))]
        if len(names) != len(sentences):
            raise FairseqTreeError(f"{len(names)} names for {len(sentences)} sentences")
        predictions = []
        for start in range(0, len(sentences), self.batch_size):
            end = start + self.batch_size
            examples = self.encode(list(sentences[start:end]), trees, names[start:end])
            predictions += self.classify(examples)
        return predictions

    def encode(self, sentences: List[Sentence], trees: bool, names: List[str]) -> List[List]:
        """Each input as the task's ``inference_input``s (two for a pair), checked to fit."""
        sides = [self.sides(sentence, name) for sentence, name in zip(sentences, names)]
        texts = [(text, name) for side, name in zip(sides, names) for text in side]
        parsed = self.bracketed([text for text, _ in texts], trees, [name for _, name in texts])
        inputs = iter(self.task.inference_input(*self.input_tree(tree, conllu, name))
                      for (tree, conllu), (_, name) in zip(parsed, texts))
        examples = [[next(inputs) for _ in side] for side in sides]
        self.check_sizes(examples, names)
        return examples

    def sides(self, sentence: Sentence, name: str) -> List[str]:
        """The texts of one input: one sentence, or the two of a pair."""
        texts = [text.strip() for text in (
            sentence if isinstance(sentence, (tuple, list)) else [sentence])]
        if not any(texts):
            raise ClassificationInputError(f"{name}: empty: nothing to classify")
        if len(texts) != (2 if self.task.sentence_pairs else 1):
            raise ClassificationInputError(
                f"{name}: the model classifies sentence pairs: give two sentences (a tuple; on "
                "a line, a TAB between them)" if self.task.sentence_pairs else
                f"{name}: the model classifies single sentences, not pairs")
        if not all(texts):
            raise ClassificationInputError(f"{name}: one sentence of the pair is empty")
        return texts

    def bracketed(self, texts: List[str], trees: bool,
                  names: List[str]) -> List[Tuple[str, Optional[str]]]:
        """(bracketed tree, its CoNLL-U parse or None) of each text: given (``trees``), or
        tokenized and parsed."""
        if trees:
            return [(text, None) for text in texts]
        if self.raw_text_refused or not self.text.parses:
            raise ClassificationInputError(
                f"raw text is not read here ({self.raw_text_refused}): give bracketed trees "
                "(trees=True, --trees)" if self.raw_text_refused else
                "no parser for raw sentences: load the model with parser=... (a "
                "fairseq-tree-parse backend), or give bracketed trees with trees=True")
        results = self.text.parse(texts)
        for result, name in zip(results, names):
            if not result.tree:
                raise ClassificationInputError(f"{name}: no words after tokenization")
        return [(result.tree, result.conllu) for result in results]

    def input_tree(self, line: str, conllu: Optional[str], name: str):
        """The tree of one text (BPE applied) and, where the model reads them, its dependency
        heads (a word's pieces under its last piece, as the recipe's ``subword_conllu``)."""
        try:
            tree = read_input_tree(line, 0)
        except InputTreeError as err:
            raise ClassificationInputError(f"{name}: {err.reason}") from None
        try:
            tree = self.text.subword_tree(tree)
        except ValueError as err:
            raise ClassificationInputError(f"{name}: {err}") from None
        if not self.reads_heads:
            return tree, None
        if conllu is None:
            raise ClassificationInputError(
                f"{name}: {self.task.model_name} reads dependency heads: only a spaCy parse of "
                "one sentence gives them, not a bracketed tree")
        if self.text.steps.lowercase:  # the words as the leaves have them
            conllu = lowercase_forms(conllu)
        if self.text.segment is not None:
            try:
                conllu = subword_conllu(conllu, tree.leaves)
            except ValueError as err:
                raise ClassificationInputError(f"{name}: the parse does not follow the pieces: "
                                               f"{err}") from None
        return tree, parse_heads(conllu, tree.leaves, name)

    def check_sizes(self, examples: List[List], names: List[str]):
        """Every example within the model's positions (fairseq-validate stops at a longer one)."""
        limit = self.max_positions
        if not isinstance(limit, int):
            return
        dataset = self.task.inference_dataset(examples)
        for index, name in enumerate(names):
            size = int(dataset.size(index))
            if size > limit:
                raise ClassificationInputError(f"{name}: {size} tokens exceed the model's "
                                               f"{limit}")

    @torch.no_grad()
    def classify(self, examples: List[List]) -> List[Prediction]:
        """The predictions of a batch of encoded examples, as fairseq's criteria read the
        model: the root's logits (every unit's with node targets), the argmax."""
        dataset = self.task.inference_dataset(examples)
        sample = dataset.collater([dataset[i] for i in range(len(dataset))])
        sample = utils.apply_to_sample(lambda tensor: tensor.to(self.device), sample)
        every_unit = {"every_unit": True} if self.task.cfg.node_targets else {}
        logits, extra = self.model(**sample["net_input"], features_only=True,
                                   classification_head_name=self.task.cfg.classification_head_name,
                                   **every_unit)
        if every_unit:  # B x (N+M) x classes: each tree's root
            logits = logits[torch.arange(logits.size(0), device=logits.device),
                            extra["root_columns"]]
        probs = F.softmax(logits.float(), dim=-1)
        best = logits.argmax(-1)
        if self.group_of is not None:  # node_classification's root_accuracy
            group_of = self.group_of.to(probs.device)
            grouped = probs.new_zeros(probs.size(0), len(self.symbols))
            probs = grouped.index_add_(1, group_of[group_of >= 0], probs[:, group_of >= 0])
            best = probs.argmax(-1)
        return [self.prediction(row, int(k)) for row, k in zip(probs.cpu(), best.tolist())]

    def prediction(self, probs: torch.Tensor, best: int) -> Prediction:
        names = self.class_names
        return Prediction(self.symbols[best], dict(zip(self.symbols, probs.tolist())),
                          names[best] if names and best < len(names) else None)
