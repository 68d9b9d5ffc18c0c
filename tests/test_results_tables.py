"""bench/RESULTS.md's tables are what the benchmarks' own functions write from the committed JSON
(bench/lib/tables.py): regenerated here, a cell edited by hand or a table typed outside a block fails."""

import re

import pytest

from bench.lib import tables
from conftest import ROOT


def test_every_table_of_results_is_written_from_its_json():
    problems = tables.check(tables.RESULTS)
    assert not problems, "\n".join(problems) + "\n(python -m bench.lib.tables --write rewrites them)"


def test_results_has_its_tables_in_blocks():
    lines = tables.RESULTS.read_text(encoding="utf-8").split("\n")
    blocks = tables.read_blocks(tables.RESULTS, lines)
    assert len(blocks) >= 20
    for block in blocks:
        assert (ROOT / block.json).is_file(), block.json
        assert any(line.startswith(("|", "```")) for line in block.lines), block  # a table


def edited_copy(tmp_path, edit):
    text = tables.RESULTS.read_text(encoding="utf-8")
    copy = tmp_path / "RESULTS.md"
    copy.write_text(edit(text), encoding="utf-8")
    return copy


def test_a_cell_edited_by_hand_fails(tmp_path):
    def change_a_number(text):
        block = text.index("<!-- table: ")
        body = text.index("\n|", text.index("|---", block))  # the first row after the rule
        number = re.compile(r"\d").search(text, body)
        digit = text[number.start()]
        return text[:number.start()] + str((int(digit) + 1) % 10) + text[number.start() + 1:]

    problems = tables.check(edited_copy(tmp_path, change_a_number))
    assert len(problems) == 1 and "differs from what" in problems[0]
    fixed = tmp_path / "RESULTS.md"
    assert tables.main([str(fixed), "--write"]) == 0
    assert tables.check(fixed) == []


def test_a_table_typed_outside_a_block_fails_unless_marked(tmp_path):
    typed = "\n\n| model | accuracy |\n|---|---|\n| mine | 99.99 |\n"
    problems = tables.check(edited_copy(tmp_path, lambda text: text + typed))
    assert len(problems) == 1 and "a table outside" in problems[0]
    marked = "\n\n<!-- not in a JSON: typed from a log -->" + typed
    assert tables.check(edited_copy(tmp_path, lambda text: text + marked)) == []


def test_a_broken_block_is_an_error_naming_the_line(tmp_path):
    copy = edited_copy(tmp_path, lambda text: text + "\n<!-- table: bench.lib.report.nothing x.json -->\n")
    with pytest.raises(tables.TableError, match=r"RESULTS.md:\d+: the table is never closed"):
        tables.check(copy)


def anchor(heading):
    """GitHub's anchor of a Markdown heading: lowercase, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def test_the_list_of_questions_links_every_section_and_readme_links_resolve():
    text = tables.RESULTS.read_text(encoding="utf-8")
    contents, _, sections = text.partition("\n# ")
    questions = re.findall(r"^## (.+)$", "# " + sections, flags=re.M)
    listed = re.findall(r"^  - \[(.+)\]\(#([\w-]+)\)$", contents, flags=re.M)
    assert [(q, anchor(q)) for q in questions] == listed
    anchors = {anchor(h) for h in re.findall(r"^#+ (.+)$", text, flags=re.M)}
    for doc in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        for target in re.findall(r"RESULTS\.md#([\w-]+)", doc.read_text(encoding="utf-8")):
            assert target in anchors, f"{doc.name}: RESULTS.md#{target} names no heading"


def sections(text: str) -> dict:
    """RESULTS.md's ``## `` sections by title: their lines, up to the next ``#`` or ``##``."""
    found, title = {}, None
    for line in text.splitlines():
        if line.startswith(("# ", "## ")):
            title = line if line.startswith("## ") else None
            if title:
                found[title] = []
        elif title:
            found[title].append(line)
    return found


def test_results_reads_as_a_reference():
    """Each question's section reads in a few minutes: at most ~300 lines, a verdict of at most
    ~600 characters; and README's system rows stay a line or two (at most 600 characters)."""
    found = sections(tables.RESULTS.read_text(encoding="utf-8"))
    found.pop("## The questions")  # the list of them
    assert len(found) > 20
    for title, lines in found.items():
        assert len(lines) <= 310, (title, len(lines))
        text = "\n".join(lines)
        verdict = re.search(r"\*\*Verdict\.\*\* (.*?)(?:\n\n|$)", text, re.S)
        assert verdict, title
        assert len(" ".join(verdict.group(1).split())) <= 610, title
    rows = [line for line in (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
            if line.count(" | ") >= 3 and not line.startswith("System |")]
    assert len(rows) >= 8
    assert all(len(row) <= 600 for row in rows), [row[:40] for row in rows if len(row) > 600]
