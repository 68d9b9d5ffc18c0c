"""The package's layers: each part of fairseq_tree imports only the parts below it, so data flows
one way, and no module imports itself through others (no import circle).

    errors | library_noise -> line_files | checkpoints | checkpoint_averaging -> trees -> data
        -> modules -> models -> tasks | criterions | parsing -> process_group | training
        -> inference | analysis -> hub | classification_hub
        -> the package's registration (__init__) -> cli

Every import counts, at the top of a file or inside a function. A model's ``from_pretrained``
reaches the hub above it through what the package's registration sets (``hub_loader``), not by
importing it. ``cli`` holds the console scripts only: nothing outside it imports it, in the
package or in bench/, data-prep/, configs/ and scripts/ (tests may import the command lines
they test).
"""

import ast
from pathlib import Path

from conftest import ROOT

PACKAGE = ROOT / "fairseq_tree"
LAYERS = [
    {"errors", "library_noise"},
    # checkpoint_averaging: fairseq's checkpoint files and torch, nothing of the package's
    {"line_files", "checkpoints", "checkpoint_averaging"},
    {"trees"},
    {"data"},
    {"modules"},
    {"models"},
    {"tasks", "criterions", "parsing"},
    # training: fairseq-train's run with its patience count; it reads checkpoints only
    {"process_group", "training"},
    # analysis: reads a trained model's attention through the modules, as inference runs one
    {"inference", "analysis"},
    {"hub", "classification_hub"},
    {"__init__"},
    {"cli"},
]
LAYER_OF = {part: level for level, parts in enumerate(LAYERS) for part in parts}


def part_of(module: str) -> str:
    """The top-level part of the package a dotted module name is in (``__init__`` for the
    package itself)."""
    names = module.split(".")
    return names[1] if len(names) > 1 else "__init__"


def imported_modules(path: Path, root: Path, top: str = "fairseq_tree",
                     parts=LAYER_OF) -> list[tuple[str, bool]]:
    """(module, deferred) for every module of the package ``top`` the file imports, ``from top
    import PART`` naming that part where it is one of ``parts``; deferred: inside a function."""
    package = ".".join(path.relative_to(root).parts[:-1])
    found = []

    def visit(node, deferred):
        if isinstance(node, ast.Import):
            found.extend((alias.name, deferred) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[:len(package.split(".")) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            if module == top:  # from fairseq_tree import models: that part
                found.extend((f"{module}.{alias.name}" if alias.name in parts else module,
                              deferred) for alias in node.names)
            else:
                found.append((module, deferred))
        inner = deferred or isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
        for child in ast.iter_child_nodes(node):
            visit(child, inner)

    visit(ast.parse(path.read_text(encoding="utf-8")), False)
    return [(module, deferred) for module, deferred in found
            if module == top or module.startswith(f"{top}.")]


def file_part(path: Path, package: Path) -> str:
    parts = path.relative_to(package).parts
    return parts[0] if len(parts) > 1 else path.stem


def upward_imports(package: Path = PACKAGE) -> set[tuple[str, str, bool]]:
    """(file, part it imports, deferred) for every import of a part at the file's own layer or
    above (within its own part is fine)."""
    upward = set()
    for path in sorted(package.rglob("*.py")):
        own = file_part(path, package)
        for module, deferred in imported_modules(path, package.parent):
            target = part_of(module)
            if target != own and LAYER_OF[target] >= LAYER_OF[own]:
                upward.add((str(path.relative_to(package.parent)), target, deferred))
    return upward


def test_every_part_has_a_layer():
    parts = {file_part(path, PACKAGE) for path in PACKAGE.rglob("*.py")}
    assert parts == set(LAYER_OF), parts ^ set(LAYER_OF)


def test_imports_go_down_the_layers_only():
    assert upward_imports() == set()


def test_the_check_sees_upward_imports(tmp_path):
    """The check itself, on a small package: an import of a higher part is found, at the top
    of a file or inside a function, relative or absolute; one of a lower part is not."""
    package = tmp_path / "fairseq_tree"
    (package / "parsing").mkdir(parents=True)
    (package / "parsing" / "induced.py").write_text(
        "from ..models import Model\nfrom fairseq_tree.trees import Tree\n", encoding="utf-8")
    (package / "models").mkdir()
    (package / "models" / "probe.py").write_text(
        "from .. import tasks\n\ndef f():\n    from fairseq_tree.hub import from_pretrained\n",
        encoding="utf-8")
    assert upward_imports(package) == {("fairseq_tree/models/probe.py", "tasks", False),
                                       ("fairseq_tree/models/probe.py", "hub", True)}


CLI_FREE = ["fairseq_tree", "bench", "data-prep", "configs", "scripts"]


def cli_imports(root: Path = ROOT) -> set[tuple[str, bool]]:
    """(file, deferred) for every import of ``fairseq_tree.cli`` in a Python file of
    ``CLI_FREE`` outside ``fairseq_tree/cli/``."""
    cli = root / "fairseq_tree" / "cli"
    found = set()
    for path in sorted(p for folder in CLI_FREE for p in (root / folder).rglob("*.py")):
        if cli in path.parents:
            continue
        for module, deferred in imported_modules(path, root):
            if module == "fairseq_tree.cli" or module.startswith("fairseq_tree.cli."):
                found.add((str(path.relative_to(root)), deferred))
    return found


def test_only_cli_imports_cli():
    assert cli_imports() == set()


def test_the_check_sees_cli_imports(tmp_path):
    """The cli check on a small checkout: an import of ``fairseq_tree.cli`` is found in the
    package, bench/, data-prep/, configs/ and scripts/, at the top of a file or inside a
    function, absolute or relative, of a module or of the package; one in cli/ or tests/ is
    not, nor one of another part."""
    files = {
        "fairseq_tree/cli/translate.py": "from fairseq_tree.cli.console import run_console\n",
        "fairseq_tree/models/probe.py": "def f():\n    from ..cli import console\n",
        "bench/question.py": "from fairseq_tree.cli.analyze import load\n",
        "data-prep/recipe.py": "def f():\n    from fairseq_tree import cli\n",
        "configs/runner/run.py": "import fairseq_tree.cli.average as average\n",
        "scripts/tool.py": "from fairseq_tree.errors import CliError\n",
        "tests/test_tool.py": "from fairseq_tree.cli.parse import cli_main\n",
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text, encoding="utf-8")
    assert cli_imports(tmp_path) == {("fairseq_tree/models/probe.py", True),
                                     ("bench/question.py", False),
                                     ("data-prep/recipe.py", True),
                                     ("configs/runner/run.py", False)}


def module_name(path: Path, root: Path) -> str:
    parts = path.relative_to(root).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_circles(package: Path = PACKAGE) -> list[list[str]]:
    """The import circles among the package's modules, deferred imports included: each a
    sorted list of the modules that reach one another (Tarjan's strongly connected
    components). ``from a.b import c`` reaches the module ``a.b.c`` where there is one, else
    ``a.b``; a package reaches its ``__init__``."""
    root = package.parent
    modules = {module_name(path, root): path for path in package.rglob("*.py")}
    graph = {}
    for name, path in modules.items():
        targets = set()
        for module, _ in imported_modules(path, root):
            while module and module not in modules:
                module = module.rpartition(".")[0]
            if module and module != name:
                targets.add(module)
        graph[name] = targets
    index, low, stack, on_stack, circles = {}, {}, [], set(), []

    def visit(node):
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph[node]):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                circles.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return circles


def test_no_import_circle():
    assert import_circles() == []


def test_the_classification_hub_reads_its_inputs_without_the_translation_task():
    imported = {module for module, _ in imported_modules(PACKAGE / "classification_hub.py",
                                                          ROOT)}
    assert "fairseq_tree.trees.inputs" in imported
    assert not any(module.startswith("fairseq_tree.tasks.tree_translation") for module in imported)


def test_the_check_sees_import_circles(tmp_path):
    """The circle check on a small package: a model that imports the hub inside a function,
    while the hub imports the models package at its top, is a circle of three modules."""
    package = tmp_path / "fairseq_tree"
    (package / "models").mkdir(parents=True)
    (package / "__init__.py").write_text("", encoding="utf-8")
    (package / "models" / "__init__.py").write_text(
        "from fairseq_tree.models.tree2seq import Model\n", encoding="utf-8")
    (package / "models" / "tree2seq.py").write_text(
        "def load():\n    from fairseq_tree.hub import load\n", encoding="utf-8")
    (package / "hub.py").write_text("from fairseq_tree.models import Model\n",
                                    encoding="utf-8")
    assert import_circles(package) == [
        ["fairseq_tree.hub", "fairseq_tree.models", "fairseq_tree.models.tree2seq"]]
    (package / "models" / "tree2seq.py").write_text("class Model:\n    pass\n",
                                                    encoding="utf-8")
    assert import_circles(package) == []


# bench/: each module directly in it answers one question (``python -m bench.NAME``); what
# questions share lives in the libraries bench/lib and bench/tasks, which answer none. A family
# of questions may be a package of its own (bench/NAME/), whose members share through it.
BENCH = ROOT / "bench"
BENCH_LIBRARIES = {"lib", "tasks"}


def question_imports(bench: Path = BENCH) -> set[tuple[str, str, bool]]:
    """(file, question or family it imports, deferred) for every import by a file of bench/ of
    a question or a family other than its own: by a question, a family's member, or a library
    (at the top of a file or inside a function, relative or absolute)."""
    root = bench.parent
    parts = {file_part(path, bench) for path in bench.rglob("*.py")}
    found = set()
    for path in sorted(bench.rglob("*.py")):
        own = file_part(path, bench)
        for module, deferred in imported_modules(path, root, "bench", parts):
            target = part_of(module)
            if target not in BENCH_LIBRARIES | {"__init__", own}:
                found.add((str(path.relative_to(root)), target, deferred))
    return found


def test_no_bench_question_imports_another():
    assert question_imports() == set()


def test_the_check_sees_a_question_imported(tmp_path):
    """The check itself, on a small bench/: a question imported by another question (at the top
    or inside a function), by a library (relative) or a family imported from outside it is
    found; the libraries imported by anyone and a family's members importing one another are
    not."""
    bench = tmp_path / "bench"
    for folder in ("lib", "tasks", "hierarchical"):
        (bench / folder).mkdir(parents=True)
    files = {"agreement.py": "from bench.lib.report import holm\nfrom bench.tasks import grammar\n",
             "contrastive.py": "from bench.agreement import seed_summary\n",
             "sentiment.py": "def names():\n    from bench import agreement, lib\n",
             "tree_sources.py": "from bench.hierarchical import scoring\n",
             "lib/seeds.py": "from ..sentiment import NAMES\nfrom . import report\n",
             "lib/report.py": "import statistics\n",
             "tasks/grammar.py": "from bench.lib import report\n",
             "hierarchical/__init__.py": "from .scoring import score\n",
             "hierarchical/scoring.py": "from bench.lib.report import machine\n",
             "hierarchical/curves.py": "from bench.hierarchical.scoring import score\n"}
    for name, text in files.items():
        (bench / name).write_text(text, encoding="utf-8")
    assert question_imports(bench) == {("bench/contrastive.py", "agreement", False),
                                       ("bench/sentiment.py", "agreement", True),
                                       ("bench/tree_sources.py", "hierarchical", False),
                                       ("bench/lib/seeds.py", "sentiment", False)}
    (bench / "contrastive.py").write_text("from bench.lib.report import seed_summary\n",
                                          encoding="utf-8")
    assert ("bench/contrastive.py", "agreement", False) not in question_imports(bench)

