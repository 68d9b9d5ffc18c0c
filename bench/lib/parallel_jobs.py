"""Run many benchmark commands side by side on one machine, before a deadline: a GPU lent for a
few minutes, where fairseq's small models leave the card mostly idle, so that one process per CPU
core shares it.

    python -m bench.lib.parallel_jobs JOBS --slots 15 --deadline 540 --logs LOGDIR --json OUT.json

JOBS holds one job a line, ``NAME<TAB>COMMAND`` (``#`` lines and blank lines skipped), in the
order they start; each COMMAND runs with bash, ``OMP_NUM_THREADS=1``, its output in
``LOGDIR/NAME.log``. No job starts after ``--deadline`` seconds less ``--min-seconds``, and a job
still running at the deadline is stopped (SIGTERM, then SIGKILL); the JSON (written after every
job, so a stopped batch loses nothing finished) says which finished, with their return codes and
seconds, and which were stopped or never started. SIGTERM to the driver is the deadline brought
forward: a driver started with ``setsid`` outlives the call that started it, and a later call
stops it when that call's time runs short.
"""

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path


def read_jobs(path: str) -> list[tuple[str, str]]:
    jobs = []
    for lineno, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        name, sep, command = line.partition("\t")
        if not sep or not name or not command.strip():
            sys.exit(f"{path}:{lineno}: expected NAME<TAB>COMMAND")
        jobs.append((name, command))
    return jobs


def stop(proc: subprocess.Popen):
    """SIGTERM the job's process group, SIGKILL after 10 s."""
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(10)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    except ProcessLookupError:
        pass


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("jobs")
    parser.add_argument("--slots", type=int, default=os.cpu_count())
    parser.add_argument("--deadline", type=float, required=True, metavar="SECONDS")
    parser.add_argument("--min-seconds", type=float, default=60,
                        help="no job starts with less time than this left (default 60)")
    parser.add_argument("--logs", required=True, metavar="DIR")
    parser.add_argument("--json", required=True, metavar="FILE")
    args = parser.parse_args(argv)
    waiting, running, done = read_jobs(args.jobs), {}, []
    logs = Path(args.logs)
    logs.mkdir(parents=True, exist_ok=True)
    start = time.monotonic()
    terminated = []
    signal.signal(signal.SIGTERM, lambda signum, frame: terminated.append(signum))
    # the jobs run the benchmarks as python -m bench.NAME, from whatever folder this started in
    root = str(Path(__file__).resolve().parents[2])
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONUNBUFFERED": "1",
           "PYTHONPATH": os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")]))}

    def report():
        Path(args.json).write_text(json.dumps({
            "slots": args.slots, "deadline": args.deadline,
            "elapsed": round(time.monotonic() - start, 1), "finished": done,
            "stopped_or_running": sorted(running), "not_started": [name for name, _ in waiting]},
            indent=1), encoding="utf-8")

    while waiting or running:
        now = time.monotonic() - start
        while (waiting and len(running) < args.slots and not terminated
               and now < args.deadline - args.min_seconds):
            name, command = waiting.pop(0)
            log = open(logs / f"{name}.log", "w", encoding="utf-8")
            proc = subprocess.Popen(["bash", "-c", command], stdout=log, stderr=subprocess.STDOUT,
                                    env=env, start_new_session=True)
            running[name] = (proc, time.monotonic(), log)
            print(f"[{now:6.0f}s] start {name}", flush=True)
        for name, (proc, began, log) in list(running.items()):
            if proc.poll() is not None:
                log.close()
                del running[name]
                seconds = round(time.monotonic() - began, 1)
                done.append({"name": name, "returncode": proc.returncode, "seconds": seconds})
                print(f"[{time.monotonic() - start:6.0f}s] done {name} rc={proc.returncode} "
                      f"{seconds}s", flush=True)
                report()
        if terminated or time.monotonic() - start >= args.deadline:
            for name, (proc, began, log) in running.items():
                print(f"stopping {name} at the {'SIGTERM' if terminated else 'deadline'}",
                      flush=True)
                stop(proc)
                log.close()
            report()
            return
        if not running and waiting and now >= args.deadline - args.min_seconds:
            break
        time.sleep(1)
    report()


if __name__ == "__main__":
    main()
