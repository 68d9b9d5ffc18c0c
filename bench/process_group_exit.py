"""Do two-process runs end cleanly?

    python -m bench.process_group_exit --pairs 100 --json bench/results/process-group-exit/pairs.json
    python -m bench.process_group_exit --pytest-runs 30 --logs DIR --json OUT.json

``--pairs N``: N launches of two gloo processes that do what fairseq's data-parallel training
does last (``all_reduce`` of tensors made in Python, then fairseq's closing barrier) and exit,
as torch alone, with ``fairseq_tree`` imported but its teardown unregistered, and with
``fairseq_tree`` imported as ``--user-dir`` imports it (its process group destroyed at exit);
the count of processes that aborted (-6, ``terminate called without an active exception``) each
way.

``--pytest-runs N``: the suite's CPU two-process tests (by hand, under torchrun with
fairseq-tree-train, and the weights-only resume), N pytest runs in a row, each with its own
freshly built example data as in the suite; each run's outcome, and its log in ``--logs``.
"""

import argparse
import os
import re
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

from bench.lib.report import end_report, machine, markdown_table

ROOT = Path(__file__).resolve().parents[1]
TWO_PROCESS_TESTS = "tests/test_tree2seq_training.py"


MODES = {"torch alone": 0, "fairseq_tree imported, teardown unregistered": 1,
         "fairseq_tree imported": 2}


def worker(rank: int, port: int, mode: int) -> None:
    """One rank: fairseq's last collectives (all_reduces, then the barrier)."""
    import atexit

    import torch
    import torch.distributed as dist

    if mode:
        import fairseq_tree  # noqa: F401  (registers the teardown, as --user-dir does)
        from fairseq_tree.process_group import destroy_initialized_process_group
        if mode == 1:
            atexit.unregister(destroy_initialized_process_group)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                            world_size=2)
    for _ in range(50):
        dist.all_reduce(torch.full((1000,), float(rank)))
    dist.barrier()


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def launch_pair(mode: int) -> list[int]:
    """The two ranks' return codes."""
    port = free_port()
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONWARNINGS="ignore")
    ranks = [subprocess.Popen([sys.executable, __file__, "--worker", str(rank), str(port),
                               str(mode)], env=env, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL) for rank in (0, 1)]
    return [rank.wait(timeout=300) for rank in ranks]


def pairs(count: int) -> dict:
    """Aborted processes out of 2 * ``count``, in each of the ``MODES``."""
    results = {}
    for name, mode in MODES.items():
        codes = [code for _ in range(count) for code in launch_pair(mode)]
        results[name] = {"processes": len(codes), "aborted": codes.count(-6),
                         "other_failures": sum(code not in (0, -6) for code in codes)}
        print(f"{name}: {results[name]['aborted']} of {len(codes)} processes aborted "
              f"({results[name]['other_failures']} other failures)", flush=True)
    return results


def pytest_runs(count: int, logs: Path) -> list[dict]:
    """The CPU two-process tests, ``count`` pytest runs in a row."""
    logs.mkdir(parents=True, exist_ok=True)
    runs = []
    for run in range(1, count + 1):
        start = time.time()
        proc = subprocess.run(
            [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-rA", TWO_PROCESS_TESTS,
             "-k", "two_process and cpu or resumes_weights_only"],
            cwd=ROOT, capture_output=True, text=True)
        (logs / f"run-{run:02d}.log").write_text(proc.stdout + proc.stderr, encoding="utf-8")
        outcome = {"run": run, "returncode": proc.returncode,
                   "passed": len(re.findall(r"^PASSED ", proc.stdout, flags=re.M)),
                   "failed": len(re.findall(r"^(?:FAILED|ERROR) ", proc.stdout, flags=re.M)),
                   "aborts": (proc.stdout + proc.stderr).count("terminate called without"),
                   "seconds": round(time.time() - start, 1)}
        runs.append(outcome)
        print(f"run {run}: {outcome}", flush=True)
    return runs


PAIRS_LABELS = {"torch alone": "torch alone",
                "fairseq_tree imported, teardown unregistered":
                    "fairseq_tree imported, its teardown unregistered",
                "fairseq_tree imported": "fairseq_tree imported (the teardown at exit)"}


def pairs_table(report: dict) -> list[str]:
    """RESULTS' table of ``--pairs``: aborted processes of each kind."""
    return markdown_table(["processes", "aborted (-6)", "other failures"], [
        [PAIRS_LABELS.get(name, name), f"{row['aborted']} of {row['processes']}",
         row["other_failures"]] for name, row in report["pairs"].items()])


def pytest_table(report: dict) -> list[str]:
    """RESULTS' table of ``--pytest-runs``: runs clean, tests, seconds a run, load average."""
    summary, seconds = report["pytest_summary"], sorted(r["seconds"] for r in report["pytest_runs"])
    return markdown_table(
        ["runs", "clean", "tests passed", "tests failed", "aborts", "seconds a run (min, median, max)",
         "load average at the start"],
        [[summary["runs"], summary["clean"], summary["tests_passed"], summary["tests_failed"],
          sum(r["aborts"] for r in report["pytest_runs"]),
          f"{seconds[0]:.0f}, {statistics.median(seconds):.0f}, {seconds[-1]:.0f}",
          f"{report['load_average_before'][0]:.1f}"]])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--worker", nargs=3, type=int, help=argparse.SUPPRESS)
    parser.add_argument("--pairs", type=int, default=0, metavar="N")
    parser.add_argument("--pytest-runs", type=int, default=0, metavar="N")
    parser.add_argument("--logs", default="runs/process-group-exit", metavar="DIR")
    parser.add_argument("--json", metavar="FILE")
    args = parser.parse_args(argv)
    if args.worker:
        return worker(*args.worker)
    if not args.pairs and not args.pytest_runs:
        parser.error("nothing to do: give --pairs N and/or --pytest-runs N")
    report = {"machine": machine(), "load_average_before": list(os.getloadavg())}
    if args.pairs:
        report["pairs"] = pairs(args.pairs)
    if args.pytest_runs:
        report["pytest_runs"] = runs = pytest_runs(args.pytest_runs, Path(args.logs))
        report["pytest_summary"] = {
            "runs": len(runs), "clean": sum(r["returncode"] == 0 and not r["aborts"] for r in runs),
            "tests_passed": sum(r["passed"] for r in runs),
            "tests_failed": sum(r["failed"] for r in runs)}
        print(f"pytest: {report['pytest_summary']}", flush=True)
    report["load_average_after"] = list(os.getloadavg())
    end_report(report, None, args.json)


if __name__ == "__main__":
    main()
