"""Constituency trees from Stanford CoreNLP (the paper's parser, version 3.9.1) through stanza's
``CoreNLPClient``.

CoreNLP reads each batch as one text, one sentence per line, split on whitespace only
(``tokenize.whitespace``, ``ssplit.eolonly``), so its sentences and tokens are ours. It either
talks to a running server (``--corenlp-url``) or starts one from ``$CORENLP_HOME``. A batch that
fails or times out is retried sentence by sentence; a sentence that still fails becomes a flat
tree.
"""

import glob
import os
import socket
import urllib.parse

from fairseq_tree.parsing.base import Failure, Parser, ParserUnavailable, with_tokens
from fairseq_tree.trees.bracketed import TreeSyntaxError, parse_bracketed

ANNOTATORS = "tokenize,ssplit,pos,parse"
PROPERTIES = {"tokenize.whitespace": "true", "ssplit.eolonly": "true"}
INSTALL_HINT = ("install it with python -c \"import stanza; stanza.install_corenlp()\" (the paper "
                "used CoreNLP 3.9.1: stanza.install_corenlp(version='3.9.1')) and set "
                "$CORENLP_HOME to its folder, or give --corenlp-url of a running server")


def free_port() -> int:
    """A TCP port nobody listens on now, for a server of our own."""
    with socket.socket() as sock:
        sock.bind(("localhost", 0))
        return sock.getsockname()[1]


def check_reachable(url: str, seconds: float = 5):
    """Fail clearly, before any sentence, when nothing answers at ``url``."""
    parts = urllib.parse.urlsplit(url)
    if not parts.hostname:
        raise ParserUnavailable(f"--corenlp-url {url!r} is not a URL such as http://localhost:9000")
    try:
        socket.create_connection((parts.hostname, parts.port or 80), timeout=seconds).close()
    except OSError as err:
        raise ParserUnavailable(f"no CoreNLP server answers at {url} ({err}); start one, or leave "
                                "out --corenlp-url to start one from $CORENLP_HOME") from None


def tree_of(sentence: dict, tokens: list[str]) -> str | Failure:
    """The tree of one sentence of CoreNLP's JSON output, with our tokens as leaves."""
    try:
        return with_tokens(parse_bracketed(sentence["parse"]), tokens)
    except (KeyError, TreeSyntaxError):
        return Failure("CoreNLP gave no tree")


class CoreNLPParser(Parser):
    """A CoreNLP server's PCFG/shift-reduce parse of each sentence (whatever ``parse`` runs)."""

    name = "corenlp"

    def __init__(self, lang: str = "en", corenlp_url: str | None = None, timeout: float = 60,
                 memory: str = "4G"):
        from stanza.server import CoreNLPClient, StartServer
        from stanza.server.client import PermanentlyFailedException, resolve_classpath

        options = dict(annotators=ANNOTATORS, output_format="json", timeout=int(timeout * 1000),
                       be_quiet=True, properties={**PROPERTIES, "pipelineLanguage": lang})
        if corenlp_url:
            check_reachable(corenlp_url)
            self.client = CoreNLPClient(start_server=StartServer.DONT_START,
                                        endpoint=corenlp_url, **options)
            return
        try:
            classpath = resolve_classpath()
        except FileNotFoundError:
            home = os.getenv("CORENLP_HOME") or "~/stanza_corenlp"
            raise ParserUnavailable(f"CoreNLP is not installed: no folder {home} "
                                    f"($CORENLP_HOME); {INSTALL_HINT}") from None
        home = os.path.dirname(classpath)  # classpath is "$CORENLP_HOME/*"
        if classpath.endswith("*") and not glob.glob(os.path.join(home, "stanford-corenlp-*.jar")):
            raise ParserUnavailable(f"no stanford-corenlp-*.jar in {home} "
                                    f"($CORENLP_HOME); {INSTALL_HINT}")
        self.client = CoreNLPClient(start_server=StartServer.FORCE_START, classpath=classpath,
                                    endpoint=f"http://localhost:{free_port()}", memory=memory,
                                    **options)
        try:
            self.client.start()
            self.client.ensure_alive()
        except (OSError, PermanentlyFailedException) as err:  # no java, no server came up
            self.client.stop()
            raise ParserUnavailable(f"could not start CoreNLP from {classpath}: {err}") from None

    def _annotate(self, batch):
        text = "\n".join(" ".join(tokens) for tokens in batch)
        sentences = self.client.annotate(text)["sentences"]
        if len(sentences) != len(batch):
            return [Failure("CoreNLP split the sentences differently")] * len(batch)
        return [tree_of(sentence, tokens) for sentence, tokens in zip(sentences, batch)]

    def _parse_tokens(self, batch):
        from stanza.server.client import AnnotationException, TimeoutException

        try:
            return self._annotate(batch)
        except AnnotationException:  # TimeoutException included: retry one by one
            pass
        results = []
        for tokens in batch:
            try:
                results.append(self._annotate([tokens])[0])
            except TimeoutException:
                results.append(Failure("time limit"))
            except AnnotationException:
                results.append(Failure("CoreNLP error"))
        return results

    def close(self):
        self.client.stop()
