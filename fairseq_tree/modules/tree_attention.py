"""Tree-based attention (Nguyen et al., ICLR 2020): encoder self-attention over leaves and nodes
(Section 4.3, Eqs. 11-20) and decoder cross-attention over the source tree (Section 4.4,
Eqs. 21-24). Node values come from hierarchical accumulation (Section 4.2)."""

import math
from typing import Dict, Optional, Tuple

import torch
import torch.nn.functional as F
from fairseq.incremental_decoding_utils import with_incremental_state
from torch import Tensor, nn

from fairseq_tree.modules.hierarchical_accumulation import accumulate
from fairseq_tree.modules.source_tree import SourceTree


class HierarchicalEmbedding(nn.Module):
    """E^v and E^h of Eq. 9: ``rows`` x ``head_dim / 2`` each, shared across attention heads.

    Row k of E^v marks a cell whose node is k nodes above its leaf (|V_j^t|); row k of E^h a leaf
    that is the k-th of the node's span (|H_j^t|); larger counts share the last row; row 0 is
    never used.
    """

    def __init__(self, rows: int, head_dim: int):
        super().__init__()
        if head_dim % 2:
            raise ValueError(f"hierarchical embeddings need an even head dimension, got {head_dim}")
        self.vertical = nn.Parameter(torch.empty(rows, head_dim // 2))
        self.horizontal = nn.Parameter(torch.empty(rows, head_dim // 2))
        nn.init.normal_(self.vertical, std=head_dim**-0.5)
        nn.init.normal_(self.horizontal, std=head_dim**-0.5)

    @property
    def rows(self) -> Tuple[int, int]:
        return self.vertical.size(0), self.horizontal.size(0)


class TreeAttentionBase(nn.Module):
    """Multi-head attention whose node values are hierarchically accumulated.

    Projections W^Q, W^K, W^V, W^O are shared by leaves and nodes; u (``leaf_weight``) gives the
    leaf weights w = L u of Eq. 7; ``hierarchical_embedding`` is None for the -HierEmb ablation.
    """

    def __init__(self, embed_dim: int, num_heads: int, dropout: float = 0.0,
                 hier_embed_rows: Optional[int] = 100, kdim: Optional[int] = None):
        super().__init__()
        if embed_dim % num_heads:
            raise ValueError(f"embed_dim {embed_dim} is not divisible by {num_heads} heads")
        kdim = kdim or embed_dim
        self.embed_dim, self.num_heads = embed_dim, num_heads
        self.head_dim = embed_dim // num_heads
        self.dropout = dropout
        self.q_proj = nn.Linear(embed_dim, embed_dim)
        self.k_proj = nn.Linear(kdim, embed_dim)
        self.v_proj = nn.Linear(kdim, embed_dim)
        self.out_proj = nn.Linear(embed_dim, embed_dim)
        self.leaf_weight = nn.Parameter(torch.empty(kdim))  # u_s (encoder) or u_c (decoder)
        self.hierarchical_embedding = (
            HierarchicalEmbedding(hier_embed_rows, self.head_dim) if hier_embed_rows else None
        )
        self.reset_parameters()

    def reset_parameters(self):
        # As fairseq's MultiheadAttention: scaled Xavier for the input projections.
        for proj in (self.q_proj, self.k_proj, self.v_proj):
            nn.init.xavier_uniform_(proj.weight, gain=1 / math.sqrt(2))
        nn.init.xavier_uniform_(self.out_proj.weight)
        nn.init.constant_(self.out_proj.bias, 0.0)
        nn.init.normal_(self.leaf_weight, std=self.leaf_weight.numel() ** -0.5)

    def accumulated_node_values(self, tree: SourceTree, leaf_states: Tensor,
                                leaf_values: Tensor, node_values: Tensor) -> Tensor:
        """N-bar' of Eq. 10 (Eq. 8 for -HierEmb) with w = L u (Eq. 7).

        Args:
            leaf_states: B x N x C, the L that gives w; leaf_values / node_values: B x N x C and
                B x M x C, the projected values L W^V and N W^V.
        Returns:
            B x M x C.
        """
        weights = leaf_states @ self.leaf_weight.to(leaf_states.dtype)  # B x N
        embedding = self.hierarchical_embedding
        rows = embedding.rows if embedding is not None else None
        dtype = torch.promote_types(leaf_values.dtype, torch.float32)
        plan = tree.accumulation_plan(rows, dtype)
        if embedding is None:
            return accumulate(plan, leaf_values, node_values, weights)
        return accumulate(plan, leaf_values, node_values, weights,
                          embedding.vertical, embedding.horizontal)

    def split_heads(self, x: Tensor) -> Tensor:
        """B x T x C -> B x H x T x D."""
        batch, length, _ = x.shape
        return x.view(batch, length, self.num_heads, self.head_dim).transpose(1, 2)

    def attend(self, q: Tensor, k: Tensor, v: Tensor, visible: Tensor, need_weights: bool):
        """Scaled dot-product attention over B x H x T x D tensors; ``visible`` is a bool mask
        broadcastable to B x H x Tq x Tk (True: may attend). Returns the B x Tq x C context and,
        with ``need_weights``, the B x H x Tq x Tk attention probabilities."""
        dropout = self.dropout if self.training else 0.0
        if not need_weights:
            context = F.scaled_dot_product_attention(q, k, v, attn_mask=visible, dropout_p=dropout)
            weights = None
        else:
            scores = (q @ k.transpose(-1, -2)) * self.head_dim**-0.5
            # softmax in float32 at least, as fairseq's attention does for half precision
            scores = scores.to(torch.promote_types(scores.dtype, torch.float32))
            scores = scores.masked_fill(~visible, float("-inf"))
            weights = torch.softmax(scores, dim=-1).to(q.dtype)
            context = F.dropout(weights, p=dropout, training=self.training) @ v
        batch, _, length, _ = context.shape
        context = context.transpose(1, 2).reshape(batch, length, self.embed_dim)
        return self.out_proj(context), weights


class TreeSelfAttention(TreeAttentionBase):
    """Encoder self-attention over [leaves; nodes] (Section 4.3, Eqs. 11-20).

    Leaves attend to leaves; nodes attend to nodes and leaves, where the values of node keys are
    the hierarchically accumulated N-bar' (with u_s); subtree masking restricts a node to its
    own subtree. Called by fairseq's encoder layer as ``self_attn(query=x, key=x, value=x,
    key_padding_mask=tree, ...)``: the layer hands its padding mask to self-attention untouched,
    and for tree attention the ``SourceTree`` takes that place, as it says which keys each query
    may see.
    """

    def __init__(self, *args, subtree_masking: bool = True, **kwargs):
        super().__init__(*args, **kwargs)
        self.subtree_masking = subtree_masking

    def forward(self, query: Tensor, key: Tensor, value: Tensor, key_padding_mask: SourceTree,
                need_weights: bool = False, attn_mask: Optional[Tensor] = None):
        """
        Args:
            query (= key = value): (N + M) x B x C, the leaves then the nodes.
            key_padding_mask: the ``SourceTree`` of the batch.
        Returns:
            (N + M) x B x C, and None (no attention weights are returned).
        """
        if attn_mask is not None:
            raise ValueError("tree self-attention takes its mask from the tree, not attn_mask")
        tree, n = key_padding_mask, key_padding_mask.num_leaves
        x = query.transpose(0, 1)  # B x (N+M) x C
        values = self.v_proj(x)
        node_values = self.accumulated_node_values(tree, x[:, :n], values[:, :n], values[:, n:])
        values = torch.cat([values[:, :n], node_values.to(values.dtype)], dim=1)
        q, k, v = (self.split_heads(t) for t in (self.q_proj(x), self.k_proj(x), values))
        visible = tree.self_attention_mask(self.subtree_masking)
        out, _ = self.attend(q, k, v, visible, need_weights=False)
        return out.transpose(0, 1), None


@with_incremental_state
class TreeCrossAttention(TreeAttentionBase):
    """Decoder attention over the source tree (Section 4.4, Eqs. 21-24).

    Target queries attend to keys over [nodes; leaves] of the encoder output; node values are
    accumulated with this layer's own u_c (and hierarchical embeddings); no subtree mask. Called
    by fairseq's decoder layer as ``encoder_attn(query=x, key=tree, value=tree, ...)``, where
    ``tree`` is the ``SourceTree`` holding the encoder's leaf and node states.

    In incremental decoding the projected keys, the values (accumulation included) and the key
    padding mask are computed once per source sentence and cached.
    """

    def forward(self, query: Tensor, key: Optional[SourceTree], value: Optional[SourceTree] = None,
                key_padding_mask: Optional[Tensor] = None,
                incremental_state: Optional[Dict[str, Dict[str, Optional[Tensor]]]] = None,
                static_kv: bool = True, need_weights: bool = False, need_head_weights: bool = False):
        """
        Args:
            query: T x B x C target states.
            key, value: the ``SourceTree`` with encoder states (unused once cached).
        Returns:
            T x B x C, and with ``need_weights`` the attention over the source *leaves*
            (B x T x N averaged over heads, or H x B x T x N with ``need_head_weights``), so
            alignments index ``src_tokens``.
        """
        need_weights = need_weights or need_head_weights
        memory = self._get_input_buffer(incremental_state)
        if "prev_key" not in memory:
            memory = self.source_memory(key)
            if incremental_state is not None:
                self._set_input_buffer(incremental_state, memory)
        q = self.split_heads(self.q_proj(query.transpose(0, 1)))
        visible = ~memory["prev_key_padding_mask"][:, None, None, :]
        out, weights = self.attend(q, memory["prev_key"], memory["prev_value"], visible, need_weights)
        if weights is not None:
            weights = weights[..., int(memory["num_nodes"]):]  # the leaves of [nodes; leaves]
            weights = weights.transpose(0, 1) if need_head_weights else weights.mean(dim=1)
        return out.transpose(0, 1), weights

    def source_memory(self, tree: SourceTree) -> Dict[str, Tensor]:
        """Keys (B x H x (M+N) x D) over [nodes; leaves], values with the accumulated nodes, and
        the key padding mask (B x (M+N)) of the source trees."""
        leaves, nodes = tree.leaves.transpose(0, 1), tree.nodes.transpose(0, 1)  # B x N|M x C
        leaf_values, node_values = self.v_proj(leaves), self.v_proj(nodes)
        node_values = self.accumulated_node_values(tree, leaves, leaf_values, node_values)
        keys = self.k_proj(torch.cat([nodes, leaves], dim=1))
        values = torch.cat([node_values.to(leaf_values.dtype), leaf_values], dim=1)
        return {
            "prev_key": self.split_heads(keys),
            "prev_value": self.split_heads(values),
            "prev_key_padding_mask": tree.memory_padding_mask(),
            "num_nodes": torch.tensor(tree.num_nodes),
        }

    def reorder_incremental_state(self, incremental_state, new_order: Tensor):
        """Follow beam search: reorder the cached source memory along the batch. A reorder that
        keeps the batch size only moves rows among the beam copies of one sentence, whose memory
        is the same, so it is left as it is (fairseq's MultiheadAttention relies on this too);
        when finished sentences leave the batch, the remaining rows are selected."""
        memory = self._get_input_buffer(incremental_state)
        if "prev_key" in memory and memory["prev_key"].size(0) != new_order.size(0):
            for name in ("prev_key", "prev_value", "prev_key_padding_mask"):
                memory[name] = memory[name].index_select(0, new_order)
            self._set_input_buffer(incremental_state, memory)
        return incremental_state

    def _get_input_buffer(self, incremental_state) -> Dict[str, Tensor]:
        if incremental_state is None:
            return {}
        return self.get_incremental_state(incremental_state, "attn_state") or {}

    def _set_input_buffer(self, incremental_state, buffer: Dict[str, Tensor]):
        return self.set_incremental_state(incremental_state, "attn_state", buffer)
