"""A literal float64 Constituent Attention layer (Wang et al., "Tree Transformer", EMNLP 2019,
Eqs. 2-8), for checking ``fairseq_tree.modules.constituent_attention``: one sentence at a time
(its real tokens only, no padding), Python floats and loops, each equation written out.

What the module adds to the paper and the reference follows: the LayerNorm before the link
projections (the authors' code), C_ii = 1 (the empty product of Eq. 3), and the attention
scores scaled by sqrt(d_head) (Eq. 1's Transformer scaling; Eq. 2 writes it d)."""

import math


def dot(u: list, v: list) -> float:
    return sum(a * b for a, b in zip(u, v))


def linear(x: list, weight: list, bias: list) -> list:
    """y = W x + b, W given as rows (out x in)."""
    return [dot(row, x) + b for row, b in zip(weight, bias)]


def layer_norm(x: list, weight: list, bias: list, eps: float) -> list:
    mean = sum(x) / len(x)
    variance = sum((v - mean) ** 2 for v in x) / len(x)  # biased, as nn.LayerNorm
    return [(v - mean) / math.sqrt(variance + eps) * w + b for v, w, b in zip(x, weight, bias)]


def params(linear_module) -> tuple[list, list]:
    return linear_module.weight.tolist(), linear_module.bias.tolist()


def literal_link_hat(words: list, neighbouring) -> list:
    """Eqs. 5-7 for one sentence of n word vectors: a-hat_i for i = 0 .. n-2.
    ``neighbouring``: the module's ``NeighbouringAttention`` (its parameters are read)."""
    n, d_model = len(words), len(words[0])
    norm = neighbouring.layer_norm
    normed = [layer_norm(w, norm.weight.tolist(), norm.bias.tolist(), norm.eps) for w in words]
    q = [linear(h, *params(neighbouring.link_query)) for h in normed]
    k = [linear(h, *params(neighbouring.link_key)) for h in normed]
    d = d_model / 2

    def s(i, j):  # Eq. 5
        return dot(q[i], k[j]) / d

    def p(i, j):  # Eq. 6: w_i's softmax over the neighbours it has (one at either end)
        neighbours = [m for m in (i + 1, i - 1) if 0 <= m < n]
        return math.exp(s(i, j)) / sum(math.exp(s(i, m)) for m in neighbours)

    return [math.sqrt(p(i, i + 1) * p(i + 1, i)) for i in range(n - 1)]  # Eq. 7


def literal_hierarchical(previous: list, current: list) -> list:
    """Eq. 8: a^l_k = a^{l-1}_k + (1 - a^{l-1}_k) a-hat^l_k."""
    return [a + (1 - a) * h for a, h in zip(previous, current)]


def literal_prior(links: list) -> list:
    """Eq. 3: C_ij = prod_{k=min(i,j)}^{max(i,j)-1} a_k (the empty product, C_ii, is 1)."""
    n = len(links) + 1
    return [[math.prod(links[min(i, j):max(i, j)]) for j in range(n)] for i in range(n)]


def literal_attention(words: list, attention, prior: list) -> tuple[list, list]:
    """Eq. 2 with every head: E = C (elementwise) softmax(q k / sqrt(d_head)), not renormalised,
    one C for all heads; the heads' E v concatenated and projected by out_proj. Returns the
    outputs (n x d_model) and E averaged over the heads (n x n)."""
    n, heads = len(words), attention.num_heads
    head_dim = len(words[0]) // heads
    q = [linear(w, *params(attention.q_proj)) for w in words]
    k = [linear(w, *params(attention.k_proj)) for w in words]
    v = [linear(w, *params(attention.v_proj)) for w in words]
    outputs, mean_weights = [], [[0.0] * n for _ in range(n)]
    for i in range(n):
        concatenated = []
        for h in range(heads):
            part = slice(h * head_dim, (h + 1) * head_dim)
            scores = [dot(q[i][part], k[j][part]) / math.sqrt(head_dim) for j in range(n)]
            total = sum(math.exp(score) for score in scores)
            weights = [prior[i][j] * math.exp(scores[j]) / total for j in range(n)]  # Eq. 2
            for j in range(n):
                mean_weights[i][j] += weights[j] / heads
            concatenated += [sum(weights[j] * v[j][part][c] for j in range(n))
                             for c in range(head_dim)]
        outputs.append(linear(concatenated, *params(attention.out_proj)))
    return outputs, mean_weights


def literal_layer(words: list, attention, previous: list) -> dict:
    """One ConstituentSelfAttention layer on one sentence: its input ``words`` (n vectors) and
    a^{l-1} (``previous``, n - 1 values; zeros before the first layer). Returns a-hat^l, a^l,
    C^l, the outputs and E averaged over heads."""
    link_hat = literal_link_hat(words, attention.neighbouring_attention)
    links = literal_hierarchical(previous, link_hat)
    prior = literal_prior(links)
    outputs, weights = literal_attention(words, attention, prior)
    return {"link_hat": link_hat, "links": links, "prior": prior, "outputs": outputs,
            "weights": weights}
