"""Literal, loop-based definitions from the paper, written the way Section 4 states them, for
checking the fast implementations: random trees, hierarchical accumulation (Eqs. 5-10) and the
subtree mask (Section 4.3)."""

import random

import torch


def random_spans(rng: random.Random, num_leaves: int, keep: float) -> list:
    """Distinct, nested ``[start, end)`` spans over ``num_leaves`` leaves, in random order: a
    random tree built by recursive splitting, of which each node is kept with probability
    ``keep`` (any subset of a nested family is nested)."""
    spans, stack = [], [(0, num_leaves)]
    while stack:
        start, end = stack.pop()
        if end - start >= 1 and rng.random() < keep:
            spans.append((start, end))
        if end - start < 2:
            continue
        cuts = sorted(rng.sample(range(start + 1, end), rng.randint(1, min(3, end - start - 1))))
        bounds = [start, *cuts, end]
        stack.extend(zip(bounds, bounds[1:]))
        if len(cuts) > 1 and rng.random() < 0.5:
            # An extra node over the first children: a union of siblings stays nested.
            spans.append((start, cuts[-1]))
    spans = sorted(set(spans))
    for (s1, e1) in spans:
        for (s2, e2) in spans:
            assert e1 <= s2 or e2 <= s1 or (s1 <= s2 and e2 <= e1) or (s2 <= s1 and e1 <= e2)
    rng.shuffle(spans)
    return spans


def padded_batch(rng: random.Random, trees: list, num_leaves: int, extra_pads: int = 2):
    """B x M x 2 spans with padded nodes (start == end) inserted at random rows."""
    rows = max(len(t) for t in trees) + extra_pads
    batch = torch.zeros(len(trees), rows, 2, dtype=torch.long)
    for b, spans in enumerate(trees):
        slots = sorted(rng.sample(range(rows), len(spans)))
        for slot, span in zip(slots, spans):
            batch[b, slot] = torch.tensor(span)
        for slot in set(range(rows)) - set(slots):
            empty = rng.randint(0, num_leaves)
            batch[b, slot] = torch.tensor([empty, empty])
    return batch


def literal_accumulation(leaves, nodes, spans, leaf_weights, vertical=None, horizontal=None,
                         path_count_average=False, root_depth_index=False):
    """Eqs. 5-10 for each sentence, materialising S cell by cell.

    Eq. 5: S_{0,j} = l_j; S_{i+1,j} = n_i if leaf j is in span_i, else 0.
    Eq. 9: E_{i+1,j} = [E^v[|V_j^i|] ; E^h[|H_j^i|]] on the cells of node i, where V_j^i are the
           nodes from i down to leaf j (i included) and |H_j^i| = j - start_i + 1; clipped.
    Eq. 6: S-hat_{i+1,j} = mean of C_j^i = {S_{0,j}} and {S_{t+1,j} : t below i, j in span_t}.
    Eq. 7: N-bar_i = (1 / |span_i|) sum_{j in span_i} w_j * S-hat_{i+1,j}.

    The authors' released code instead: ``path_count_average`` (a), Eq. 6's sum over C_j^i
    divided by its node cells only (len(C_j^i) - 1); ``root_depth_index`` (b), Eq. 9's vertical
    row is the number of nodes whose span holds span_i (i included: the root is 1).
    """
    batch, n, d = leaves.shape
    m = nodes.size(1)
    out = torch.zeros(batch, m, d, dtype=leaves.dtype)
    for b in range(batch):
        real = [i for i in range(m) if spans[b, i, 0] < spans[b, i, 1]]
        span = {i: (int(spans[b, i, 0]), int(spans[b, i, 1])) for i in real}

        def below(t, i):
            return span[i][0] <= span[t][0] and span[t][1] <= span[i][1]

        S = torch.zeros(m + 1, n, d, dtype=leaves.dtype)
        S[0] = leaves[b]
        for i in real:
            for j in range(*span[i]):
                S[i + 1, j] = nodes[b, i]
                if vertical is not None:
                    path = [t for t in real if below(t, i) and span[t][0] <= j < span[t][1]]
                    if root_depth_index:
                        path = [t for t in real if below(i, t)]  # i and the nodes above it
                    a = min(len(path), vertical.size(0) - 1)
                    h = min(j - span[i][0] + 1, horizontal.size(0) - 1)
                    S[i + 1, j] = S[i + 1, j] + torch.cat([vertical[a], horizontal[h]])
        for i in real:
            total = torch.zeros(d, dtype=leaves.dtype)
            for j in range(*span[i]):
                branch = [S[0, j]] + [
                    S[t + 1, j] for t in real if below(t, i) and span[t][0] <= j < span[t][1]
                ]
                cells = len(branch) - 1 if path_count_average else len(branch)
                total = total + leaf_weights[b, j] * torch.stack(branch).sum(0) / cells
            out[b, i] = total / (span[i][1] - span[i][0])
    return out


def literal_head_accumulation(leaves, nodes, spans, head_weights, vertical=None,
                              horizontal=None, **conventions):
    """The released code's leaf weights (c): one w per head (head_weights B x n x H); head h
    accumulates its d/H slice of the values with w[..., h], as ``literal_accumulation``."""
    heads = head_weights.size(-1)
    width = leaves.size(-1) // heads
    return torch.cat([
        literal_accumulation(leaves[..., h * width:(h + 1) * width],
                             nodes[..., h * width:(h + 1) * width], spans, head_weights[..., h],
                             vertical, horizontal, **conventions)
        for h in range(heads)], dim=-1)


def literal_self_attention_visibility(spans, leaf_padding, subtree_masking=True):
    """Section 4.3: who may attend to whom over [leaves; nodes] (B x (n+m) x (n+m) bool).

    A leaf query sees the (real) leaves. With subtree masking a node query sees the leaves of its
    span and the nodes of its subtree (itself included); without it, every real leaf and node.
    A padded node sees only itself, so that its (unused) row stays finite.
    """
    batch, m, _ = spans.shape
    n = leaf_padding.size(1)
    visible = torch.zeros(batch, n + m, n + m, dtype=torch.bool)
    for b in range(batch):
        real = [i for i in range(m) if spans[b, i, 0] < spans[b, i, 1]]
        for q in range(n):
            for k in range(n):
                visible[b, q, k] = not leaf_padding[b, k]
        for i in range(m):
            if i not in real:
                visible[b, n + i, n + i] = True
                continue
            s, e = int(spans[b, i, 0]), int(spans[b, i, 1])
            for j in range(n):
                if subtree_masking:
                    visible[b, n + i, j] = s <= j < e
                else:
                    visible[b, n + i, j] = not leaf_padding[b, j]
            for t in real:
                inside = s <= spans[b, t, 0] and spans[b, t, 1] <= e
                visible[b, n + i, n + t] = bool(inside) or not subtree_masking
    return visible
