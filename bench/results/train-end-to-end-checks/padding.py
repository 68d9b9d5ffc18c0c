"""Encoder positions of the batches of updates 20-400 of the quickstart run, with tree batches
ordered by leaves + nodes (fairseq's LanguagePairDataset order, which TreeLanguagePairDataset
used until session 42) and by leaves (its order since): real leaves + nodes; tree2seq's padded
layout, leaves padded to the batch's longest and nodes to its most (B x (max N + max M)); the
token-matched Transformer's on the same batches, B x max (N + M); the Transformer's, B x max N.
Run from the repository root; writes padding.json."""
import json
import shlex
import sys

from fairseq.data import LanguagePairDataset, data_utils

sys.path.insert(0, "bench")
import train_end_to_end as e2e  # noqa: E402
from fairseq_tree.data.tree_language_pair_dataset import TreeLanguagePairDataset  # noqa: E402

cmd = json.load(open("bench/results/train-end-to-end-cpu.json"))["commands"]["tree2seq"]
prefix = shlex.split(cmd)[1] + "/train.en-fr.en"
# the datasets kept: their sizes are views of their memory maps
leaf_data = data_utils.load_indexed_dataset(prefix, None, "mmap")
node_data = data_utils.load_indexed_dataset(prefix + ".labels", None, "mmap")
leaves, nodes = leaf_data.sizes, node_data.sizes


def positions(batches) -> dict:
    totals = dict.fromkeys(["real", "tree2seq", "transformer_n_plus_m", "transformer"], 0)
    for ids in batches:
        n, m = [int(leaves[i]) for i in ids], [int(nodes[i]) for i in ids]
        totals["real"] += sum(n) + sum(m)
        totals["tree2seq"] += len(ids) * (max(n) + max(m))
        totals["transformer_n_plus_m"] += len(ids) * max(a + b for a, b in zip(n, m))
        totals["transformer"] += len(ids) * max(n)
    return totals


orders = {"by leaves": TreeLanguagePairDataset.ordered_indices,
          "by leaves + nodes": LanguagePairDataset.ordered_indices}
report = {"updates": "20-400"}
for name, order in orders.items():
    TreeLanguagePairDataset.ordered_indices = order
    setup = e2e.build_setup("tree2seq", shlex.split(cmd)[1:])
    report[name] = positions(e2e.trained_batches(setup, 400)[20:400])
json.dump(report, open("bench/results/train-end-to-end-checks/padding.json", "w"), indent=1)
print(json.dumps(report, indent=1))
