"""Recursive multi-branch attention: the composition function of Ahmed et al. (2019), "You Only
Need Attention to Traverse Trees" (the paper's "Tree Transformer"), applied bottom-up.

One composition, shared by all nodes, turns the rows X of a node (Eq. 1: its children for a
constituency tree, "CTT"; the word itself then its dependents for a dependency tree, "DTT") into
the parent vector: multi-branch self-attention over the rows (Eqs. 3-7), then
P = EwS(tanh((X~ + X) W + b)) (Eq. 8). The root's vector is the sentence.

The paper's text is OCR; decisions where it is unreadable or silent:

* Eq. 5 reads "LayerNorm(B_i W_i^b + B_i) x kappa_i", but B_i has d_v = d_m / n columns and
  B_i W_i^b has d_m, so the residual cannot be B_i. It is the branch's input X, as in the
  weighted Transformer that the paper builds on (Ahmed et al., 2017) and in the authors' code.
  One LayerNorm is shared by the branches (the equation has no index on it).
* Eq. 6 (PCNN): kernel-size-1 convolutions, i.e. position-wise linear maps, one pair per branch
  (d_m -> 341 -> d_m), dropout 0.1 after the second only ("341 1d kernels with no dropout, then
  300 kernels with dropout 0.1"); no residual inside, as Eq. 6 has none.
* kappa and alpha start at 1/n and are free parameters (the paper says only "learned").
* The Q/K/V maps have no bias (Eq. 4 has none); Eq. 8's W and b are one d_m x d_m linear map.
* Positional encoding (the Table 2 switch, off by default as in Table 1's best CTT) adds the
  sinusoidal encoding of each row's index in X to X, before attention and before Eq. 8's
  residual.
* A word without dependents in a dependency tree keeps its input vector (the authors' code
  composes only words that have dependents).
* Table 3's single-head and multi-head ablations replace Eqs. 3-7 by fairseq's
  ``MultiheadAttention`` with 1 or n heads (with its output projection); Eq. 8 is unchanged.
"""

from typing import Optional

import torch
import torch.nn.functional as F
from fairseq.modules import LayerNorm, MultiheadAttention
from torch import Tensor, nn

from fairseq_tree.modules.recursion_plan import RecursionPlan, plan_from_heads, plan_from_spans
from fairseq_tree.modules.recursive_tree import RecursiveOutput, recurse, sinusoidal_encoding

ATTENTIONS = ("multi-branch", "multi-head", "single-head")


def scaled_dot_product(query: Tensor, key: Tensor, value: Tensor, mask: Tensor) -> Tensor:
    """Ahmed et al., Eq. 3: softmax(Q K^T / sqrt(d_k)) V, over the keys where ``mask`` holds.

    Args:
        query, key, value: ... x F x d_k; mask: ... x F bool (True at real rows).
    """
    return F.scaled_dot_product_attention(query, key, value, attn_mask=mask.unsqueeze(-2))


class MultiBranchAttention(nn.Module):
    """Ahmed et al. 2019, Eqs. 3-7: n attention branches of d_m / n dimensions, each projected
    back to d_m with a residual, normalised and scaled by kappa_i (Eq. 5), passed through its own
    position-wise convolution block (Eq. 6) and summed with weights alpha_i (Eq. 7)."""

    def __init__(self, embed_dim: int = 300, branches: int = 6, ffn_dim: int = 341,
                 dropout: float = 0.1):
        super().__init__()
        if embed_dim % branches:
            raise ValueError(f"embed_dim {embed_dim} is not a multiple of {branches} branches")
        self.branches, self.branch_dim = branches, embed_dim // branches
        self.query = nn.Linear(embed_dim, embed_dim, bias=False)  # W_i^Q of every branch
        self.key = nn.Linear(embed_dim, embed_dim, bias=False)
        self.value = nn.Linear(embed_dim, embed_dim, bias=False)
        self.branch_proj = nn.Parameter(torch.empty(branches, self.branch_dim, embed_dim))
        self.layer_norm = LayerNorm(embed_dim)
        self.kappa = nn.Parameter(torch.full((branches,), 1.0 / branches))
        self.alpha = nn.Parameter(torch.full((branches,), 1.0 / branches))
        self.conv1 = nn.Parameter(torch.empty(branches, embed_dim, ffn_dim))
        self.conv1_bias = nn.Parameter(torch.zeros(branches, ffn_dim))
        self.conv2 = nn.Parameter(torch.empty(branches, ffn_dim, embed_dim))
        self.conv2_bias = nn.Parameter(torch.zeros(branches, embed_dim))
        self.dropout = nn.Dropout(dropout)
        for weight in (self.branch_proj, self.conv1, self.conv2):
            for branch in weight:
                nn.init.xavier_uniform_(branch)

    def split_branches(self, x: Tensor) -> Tensor:
        """K x F x (n * d_k) -> K x n x F x d_k."""
        return x.unflatten(-1, (self.branches, self.branch_dim)).transpose(1, 2)

    def branch_attention(self, x: Tensor, mask: Tensor) -> Tensor:
        """Eq. 4: B_i = Attention(X W_i^Q, X W_i^K, X W_i^V); K x F x C -> K x n x F x d_k."""
        projections = (self.query, self.key, self.value)
        query, key, value = (self.split_branches(proj(x)) for proj in projections)
        return scaled_dot_product(query, key, value, mask.unsqueeze(1))

    def branch_scale(self, branches: Tensor, x: Tensor) -> Tensor:
        """Eq. 5: B-bar_i = LayerNorm(B_i W_i^b + X) * kappa_i; -> K x n x F x C."""
        projected = torch.einsum("knfd,ndc->knfc", branches, self.branch_proj)
        return self.layer_norm(projected + x.unsqueeze(1)) * self.kappa.view(-1, 1, 1)

    def pcnn(self, x: Tensor) -> Tensor:
        """Eq. 6, per branch: PCNN(x) = Conv(ReLU(Conv(x) + b1)) + b2, kernel size 1;
        K x n x F x C -> K x n x F x C."""
        hidden = torch.einsum("knfc,nch->knfh", x, self.conv1) + self.conv1_bias.unsqueeze(1)
        out = torch.einsum("knfh,nhc->knfc", F.relu(hidden), self.conv2)
        return self.dropout(out + self.conv2_bias.unsqueeze(1))

    def forward(self, x: Tensor, mask: Tensor) -> Tensor:
        """Eq. 7: BranchAttn = sum_i alpha_i PCNN_i(B-bar_i).

        Args:
            x: K x F x C, the rows of K nodes; mask: K x F bool, True at real rows.
        Returns:
            K x F x C (rows at padding are finite and meaningless).
        """
        scaled = self.branch_scale(self.branch_attention(x, mask), x)
        return torch.einsum("knfc,n->kfc", self.pcnn(scaled), self.alpha)


class HeadAttention(nn.Module):
    """Table 3's single-head and multi-head compositions: fairseq's multi-head self-attention
    over the rows of each node."""

    def __init__(self, embed_dim: int, heads: int):
        super().__init__()
        self.attention = MultiheadAttention(embed_dim, heads, self_attention=True)

    def forward(self, x: Tensor, mask: Tensor) -> Tensor:
        """K x F x C, K x F bool (True at real rows) -> K x F x C."""
        rows = x.transpose(0, 1)  # F x K x C
        out, _ = self.attention(rows, rows, rows, key_padding_mask=~mask, need_weights=False)
        return out.transpose(0, 1)


class MultiBranchComposition(nn.Module):
    """The composition function of Ahmed et al. 2019: rows X of a node -> its parent vector P
    (Eq. 2, P = f(X)), through the attention module (Eqs. 3-7 or a Table 3 ablation) and Eq. 8."""

    def __init__(self, embed_dim: int = 300, attention: str = "multi-branch", branches: int = 6,
                 ffn_dim: int = 341, dropout: float = 0.1, positional_encoding: bool = False):
        super().__init__()
        if attention not in ATTENTIONS:
            raise ValueError(f"attention must be one of {', '.join(ATTENTIONS)}, not {attention!r}")
        if attention == "multi-branch":
            self.attention = MultiBranchAttention(embed_dim, branches, ffn_dim, dropout)
        else:
            self.attention = HeadAttention(embed_dim, branches if attention == "multi-head" else 1)
        self.output = nn.Linear(embed_dim, embed_dim)  # W and b of Eq. 8
        self.positional_encoding = positional_encoding

    def parent_vector(self, attended: Tensor, x: Tensor, mask: Tensor) -> Tensor:
        """Eq. 8: P = EwS(tanh((X~ + X) W + b)), EwS summing the real rows; -> K x C."""
        rows = torch.tanh(self.output(attended + x))
        return (rows * mask.unsqueeze(-1).to(rows.dtype)).sum(1)

    def forward(self, x: Tensor, mask: Tensor) -> Tensor:
        """x: K x F x C, the rows of K nodes; mask: K x F bool (True at real rows) -> K x C."""
        if self.positional_encoding:
            rank = torch.arange(x.size(1), device=x.device)
            x = x + sinusoidal_encoding(rank, x.size(-1), x.dtype)
        return self.parent_vector(self.attention(x, mask), x, mask)


class RecursiveMultiBranchAttention(nn.Module):
    """Ahmed et al. 2019 as a recursive encoder: the composition applied bottom-up over
    constituency trees (CTT, children only) or dependency trees (DTT, the word then its
    dependents), one tree height at a time for the whole batch."""

    def __init__(self, embed_dim: int = 300, dependency: bool = False, **composition):
        super().__init__()
        self.dependency = dependency
        self.composition = MultiBranchComposition(embed_dim, **composition)

    def build_plan(self, leaf_padding: Tensor, spans: Optional[Tensor],
                   heads: Optional[Tensor]) -> RecursionPlan:
        if self.dependency:
            if heads is None:
                raise ValueError("the dependency variant (DTT) needs dependency heads")
            return plan_from_heads(heads, leaf_padding)
        return plan_from_spans(spans, leaf_padding)

    def forward(self, leaf_states: Tensor, leaf_padding: Tensor, spans: Optional[Tensor] = None,
                node_labels: Optional[Tensor] = None, leaf_labels: Optional[Tensor] = None,
                heads: Optional[Tensor] = None,
                plan: Optional[RecursionPlan] = None) -> RecursiveOutput:
        """
        Args:
            leaf_states: B x N x C, the leaf vectors (e.g. GloVe embeddings).
            leaf_padding: B x N bool, True at the columns that are no leaf of the tree.
            spans: B x M x 2 node spans (constituency); heads: B x N head columns, -1 at the
                root and at padding (dependency). Labels are not read.
            plan: a plan built by ``build_plan`` for these trees, to share it.
        Returns:
            node states B x M x C (dependency: M = N, every word's state) and root states B x C.
        """
        plan = plan if plan is not None else self.build_plan(leaf_padding, spans, heads)
        return recurse(plan, leaf_states,
                       lambda rows, level: self.composition(rows, level.child_mask))
