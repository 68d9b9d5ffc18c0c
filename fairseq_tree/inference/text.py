"""The one text pipeline from raw text to what a model reads: tokens -> tree (the recipe's parser)
-> subword tree, and for translation targets tokens -> subword text, as ``TextSteps`` say.

    steps = recipe_steps(Recipe.read("data/bible-en-fr-sample"))
    text = TextPipeline(steps, "en")
    result = text.parse(["In the beginning, God created the heavens."])[0]   # its tree
    tree = text.subword_tree(parse_tree(result.tree))    # lowercased and split as the recipe did

Both hubs (translation sources and targets, classification inputs) and the CLIs over them go
through it; BPE is one mechanism, ``data.bpe.build_segmenter`` (subword-nmt or sentencepiece,
each word on its own, as ``fairseq-tree-bpe`` made the training data).
"""

from typing import Callable, List, Optional

from fairseq.data.data_utils import post_process

from fairseq_tree.data.bpe import Segmenter, build_segmenter
from fairseq_tree.data.recipe import Recipe, TextSteps, recipe_path
from fairseq_tree.errors import FairseqTreeError
from fairseq_tree.parsing import ParseResult, build_parser
from fairseq_tree.parsing.options import recorded_options
from fairseq_tree.parsing.raw_text import build_text_tokenizer, document_sentences
from fairseq_tree.trees.bracketed import lowercase_leaf
from fairseq_tree.trees.normal_form import NormalTree
from fairseq_tree.trees.subwords import split_words


def recipe_steps(recipe: Recipe) -> TextSteps:
    """The text steps of a recipe, its parser's recorded arguments and spaCy pipeline among the
    parser's options."""
    steps = recipe.text_steps()
    try:
        steps.parser_options.update(recorded_options(recipe.parser_args))
    except ValueError as err:
        raise FairseqTreeError(f"{recipe_path(recipe.folder)}: {err}") from None
    return steps


class TextPipeline:
    """Raw text -> trees and subword units of one language, as ``steps`` say. The parser and
    the tokenizer are built when first needed (a pipeline given trees only never loads them);
    ``flat_fallbacks`` counts the sentences the parser could not parse (flat trees)."""

    def __init__(self, steps: TextSteps, lang: str, segment: Optional[Segmenter] = None):
        self.steps, self.lang = steps, lang
        self.flat_fallbacks = 0
        self._parser = steps.parser if steps.parser is not None \
            and not isinstance(steps.parser, str) else None
        self._tokenize: Optional[Callable[[str], List[str]]] = None
        if segment is None and (steps.bpe_codes or steps.sentencepiece_model):
            segment = build_segmenter(steps.bpe_codes, steps.sentencepiece_model)
        self.segment = segment  # words -> pieces: the steps' BPE (given: one already read)

    @property
    def parses(self) -> bool:
        """Whether raw text can be read: a parser is given."""
        return self.steps.parser is not None

    @property
    def parser(self):
        if self._parser is None and isinstance(self.steps.parser, str):
            self._parser = build_parser(self.steps.parser, self.lang, **self.steps.parser_options)
        return self._parser

    def prepare(self):
        """Build the parser and the tokenizer now (a missing parser or spaCy pipeline is said
        before any input is read), where raw text is to be read."""
        if self.parses:
            self.parser
            self.tokenize("")

    def tokenize(self, text: str) -> List[str]:
        """One sentence's tokens."""
        if self._tokenize is None:
            steps = self.steps
            self._tokenize = build_text_tokenizer(
                steps.tokenize, self.lang, steps.normalize_punctuation,
                steps.aggressive_dash_splits, steps.quote,
                steps.parser_options.get("spacy_model"))
        return self._tokenize(text)

    def sentences(self, text: str) -> List[List[str]]:
        """The tokens of each sentence of one text (one sentence unless it is a document)."""
        if not (self.steps.split_sentences or self.steps.max_words):
            return [self.tokenize(text)]
        sentences, _ = document_sentences([text], self.steps.split_sentences,
                                          self.steps.max_words, self.tokenize)
        return [sentence.split() for sentence in sentences] or [[]]

    def parse(self, texts: List[str]) -> List[ParseResult]:
        """One result per text: ``tree`` "" when it has no tokens; a document's sentences' trees
        on one line, which the tree reader puts under one root; ``conllu`` (a dependency
        parser's) only for a text of one sentence."""
        if not self.parses:
            raise FairseqTreeError("no parser for raw text")
        sentences = [self.sentences(text) for text in texts]
        results = iter(self.parser.parse([tokens for text in sentences for tokens in text]))
        parsed = []
        for text in sentences:
            trees = [next(results) for _ in text]
            self.flat_fallbacks += sum(result.fallback is not None for result in trees)
            if len(trees) == 1:
                parsed.append(trees[0])
                continue
            fallbacks = [result.fallback for result in trees if result.fallback]
            parsed.append(ParseResult(" ".join(result.tree for result in trees),
                                      fallbacks[0] if fallbacks else None))
        return parsed

    def leaf_pieces(self, word: str) -> List[str]:
        """One leaf as the model's units: lowercased where the recipe lowercased, split into
        subwords."""
        word = lowercase_leaf(word) if self.steps.lowercase else word
        return self.segment([word]) if self.segment else [word]

    def subword_tree(self, tree: NormalTree) -> NormalTree:
        """A word-level tree as the model reads it (``leaf_pieces`` of each leaf; a split word
        becomes a node over its pieces). ``ValueError`` for a leaf the segmenter cannot
        split."""
        if not (self.segment or self.steps.lowercase):
            return tree
        return split_words(tree, self.leaf_pieces)

    def subword_text(self, text: str) -> str:
        """A sentence of plain text (a translation target) as the model's units: tokenized,
        lowercased where the recipe lowercased, split into subwords, each word on its own."""
        words = self.tokenize(text)
        if self.steps.lowercase:
            words = [word.lower() for word in words]
        return " ".join(self.segment(words) if self.segment else words)

    def merge_subwords(self, text: str) -> str:
        """The model's output units joined back into words (fairseq's ``post_process``)."""
        if self.steps.bpe_codes:
            return post_process(text, "subword_nmt")
        if self.steps.sentencepiece_model:
            return post_process(text, "sentencepiece")
        return text
