"""The floor of the runs made before tree batches were ordered by leaves (train-end-to-end-cpu.json,
train-end-to-end-token-matched-cpu.json: updates 20-400), counted again with each model on its
own batches: tree2seq's ordered by leaves + nodes (fairseq's LanguagePairDataset order, which
TreeLanguagePairDataset used then), the Transformer's by leaves. Those runs' floor, 1.219x,
counted the Transformer on tree2seq's batches, which it never trained on. Run from the
repository root; writes floor-before.json."""
import json
import shlex
import sys

from fairseq.data import LanguagePairDataset

sys.path.insert(0, "bench")
import train_end_to_end as e2e  # noqa: E402
from fairseq_tree.data.tree_language_pair_dataset import TreeLanguagePairDataset  # noqa: E402

TreeLanguagePairDataset.ordered_indices = LanguagePairDataset.ordered_indices  # the old order
cmds = json.load(open("bench/results/train-end-to-end-cpu.json"))["commands"]
setups = {name: e2e.build_setup(name, shlex.split(cmds[name])[1:]) for name in e2e.MODELS}
batches = {name: e2e.trained_batches(setup, 400)[20:400] for name, setup in setups.items()}
own = e2e.floor_flops(setups, batches)
tree_batches = e2e.floor_flops(setups, {name: batches["tree2seq"] for name in e2e.MODELS})
report = {"updates": "20-400", "each_on_its_own_batches": own,
          "both_on_tree2seqs_batches (the floor reported then)": tree_batches}
json.dump(report, open("bench/results/train-end-to-end-checks/floor-before.json", "w"), indent=1)
print(json.dumps(report, indent=1))
