"""Data-parallel processes end with their process group destroyed before Python finalizes
(issue 47): gloo's worker threads are joined while the interpreter can still free the tensors
they hold, instead of aborting the process at exit."""

import subprocess
import sys

import pytest

from conftest import ROOT

# A process that initializes gloo as fairseq's distributed_init does, reduces a tensor on
# fairseq's global group (a second group, which fairseq's get_global_group keeps for the life of
# the process) and ends with fairseq's closing barrier on it; a handler registered before the
# plugin's import runs after the plugin's own (atexit runs last-registered first) and reports
# what finalization will find: the group, and gloo's worker threads still running.
PROCESS = """
import atexit, os, socket, sys
import torch, torch.distributed as dist
def report():
    names = [open(f"/proc/self/task/{task}/comm").read().strip() for task in os.listdir("/proc/self/task")]
    print("initialized at exit:", dist.is_initialized(), flush=True)
    print("gloo workers at exit:", names.count("pt_gloo_runloop"), flush=True)
atexit.register(report)
if sys.argv[1] == "plugin":
    import fairseq_tree
from fairseq.distributed import utils
with socket.socket() as probe:
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=0, world_size=1)
dist.barrier()
dist.all_reduce(torch.ones(3), group=utils.get_global_group())
dist.barrier(utils.get_global_group())
"""


@pytest.mark.parametrize("imports,initialized", [("plugin", False), ("torch alone", True)])
def test_the_plugin_destroys_the_process_group_before_finalization(imports, initialized):
    proc = subprocess.run([sys.executable, "-c", PROCESS, imports], capture_output=True,
                          text=True, cwd=ROOT, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert f"initialized at exit: {initialized}" in proc.stdout, proc.stdout + proc.stderr[-3000:]
    workers = int(proc.stdout.split("gloo workers at exit:")[1].split()[0])
    # Destroying the groups while fairseq still held its global group left that group's workers
    # to finalization: the abort CI met under torchrun after the first fix.
    assert (workers > 0) == initialized, proc.stdout


def test_an_ended_group_is_left_alone():
    """A caller that destroyed its group itself: the teardown at exit has nothing to do."""
    script = PROCESS + "dist.destroy_process_group()\n"
    proc = subprocess.run([sys.executable, "-c", script, "plugin"], capture_output=True,
                          text=True, cwd=ROOT, timeout=120)
    assert proc.returncode == 0 and "initialized at exit: False" in proc.stdout, proc.stderr[-3000:]
