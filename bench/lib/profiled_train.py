"""fairseq-tree-train under torch.profiler: every operator of updates ``--from-update`` to
``--to-update`` of a real run (the loader's work between the train steps included), as one JSON
of self CPU milliseconds per operator, and per Python source file with ``--with-stack``.

    python -m bench.lib.profiled_train --from-update 40 --to-update 90 --json OPS.json -- \\
        DATA-BIN --user-dir fairseq_tree --task tree_translation ...   # fairseq-train's arguments

bench/train_end_to_end.py ``--torch-profile DIR`` runs it for both models and sets the operators
of one beside the other's. The profiler is started and stopped around fairseq's own
``Trainer.train_step`` (the run is fairseq-tree-train's, ``train_from_command_line``, unchanged),
so the window is counted in updates as fairseq counts them.
"""

import argparse
import collections
import json
import sys
from pathlib import Path

from fairseq.trainer import Trainer
from torch.profiler import ProfilerActivity, profile

from fairseq_tree.training import train_from_command_line

BACKWARD = "autograd::engine::evaluate_function: "


def source_file(name: str):
    """``fairseq_tree/...`` or ``fairseq/...`` of a Python event's name (``path(line): func``),
    or None for torch's, the standard library's and built-in functions."""
    path = name.split("(")[0]
    for root in ("fairseq_tree/", "fairseq/"):
        if root in path:
            return path[path.index(root):]
    return None


def backward_node(event):
    """The autograd engine's ``evaluate_function`` event an operator runs under, or None for a
    forward operator."""
    while event is not None:
        if event.name.startswith(BACKWARD):
            return event
        event = event.cpu_parent
    return None


def forward_caller(event):
    """The innermost Python frame above a forward operator that is in fairseq_tree or fairseq:
    the model code that asked for it (None when there is none)."""
    parent = event.cpu_parent
    while parent is not None:
        caller = source_file(parent.name) if parent.is_python_function else None
        if caller:
            return caller
        parent = parent.cpu_parent
    return None


def calling_files(events) -> dict:
    """Each operator's calling file: a forward operator's is ``forward_caller``; a backward
    operator's is "backward: " and the file of the forward operator it differentiates (the
    autograd node's sequence number is that operator's), "backward: gradient accumulation" for
    the engine's accumulation of leaf gradients, which differentiates nothing."""
    nodes = {id(event): backward_node(event) for event in events}
    forward = {}
    for event in events:
        if nodes[id(event)] is None and event.sequence_nr >= 0:
            forward.setdefault(event.sequence_nr, forward_caller(event))
    files = {}
    for event in events:
        node = nodes[id(event)]
        if node is None:
            files[id(event)] = forward_caller(event) or "other"
        elif node.sequence_nr < 0:
            files[id(event)] = "backward: gradient accumulation"
        else:
            files[id(event)] = "backward: " + (forward.get(node.sequence_nr) or "other")
    return files


def operator_table(profiler, updates: int, with_stack: bool) -> dict:
    """Self CPU milliseconds per update of every operator (the profiler's Python function events
    left out: their self time includes waits, the loader thread's among them); with
    ``with_stack``, also per calling file (``calling_files``)."""
    operators = collections.defaultdict(lambda: {"calls": 0.0, "self_ms": 0.0})
    files = collections.Counter()
    events = [event for event in profiler.events() if not event.is_python_function]
    callers = calling_files(events) if with_stack else {}
    for event in events:
        ms = event.self_cpu_time_total / 1000 / updates
        operators[event.key]["calls"] += 1 / updates
        operators[event.key]["self_ms"] += ms
        if with_stack:
            files[callers[id(event)]] += ms
    report = {"updates": updates, "operators": dict(operators),
              "self_ms_per_update": sum(o["self_ms"] for o in operators.values())}
    if with_stack:
        report["files"] = dict(files.most_common())
    return report


def profile_updates(first: int, last: int, with_stack: bool, output: Path):
    """Patch fairseq's ``Trainer.train_step`` to profile updates ``first`` to ``last``."""
    train_step = Trainer.train_step
    state = {"update": 0, "profiler": None}

    def profiled_train_step(self, samples, raise_oom=False):
        state["update"] += 1
        if state["update"] == first:
            state["profiler"] = profile(activities=[ProfilerActivity.CPU], with_stack=with_stack)
            state["profiler"].__enter__()
        result = train_step(self, samples, raise_oom)
        if state["update"] == last:
            state["profiler"].__exit__(None, None, None)
            table = operator_table(state["profiler"], last - first + 1, with_stack)
            output.write_text(json.dumps(table, indent=1) + "\n")
        return result

    Trainer.train_step = profiled_train_step


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--from-update", type=int, required=True)
    parser.add_argument("--to-update", type=int, required=True)
    parser.add_argument("--with-stack", action="store_true",
                        help="also attribute each operator to the Python file that called it")
    parser.add_argument("--json", type=Path, required=True)
    args, train_args = parser.parse_known_args()
    if train_args[:1] == ["--"]:
        train_args = train_args[1:]
    if not 1 <= args.from_update <= args.to_update:
        parser.error("need 1 <= --from-update <= --to-update")
    profile_updates(args.from_update, args.to_update, args.with_stack, args.json)
    sys.argv = ["fairseq-tree-train", *train_args]
    train_from_command_line()
    if not args.json.exists():
        raise SystemExit(f"profiled_train.py: error: the run ended before update "
                         f"{args.to_update}: nothing written to {args.json}")


if __name__ == "__main__":
    main()
