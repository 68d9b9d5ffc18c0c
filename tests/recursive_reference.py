"""Literal per-tree recursions for checking the batched ones: random padded batches of trees,
the children of each node found by searching the spans (or heads), states computed by plain
Python recursion, and each composition written out equation by equation from the modules'
parameters (Ahmed et al. 2019, Eqs. 3-8; Recursive Tree Attention, Eqs. 4-7)."""

import math
import random

import torch

from tree_reference import random_spans

PAD = 1  # label padding index of the random batches


def random_tree(rng: random.Random, n: int, shape: str | None = None) -> list:
    """Pre-order spans of a random tree over n leaves, the root first ([] or a node over the one
    leaf when n == 1); ``shape`` (random, right-chain, left-chain, wide) is drawn when None."""
    if n == 1:
        return [] if rng.random() < 0.5 else [(0, 1)]
    shape = shape or rng.choice(["random", "random", "right-chain", "left-chain", "wide"])
    if shape == "right-chain":
        spans = [(i, n) for i in range(n - 1)]
    elif shape == "left-chain":
        spans = [(0, n - i) for i in range(n - 1)]
    elif shape == "wide":
        spans = [(0, n)]
    else:
        spans = set(random_spans(rng, n, rng.choice([0.4, 0.8, 1.0]))) | {(0, n)}
    return sorted(set(spans), key=lambda span: (span[0], -span[1]))


def random_heads(rng: random.Random, n: int) -> list:
    """Heads (0-based, -1 at the root) of a random dependency tree over n words, projective or
    not: each word in a random order takes its head among the words before it."""
    order = rng.sample(range(n), n)
    heads = [-1] * n
    for k in range(1, n):
        heads[order[k]] = order[rng.randrange(k)]
    return heads


def tree_batch(rng: random.Random, sizes: list, left_pad: bool = False, bos: bool = False,
               num_labels: int = 12, untagged: float = 0.3, shapes: list | None = None) -> dict:
    """A padded batch as the datasets collate it: per row n leaves (after a BOS column if
    ``bos``), then the EOS column, padding on the left or right; spans shifted to columns,
    padded nodes [0, 0) after the real ones; labels in [2, num_labels), PAD for untagged
    leaves; dependency heads as columns (-1 at the root and padding). ``shapes``: one tree shape
    per row (see ``random_tree``; None draws it)."""
    trees = [random_tree(rng, n, shape) for n, shape in zip(sizes, shapes or [None] * len(sizes))]
    width = max(sizes) + 1 + bos
    rows = max(len(t) for t in trees) + rng.randint(0, 2)
    spans = torch.zeros(len(sizes), rows, 2, dtype=torch.long)
    padding = torch.ones(len(sizes), width, dtype=torch.bool)
    heads = torch.full((len(sizes), width), -1, dtype=torch.long)
    leaf_labels = torch.full((len(sizes), width), PAD, dtype=torch.long)
    for b, (n, tree) in enumerate(zip(sizes, trees)):
        first = (width - n - 1 - bos if left_pad else 0) + bos
        padding[b, first: first + n] = False
        for i, (start, end) in enumerate(tree):
            spans[b, i] = torch.tensor([start + first, end + first])
        for j, head in enumerate(random_heads(rng, n)):
            heads[b, first + j] = head + first if head >= 0 else -1
        for j in range(n):
            if rng.random() >= untagged:
                leaf_labels[b, first + j] = rng.randrange(2, num_labels)
    node_labels = torch.tensor([[rng.randrange(2, num_labels) for _ in range(rows)] for _ in sizes],
                               dtype=torch.long).view(len(sizes), rows)
    node_labels[spans[..., 0] == spans[..., 1]] = PAD
    return dict(spans=spans, leaf_padding=padding, heads=heads, node_labels=node_labels,
                leaf_labels=leaf_labels)


def constituency_children(spans, leaf_padding, b):
    """{node i: [("leaf", j) or ("node", t), ...] left to right} of batch row b, and its root
    item, found by searching the spans."""
    real = [i for i in range(spans.size(1)) if spans[b, i, 0] < spans[b, i, 1]]
    span = {i: tuple(spans[b, i].tolist()) for i in real}

    def inside(t, i):
        return t != i and span[i][0] <= span[t][0] and span[t][1] <= span[i][1]

    children = {}
    for i in real:
        inner = [t for t in real if inside(t, i)]
        top = [t for t in inner if not any(inside(t, u) for u in inner)]
        covered = {j for t in top for j in range(*span[t])}
        items = [(span[t][0], ("node", t)) for t in top]
        items += [(j, ("leaf", j)) for j in range(*span[i]) if j not in covered]
        children[i] = [item for _, item in sorted(items)]
    lone = [j for j in range(leaf_padding.size(1)) if not leaf_padding[b, j]]
    root = ("node", 0) if real else ("leaf", lone[0])
    return children, root


def dependency_children(heads, leaf_padding, b):
    """{word a: [("leaf", a), dependents as ("node", k) or ("leaf", k)]} for the words with
    dependents, and the root item."""
    words = [j for j in range(heads.size(1)) if not leaf_padding[b, j]]
    deps = {a: [k for k in words if heads[b, k] == a] for a in words}
    children = {a: [("leaf", a)] + [("node" if deps[k] else "leaf", k) for k in deps[a]]
                for a in words if deps[a]}
    root = next(a for a in words if heads[b, a] < 0)
    return children, ("node" if deps[root] else "leaf", root)


def literal_recursion(leaf_states, children_of, num_nodes, compose):
    """States by recursion, row by row. ``children_of(b)`` gives (children dict, root item);
    ``compose(b, i, child items, child states)`` one node's state. Returns nodes B x M x C
    (0 where a row has no such node) and roots B x C."""
    batch, _, dim = leaf_states.shape
    nodes = torch.zeros(batch, num_nodes, dim, dtype=leaf_states.dtype)
    roots = []
    for b in range(batch):
        children, root = children_of(b)
        memo = {}

        def state(item):
            kind, k = item
            if kind == "leaf":
                return leaf_states[b, k]
            if k not in memo:
                kids = children[k]
                memo[k] = compose(b, k, kids, [state(kid) for kid in kids])
            return memo[k]

        for i in children:
            nodes[b, i] = state(("node", i))
        roots.append(state(root))
    return nodes, torch.stack(roots)


def literal_sinusoid(pos: int, dim: int, dtype) -> torch.Tensor:
    """P(pos, 2i) = sin(pos / 10000^(2i/d)), P(pos, 2i+1) = cos(...)."""
    values = [math.sin(pos / 10000 ** (2 * (k // 2) / dim)) if k % 2 == 0
              else math.cos(pos / 10000 ** (2 * (k // 2) / dim)) for k in range(dim)]
    return torch.tensor(values, dtype=dtype)


def literal_layer_norm(x, norm):
    mean = x.mean(-1, keepdim=True)
    var = ((x - mean) ** 2).mean(-1, keepdim=True)
    return (x - mean) / torch.sqrt(var + norm.eps) * norm.weight + norm.bias


def literal_softmax(scores):
    e = torch.exp(scores - scores.max(-1, keepdim=True).values)
    return e / e.sum(-1, keepdim=True)


def literal_multi_branch(attention, x):
    """Ahmed et al., Eqs. 3-7 on the rows x (k x C), one branch at a time."""
    d = attention.branch_dim
    out = 0
    for i in range(attention.branches):
        rows = slice(i * d, (i + 1) * d)
        q = x @ attention.query.weight[rows].T
        k = x @ attention.key.weight[rows].T
        v = x @ attention.value.weight[rows].T
        branch = literal_softmax(q @ k.T / math.sqrt(d)) @ v  # Eqs. 3-4
        scaled = literal_layer_norm(branch @ attention.branch_proj[i] + x, attention.layer_norm)
        scaled = scaled * attention.kappa[i]  # Eq. 5
        hidden = torch.relu(scaled @ attention.conv1[i] + attention.conv1_bias[i])
        out = out + attention.alpha[i] * (hidden @ attention.conv2[i] + attention.conv2_bias[i])
    return out  # Eq. 7


def literal_heads(mha, x):
    """fairseq's multi-head self-attention on the rows x (k x C), head by head."""
    heads, d = mha.num_heads, mha.head_dim
    q = (x @ mha.q_proj.weight.T + mha.q_proj.bias) * d ** -0.5
    k = x @ mha.k_proj.weight.T + mha.k_proj.bias
    v = x @ mha.v_proj.weight.T + mha.v_proj.bias
    outs = [literal_softmax(q[:, h * d:(h + 1) * d] @ k[:, h * d:(h + 1) * d].T)
            @ v[:, h * d:(h + 1) * d] for h in range(heads)]
    return torch.cat(outs, -1) @ mha.out_proj.weight.T + mha.out_proj.bias


def literal_multi_branch_composition(composition, rows):
    """Ahmed et al., Eq. 8 over Eqs. 3-7 (or a Table 3 ablation): P = sum_r tanh((X~ + X) W + b)."""
    x = torch.stack(rows)
    if composition.positional_encoding:
        x = x + torch.stack([literal_sinusoid(r, x.size(1), x.dtype) for r in range(len(rows))])
    attention = composition.attention
    if hasattr(attention, "branches"):
        attended = literal_multi_branch(attention, x)
    else:
        attended = literal_heads(attention.attention, x)
    out = composition.output
    return sum(torch.tanh((attended[r] + x[r]) @ out.weight.T + out.bias) for r in range(len(rows)))


def literal_tree_attention_node(module, node_label, states, offsets, child_labels, split_word):
    """Recursive Tree Attention, Eq. 5, for one node: additive attention with a zero query over
    its children (keys [C_j + P(pos_j); L_j]), summing the children's C; the mean of the
    pieces for a split word in the no-sub-word-nodes ablation."""
    if split_word and not module.subword_nodes:
        return torch.stack(states).mean(0)
    scores = []
    for state, offset, label in zip(states, offsets, child_labels):
        key = state
        if module.positions:
            key = key + literal_sinusoid(offset, state.numel(), state.dtype)
        hidden = module.key.bias.clone()
        if module.labels:
            key = torch.cat([key, label])
            hidden = hidden + module.query.weight @ module.label_embedding.weight[node_label]
        hidden = hidden + module.key.weight @ key
        scores.append(module.energy.weight[0] @ torch.tanh(hidden))
    weights = literal_softmax(torch.stack(scores))
    return sum(w * s for w, s in zip(weights, states))
