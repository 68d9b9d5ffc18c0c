import json, resource, shlex, subprocess, sys, time
cmds = json.load(open("/tmp/e2e/before.json"))["commands"]
updates = sys.argv[1]; env_extra = dict(a.split("=",1) for a in sys.argv[2:])
import os
for name in ("tree2seq", "transformer"):
    cmd = shlex.split(cmds[name]) + ["--max-update", updates]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    out = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, **env_extra})
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    last = [l for l in out.stdout.splitlines() if "train_inner" in l][-1]
    print(name, f"wall {wall:.1f}s user {after.ru_utime-before.ru_utime:.1f}s sys {after.ru_stime-before.ru_stime:.1f}s "
          f"minflt {after.ru_minflt-before.ru_minflt} majflt {after.ru_majflt-before.ru_majflt} maxrss {after.ru_maxrss}", last[-120:], flush=True)
