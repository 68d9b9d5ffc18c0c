"""100 updates a model with and without flush-to-zero of denormals; ms/update from fairseq's log"""
import json, shlex, subprocess, sys
cmds = json.load(open("/tmp/e2e/before.json"))["commands"]
launcher = "import sys, torch; torch.set_flush_denormal({}); from fairseq_tree.cli.train import cli_main; sys.argv[0] = 'fairseq-tree-train'; cli_main()"
for ftz in (False, True):
    for name in ("tree2seq", "transformer"):
        cmd = shlex.split(cmds[name])[1:] + ["--max-update", sys.argv[1]]
        out = subprocess.run([sys.executable, "-c", launcher.format(ftz), *cmd], capture_output=True, text=True).stdout
        recs = [json.loads(l.split(" | ", 3)[3]) for l in out.splitlines() if "| train_inner |" in l]
        a, b = recs[1], recs[-1]
        ms = 1000 * (float(b["wall"]) - float(a["wall"])) / (int(b["num_updates"]) - int(a["num_updates"]))
        print(f"flush_denormal={ftz} {name} {ms:.1f} ms/update (updates {a['num_updates']}-{b['num_updates']})", flush=True)
