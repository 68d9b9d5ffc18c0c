"""The package's layers: each part of fairseq_tree imports only the parts below it, so data flows
one way and there is no import circle.

    errors -> line_files -> trees -> data -> modules -> models -> tasks | criterions | parsing
        -> checkpoints -> inference -> hub | classification_hub | the package's registration
        (__init__) -> cli

Every import counts, at the top of a file or inside a function. The one exception is fairseq's
own convention: a model's ``from_pretrained`` is the hub's front door, importing it when called
(as fairseq's ``BaseFairseqModel.from_pretrained`` imports ``hub_utils``).
"""

import ast
from pathlib import Path

from conftest import ROOT

PACKAGE = ROOT / "fairseq_tree"
LAYERS = [
    {"errors"},
    {"line_files"},
    {"trees"},
    {"data"},
    {"modules"},
    {"models"},
    {"tasks", "criterions", "parsing"},
    {"checkpoints", "process_group"},
    {"inference"},
    {"hub", "classification_hub", "__init__"},
    {"cli"},
]
LAYER_OF = {part: level for level, parts in enumerate(LAYERS) for part in parts}
FRONT_DOORS = {("fairseq_tree/models/tree2seq.py", "hub"),
               ("fairseq_tree/models/constituent_transformer.py", "inference")}


def part_of(module: str) -> str:
    """The top-level part of the package a dotted module name is in (``__init__`` for the
    package itself)."""
    names = module.split(".")
    return names[1] if len(names) > 1 else "__init__"


def imported_modules(path: Path, root: Path) -> list[tuple[str, bool]]:
    """(module, deferred) for every fairseq_tree module the file imports; deferred: inside a
    function."""
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
            if module == "fairseq_tree":  # from fairseq_tree import models: that part
                found.extend((f"{module}.{alias.name}" if alias.name in LAYER_OF else module,
                              deferred) for alias in node.names)
            else:
                found.append((module, deferred))
        inner = deferred or isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
        for child in ast.iter_child_nodes(node):
            visit(child, inner)

    visit(ast.parse(path.read_text(encoding="utf-8")), False)
    return [(module, deferred) for module, deferred in found
            if module == "fairseq_tree" or module.startswith("fairseq_tree.")]


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
    upward = upward_imports()
    assert not {entry for entry in upward if not entry[2]}, "imports at the top of a file"
    assert {(file, target) for file, target, _ in upward} == FRONT_DOORS


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
