"""Constituency trees from stanza's neural pipeline (tokenize, pos, constituency), offline.

The pipeline reads pre-tokenized sentences (``tokenize_pretokenized``), so it keeps the tokens
given; the tokens are put back as leaves anyway, because stanza writes ``(`` as ``-LRB-``. It
never downloads anything (``download_method=None``): missing models end the run with the exact
``stanza.download(...)`` command to fetch them.
"""

import logging

from fairseq_tree.parsing.base import Failure, Parser, ParserUnavailable, one_by_one, with_tokens
from fairseq_tree.trees.bracketed import Tree

PROCESSORS = "tokenize,pos,constituency"


def default_model_dir() -> str:
    """Where stanza keeps models unless told otherwise ($STANZA_RESOURCES_DIR or
    ~/stanza_resources)."""
    from stanza.resources.common import DEFAULT_MODEL_DIR

    return DEFAULT_MODEL_DIR


def missing_models_message(lang: str, model_dir: str, err: Exception) -> str:
    """One line: what is missing where, and the command that fetches it (needs the internet)."""
    command = (f"python -c \"import stanza; stanza.download('{lang}', model_dir='{model_dir}', "
               f"processors='{PROCESSORS}')\"")
    reason = " ".join(str(err).split())
    return (f"stanza models for '{lang}' ({PROCESSORS}) are not in {model_dir}; fetch them once "
            f"with: {command} (stanza: {reason})")


def check_language(lang: str):
    """stanza parses constituents in a few languages only (French, for one, is not among them):
    say so before looking for models that do not exist."""
    from stanza.resources.default_packages import default_constituency, optional_constituency

    known = sorted({*default_constituency, *optional_constituency})
    if lang not in known:
        raise ParserUnavailable(
            f"stanza has no constituency parser for '{lang}' (it has {', '.join(known)}); use "
            "--parser corenlp (CoreNLP's models, the paper's parser) or --parser flat")


def to_tree(stanza_tree) -> Tree:
    """A stanza constituency tree as a ``fairseq_tree.trees.Tree`` (iterative)."""
    root = Tree(stanza_tree.label)
    stack = [(stanza_tree, root)]
    while stack:
        source, target = stack.pop()
        for child in source.children:
            if child.is_leaf():
                target.children.append(child.label)
            else:
                node = Tree(child.label)
                target.children.append(node)
                stack.append((child, node))
    return root


class StanzaParser(Parser):
    """stanza's constituency parser over pre-tokenized sentences, on the GPU when there is one."""

    name = "stanza"

    def __init__(self, lang: str = "en", stanza_dir: str | None = None, batch_size: int = 64):
        import stanza
        import torch
        from stanza.pipeline.core import UnsupportedProcessorError

        check_language(lang)
        model_dir = stanza_dir or default_model_dir()
        try:
            self.pipeline = stanza.Pipeline(
                lang, dir=model_dir, processors=PROCESSORS, tokenize_pretokenized=True,
                download_method=None, use_gpu=torch.cuda.is_available(),
                pos_batch_size=batch_size, constituency_batch_size=batch_size,
                logging_level="WARN",
            )
        except UnsupportedProcessorError as err:
            raise ParserUnavailable(
                f"stanza has no constituency parser for '{lang}': {err}") from None
        except (FileNotFoundError, OSError, ValueError) as err:
            # stanza raises FileNotFoundError subclasses for a missing resources.json or model,
            # OSError from a transformer it may not fetch, ValueError for an unknown language.
            raise ParserUnavailable(missing_models_message(lang, model_dir, err)) from None
        logging.getLogger("stanza").setLevel(logging.WARNING)

    def parse_one(self, tokens: list[str]) -> str | Failure:
        """One sentence on its own (after its batch failed)."""
        return self._parse_tokens_at_once([tokens])[0]

    def _parse_tokens_at_once(self, batch):
        document = self.pipeline(batch)
        if len(document.sentences) != len(batch):
            return [Failure("stanza split the sentences differently")] * len(batch)
        return [with_tokens(to_tree(sentence.constituency), tokens)
                for sentence, tokens in zip(document.sentences, batch)]

    def _parse_tokens(self, batch):
        try:
            return self._parse_tokens_at_once(batch)
        except (RuntimeError, ValueError, IndexError):  # e.g. a sentence too long for a model
            return one_by_one(batch, self.parse_one, (RuntimeError, ValueError, IndexError),
                              "stanza error")
