"""Tree-based attention (Nguyen et al., ICLR 2020): encoder self-attention over leaves and nodes
(Section 4.3, Eqs. 11-20) and decoder cross-attention over the source tree (Section 4.4,
Eqs. 21-24). Node values come from hierarchical accumulation (Section 4.2). Each paper equation of
the attentions is one method (``unit_attention``, Eqs. 17-18, the nodes' and the leaves' halves
of one masked attention; ``target_attention``, Eq. 24); the head plumbing is
``heads.MultiheadProjections``. Both return
their attention weights when asked (``need_weights``, ``need_head_weights``) with fairseq's
shapes, over the keys [leaves; nodes]."""

import math
from typing import Dict, List, Optional, Sequence, Tuple

import torch
import torch.nn.functional as F
from fairseq.incremental_decoding_utils import with_incremental_state
from torch import Tensor, nn

from fairseq_tree.modules.heads import INPUT_PROJECTIONS, MultiheadProjections, returned_weights
from fairseq_tree.modules.hierarchical_accumulation import (
    PAPER,
    AccumulationConventions,
    accumulate_values,
)
from fairseq_tree.modules.source_tree import SourceTree


# The authors' released code (convention (d)): E^v indexed by depths 1-50 and E^h by ranks
# 1-100 (larger ones share the last row), both drawn from N(0, 1); with this module's unused row 0
# that is 51 and 101 rows.
RELEASED_EMBEDDING_ROWS = (51, 101)


class HierarchicalEmbedding(nn.Module):
    """E^v and E^h of Eq. 9: ``rows`` x ``head_dim / 2`` each, shared across attention heads, held
    as one parameter ``weight`` of 2 x K x head_dim / 2 (``vertical`` is ``weight[0]``,
    ``horizontal`` ``weight[1]``; K the larger of their row counts), which is how the
    accumulation reads them: both tables in one batched product.

    Row k of E^v marks a cell whose node is k nodes above its leaf (|V_j^t|); row k of E^h a leaf
    that is the k-th of the node's span (|H_j^t|); larger counts share the last row; row 0 is
    never used.

    With ``released``, convention (d) of the authors' released code: 50 vertical rows in use and
    100 horizontal ones (``RELEASED_EMBEDDING_ROWS``, whatever ``rows``), drawn from N(0, 1), not
    N(0, 1/head_dim) (the vertical table's 50 rows past its 51 are zeros that nothing reads).
    There (src/modules/nstack_merge_tree_attention.py, ``MergeHierarchicalEmbedding``) both
    tables are one ``nn.Embedding`` left at torch's N(0, 1) initialisation, its indices clamped
    at ``nstack_hier_embed_max_ver`` and ``nstack_hier_embed_max_horiz``, which
    src/models/nstack_archs.py sets to 50 and 100 for the architectures its README trains
    (``..._allcross_hier``).
    """

    def __init__(self, rows: int, head_dim: int, released: bool = False):
        super().__init__()
        if head_dim % 2:
            raise ValueError(f"hierarchical embeddings need an even head dimension, got {head_dim}")
        vertical_rows, horizontal_rows, std = (
            RELEASED_EMBEDDING_ROWS + (1.0,) if released else (rows, rows, head_dim**-0.5))
        self.rows = vertical_rows, horizontal_rows
        self.weight = nn.Parameter(torch.zeros(2, max(self.rows), head_dim // 2))
        nn.init.normal_(self.vertical, std=std)
        nn.init.normal_(self.horizontal, std=std)

    @property
    def vertical(self) -> Tensor:
        return self.weight[0, :self.rows[0]]

    @property
    def horizontal(self) -> Tensor:
        return self.weight[1, :self.rows[1]]

    def _load_from_state_dict(self, state_dict, prefix, *args, **kwargs):
        """Checkpoints made before the two tables became one hold them apart."""
        apart = (prefix + "vertical", prefix + "horizontal")
        if prefix + "weight" not in state_dict and all(key in state_dict for key in apart):
            vertical, horizontal = (state_dict.pop(key) for key in apart)
            weight = vertical.new_zeros(self.weight.shape)
            weight[0, :len(vertical)], weight[1, :len(horizontal)] = vertical, horizontal
            state_dict[prefix + "weight"] = weight
        super()._load_from_state_dict(state_dict, prefix, *args, **kwargs)


class TreeAttentionBase(MultiheadProjections):
    """Multi-head attention whose node values are hierarchically accumulated.

    Projections W^Q, W^K, W^V, W^O are shared by leaves and nodes; u (``leaf_weight``) gives the
    leaf weights w = L u of Eq. 7 (with the released code's convention (c), U of C x heads and a
    bias ``leaf_bias``: w = L U + b, one w per head); ``hierarchical_embedding`` is None for the
    -HierEmb ablation.

    The input projections named in ``packed`` and u are rows of one parameter,
    ``in_proj_weight`` = [W^Q; W^K; W^V; u^T; 0] (``in_proj_bias`` alike), so that w rides along
    in their one product (``project_with_leaf_weights``); the zero rows bring the product's
    width to a multiple of 8 for the half-precision kernels, and as no output reads them their
    gradient is 0 and they stay 0. ``leaf_weight`` and ``leaf_bias`` are views of their rows.
    """

    def __init__(self, embed_dim: int, num_heads: int, dropout: float = 0.0,
                 hier_embed_rows: Optional[int] = 100, kdim: Optional[int] = None,
                 conventions: AccumulationConventions = PAPER,
                 packed: Sequence[str] = INPUT_PROJECTIONS):
        super().__init__(embed_dim, num_heads, dropout, kdim, packed)
        kdim = kdim or embed_dim
        self.conventions = conventions
        head_weights = conventions.head_leaf_weights
        groups = num_heads if head_weights else 1
        padding = -groups % 8
        start = self.in_proj_weight.size(0)
        self.leaf_rows = slice(start, start + groups)  # u_s (encoder) or u_c (decoder), or U
        self.in_proj_sizes = [embed_dim] * len(self.packed) + [groups, padding]
        self.in_proj_weight = nn.Parameter(torch.cat([
            self.in_proj_weight.detach(), self.in_proj_weight.new_zeros(groups + padding, kdim)]))
        if head_weights:
            self.in_proj_bias = nn.Parameter(torch.cat([
                self.in_proj_bias.detach(), self.in_proj_bias.new_zeros(groups + padding)]))
            self.leaf_bias_padding = None
        else:  # the paper's u has no bias: zeros stand in for it, and for the zero rows'
            self.register_buffer("leaf_bias_padding", torch.zeros(groups + padding),
                                 persistent=False)
        self.hierarchical_embedding = (
            HierarchicalEmbedding(hier_embed_rows, self.head_dim,
                                  released=conventions.released_embedding_init)
            if hier_embed_rows else None
        )
        self.reset_parameters()

    def reset_parameters(self):
        # As fairseq's MultiheadAttention: scaled Xavier for the input projections.
        for proj in (self.q_proj, self.k_proj, self.v_proj):
            nn.init.xavier_uniform_(proj.weight, gain=1 / math.sqrt(2))
        nn.init.xavier_uniform_(self.out_proj.weight)
        nn.init.constant_(self.out_proj.bias, 0.0)
        # drawn as a C (x H) tensor, the shape u has in the paper's w = L u
        u = torch.empty_like(self.leaf_weight)
        nn.init.normal_(u, std=u.size(0) ** -0.5)
        with torch.no_grad():
            self.leaf_weight.copy_(u)

    @property
    def zero_row_parameters(self) -> int:
        """Entries of ``in_proj_weight`` and ``in_proj_bias`` in the zero rows that align u's
        product: counted among fairseq's parameters, never trained."""
        padding = self.in_proj_sizes[-1]
        return padding * self.in_proj_weight.size(1) + (
            padding if self.leaf_bias_padding is None else 0)

    @property
    def leaf_weight(self) -> Tensor:
        """u (C), or U (C x H) under convention (c): a view of its rows of ``in_proj_weight``."""
        rows = self.in_proj_weight[self.leaf_rows]
        return rows.t() if self.conventions.head_leaf_weights else rows[0]

    @property
    def leaf_bias(self) -> Optional[Tensor]:
        """b of convention (c) (H, a view of ``in_proj_bias``); None for the paper's u."""
        return self.in_proj_bias[self.leaf_rows] if self.conventions.head_leaf_weights else None

    def _load_from_state_dict(self, state_dict, prefix, *args, **kwargs):
        """Checkpoints made before the input projections and u were packed hold them apart
        (``q_proj.weight``, ..., ``leaf_weight``, ``leaf_bias``). Those of another convention
        are left as they are, for the strict load to name their keys."""
        u = state_dict.get(prefix + "leaf_weight")
        head_weights = self.conventions.head_leaf_weights
        if (prefix + "in_proj_weight" not in state_dict and u is not None
                and u.dim() == (2 if head_weights else 1)):
            weights = [state_dict.pop(f"{prefix}{name}.weight") for name in self.packed]
            biases = [state_dict.pop(f"{prefix}{name}.bias") for name in self.packed]
            rows = state_dict.pop(prefix + "leaf_weight")
            rows = rows.t() if head_weights else rows.unsqueeze(0)
            padding = self.in_proj_sizes[-1]
            state_dict[prefix + "in_proj_weight"] = torch.cat(
                [*weights, rows, rows.new_zeros(padding, rows.size(1))])
            if head_weights:
                bias = state_dict.pop(prefix + "leaf_bias")
                biases += [bias, bias.new_zeros(padding)]
            state_dict[prefix + "in_proj_bias"] = torch.cat(biases)
        super()._load_from_state_dict(state_dict, prefix, *args, **kwargs)

    def accumulation_rows(self) -> Optional[Tuple[int, int]]:
        """Rows of E^v and E^h, or None for -HierEmb: what the accumulation plan is built for."""
        embedding = self.hierarchical_embedding
        return None if embedding is None else embedding.rows

    @property
    def leaf_weight_groups(self) -> int:
        """G: 1 w for every head (the paper), or one per head (convention (c))."""
        return self.leaf_rows.stop - self.leaf_rows.start

    def leaf_weights(self, leaf_states: Tensor) -> Tensor:
        """w of Eq. 7 (N x B x C -> N x B): w = L u.

        With convention (c) of the authors' released code, one w per head (N x B x H):
        w = L U + b, U of C x heads and a bias b: their ``dwstack_linear``, a linear map with a
        bias from the C leaf features to the heads (src/modules/nstack_merge_tree_attention.py).
        """
        weights = leaf_states @ self.leaf_weight.to(leaf_states.dtype)
        if self.leaf_bias is not None:
            weights = weights + self.leaf_bias.to(weights.dtype)
        return weights

    def input_biases(self) -> Tuple[Tensor, ...]:
        """The bias of ``in_proj_weight``'s product, in parts to concatenate: the paper's u has
        no bias parameter (zeros stand in for it)."""
        if self.leaf_bias_padding is None:
            return (self.in_proj_bias,)
        return self.in_proj_bias, self.leaf_bias_padding

    def project_with_leaf_weights(self, x: Tensor) -> Tuple[Tensor, ...]:
        """The packed projections of x and the ``leaf_weights`` of every row of x, in one
        product: the projections' outputs (T x B x C each, in ``packed`` order), then T x B x G
        w (those of nodes too: they are never read)."""
        biases = self.input_biases()
        bias = biases[0] if len(biases) == 1 else torch.cat(biases)
        *outputs, weights, _ = F.linear(x, self.in_proj_weight, bias).split(
            self.in_proj_sizes, dim=-1)
        return (*outputs, weights)

    def accumulated_node_values(self, tree: SourceTree, values: Tensor,
                                weights: Tensor) -> Tensor:
        """N-bar' of Eq. 10 (Eq. 8 for -HierEmb): the node values of Eq. 16 (self-attention,
        w from u_s); those of Eq. 23 (cross-attention, from u_c) are ``source_memories``'s.

        Args:
            values: T x B x C, the projected values [L W^V; N W^V] of the T = N + M units;
            weights: T x B (x G), w of Eq. 7 (``leaf_weights``) of every unit (the nodes' are
                never read).
        Returns:
            M x B x C (a view of B x M x C), in the dtype of the values.
        """
        weights = weights.transpose(0, 1)
        weights = weights.unsqueeze(-1) if weights.dim() == 2 else weights  # B x T x G
        plan = tree.accumulation_plan(self.accumulation_rows(), values.dtype, self.conventions)
        embedding = self.hierarchical_embedding
        table = None if embedding is None else embedding.weight
        return accumulate_values(plan, values.transpose(0, 1), weights, table).transpose(0, 1)


class TreeSelfAttention(TreeAttentionBase):
    """Encoder self-attention over [leaves; nodes] (Section 4.3, Eqs. 11-20).

    Leaves attend to leaves; nodes attend to nodes and leaves, where the values of node keys are
    the hierarchically accumulated N-bar' (with u_s); subtree masking restricts a node to its
    own subtree. Called by fairseq's encoder layer as ``self_attn(query=x, key=x, value=x,
    key_padding_mask=tree, ...)``: the layer hands its padding mask to self-attention untouched,
    and for tree attention the ``SourceTree`` takes that place, as it says which keys each query
    may see.

    Leaf queries and node queries are one attention over [leaves; nodes], Eqs. 17 and 18 at
    once: the subtree mask mu of Eq. 11 gives each query its keys, and it is additive, in the
    compute dtype, built once per batch (``SourceTree``). One kernel for all queries launches
    half as much as a kernel for each (the leaves' rows score the node keys they may not see).
    """

    def __init__(self, *args, subtree_masking: bool = True, **kwargs):
        super().__init__(*args, **kwargs)
        self.subtree_masking = subtree_masking

    def prepare(self, tree: SourceTree, dtype) -> SourceTree:
        """Build the batch's plan and masks before the layers run (see ``SourceTree.prepare``)."""
        return tree.prepare(self.accumulation_rows(), dtype, self.subtree_masking,
                            self.conventions)

    def forward(self, query: Tensor, key: Tensor, value: Tensor, key_padding_mask: SourceTree,
                need_weights: bool = False, attn_mask: Optional[Tensor] = None,
                need_head_weights: bool = False):
        """
        Args:
            query (= key = value): (N + M) x B x C, the leaves then the nodes.
            key_padding_mask: the ``SourceTree`` of the batch.
        Returns:
            (N + M) x B x C, and with ``need_weights`` the attention of every query over the keys
            [leaves; nodes]: B x (N + M) x (N + M) averaged over heads, or
            H x B x (N + M) x (N + M) with ``need_head_weights`` (fairseq's shapes). A leaf
            query's row is its Eq. 18 attention over the leaf keys, 0 on the node keys; a node
            query's row its Eq. 17 attention over the leaves of its span and the nodes of its
            subtree (over every real key without subtree masking). None when not asked.
        """
        if attn_mask is not None:
            raise ValueError("tree self-attention takes its mask from the tree, not attn_mask")
        need_weights = need_weights or need_head_weights
        tree, n = key_padding_mask, key_padding_mask.num_leaves
        q, k, values, weights = self.project_with_leaf_weights(query)  # T x B x C, T x B x G
        node_values = self.accumulated_node_values(tree, values, weights)
        v = torch.cat([values[:n], node_values])  # [L-bar; N-bar']
        context, weights = self.unit_attention(q, self.split_heads(k), self.split_heads(v), tree,
                                               need_weights)
        if weights is not None:
            weights = returned_weights(weights, need_head_weights)
        return self.out_proj(context.flatten(2)), weights

    def unit_attention(self, queries: Tensor, keys: Tensor, values: Tensor, tree: SourceTree,
                       need_weights: bool):
        """Eqs. 17 and 18, the attention of the nodes and of the leaves, in one:
        Att_N = softmax(mu([A_NN; A_NL])) [N-bar'; L-bar] and
        Att_L = softmax(mu([A_LN; A_LL])) [N-bar'; L-bar].

        A_NL = (N W^Q)(L W^K)^T / sqrt(d), A_NN = (N W^Q)(N W^K)^T / sqrt(d), A_LL and A_LN alike
        (Eqs. 12-15), masked by mu (Eq. 11): a leaf query sees the real leaves alone (mu blocks
        every node key of a leaf); a node query the leaves of its span and the nodes of its
        subtree, itself included (with the -SubMask ablation every real key; leaves still see
        leaves alone). Keys and values are in the order [leaves; nodes], the paper's
        [nodes; leaves] swapped.

        Args:
            queries: T x B x C, [L W^Q; N W^Q]; keys, values: B x H x T x D, [L W^K; N W^K] and
                [L-bar; N-bar'] (N-bar' of Eq. 16, ``accumulated_node_values``).
        Returns:
            T x B x H x D, and with ``need_weights`` the B x H x T x T probabilities.
        """
        mask = tree.unit_query_mask(self.subtree_masking, queries.dtype)
        return self.attend(queries, keys, values, mask, need_weights)


@with_incremental_state
class TreeCrossAttention(TreeAttentionBase):
    """Decoder attention over the source tree (Section 4.4, Eqs. 21-24).

    Target queries attend to keys over [leaves; nodes] of the encoder output (over the nodes
    only with ``nodes_only``, an ablation); node values are accumulated with this layer's own u_c
    (and hierarchical embeddings); no subtree mask. Called
    by fairseq's decoder layer as ``encoder_attn(query=x, key=tree, value=tree, ...)``, where
    ``tree`` is the ``SourceTree`` holding the encoder's leaf and node states.

    In incremental decoding the projected keys, the values (accumulation included) and the key
    mask are computed once per source sentence and cached: with a beam size set
    (``set_beam_size``, as for fairseq's encoder-decoder attention), once for the beam copies of a
    sentence together.
    """

    def __init__(self, *args, nodes_only: bool = False, **kwargs):
        # the queries are the target's: W^Q reads them alone
        super().__init__(*args, packed=("k_proj", "v_proj"), **kwargs)
        self.beam_size = 1
        self.nodes_only = nodes_only  # --cross-attention-nodes-only: leaf keys masked

    def set_beam_size(self, beam_size: int):
        """Beam search's copies per sentence: consecutive batch rows that share one memory."""
        self.beam_size = beam_size

    def forward(self, query: Tensor, key: Optional[SourceTree], value: Optional[SourceTree] = None,
                key_padding_mask: Optional[Tensor] = None,
                incremental_state: Optional[Dict[str, Dict[str, Optional[Tensor]]]] = None,
                static_kv: bool = True, need_weights: bool = False, need_head_weights: bool = False):
        """
        Args:
            query: T x B x C target states.
            key, value: the ``SourceTree`` with encoder states (unused once cached).
        Returns:
            T x B x C, and with ``need_weights`` the attention (Eq. 24) over the source keys
            [leaves; nodes], N + M of them: B x T x (N + M) averaged over heads, or
            H x B x T x (N + M) with ``need_head_weights`` (fairseq's shapes); None when not
            asked. ``TreeDecoderLayer`` keeps the first N columns, the leaves, for alignments.
        """
        need_weights = need_weights or need_head_weights
        memory = self._get_input_buffer(incremental_state)
        if "prev_key" not in memory:
            memory = key.cross_memories.get(self)  # made for every layer at once
            if memory is None:
                copies = self.memory_copies(key, incremental_state is not None)
                memory = {**self.source_memory(key.sentences(copies)), "copies": copies}
            if incremental_state is not None:
                self._set_input_buffer(incremental_state, memory)
        context, weights = self.target_attention(query, memory, need_weights)
        if weights is not None:
            weights = returned_weights(weights, need_head_weights)
        return self.out_proj(context.flatten(2)), weights

    def source_memory(self, tree: SourceTree) -> Dict[str, Tensor]:
        """The source side of Eqs. 21-23: keys [L W^K; N W^K] and values [L-bar; N-bar']
        (B x H x (N+M) x D each, N-bar' of Eq. 23, accumulated with u_c) over [leaves; nodes],
        and the additive key mask (B x 1 x 1 x (N+M)) of the source trees
        (``source_memories`` of this layer alone)."""
        return source_memories([self], tree)[0]

    def accumulation_key(self) -> tuple:
        """What decides how this layer's memory is made: layers with the same key make theirs
        together (``shared_source_memories``)."""
        return (self.accumulation_rows(), self.conventions, self.nodes_only,
                self.leaf_weight_groups, self.embed_dim, self.num_heads)

    def has_source_memory(self, incremental_state) -> bool:
        """Whether the source memory is cached already (in incremental decoding, after the
        first step)."""
        return "prev_key" in self._get_input_buffer(incremental_state)

    def memory_copies(self, tree: SourceTree, incremental: bool) -> int:
        """The beam copies of each sentence among the rows of ``tree``: only beam search
        (incremental decoding) has them; training never does."""
        copies = self.beam_size if incremental else 1
        return copies if tree.spans.size(0) % copies == 0 else 1

    def target_attention(self, query: Tensor, memory: Dict[str, Tensor], need_weights: bool):
        """Eq. 24, the target queries' attention: Att_Q = softmax([A_QN; A_QL]) [N-bar'; L-bar].

        A_QN = (Q W^Q)(N W^K)^T / sqrt(d) and A_QL = (Q W^Q)(L W^K)^T / sqrt(d) (Eqs. 21-22)
        over the real keys of ``memory`` (``source_memory``), in the order [leaves; nodes]; no
        subtree mask, as the queries are not in the source tree.

        Args:
            query: T x B' x C target states (B' = c B with c beam copies of each sentence).
        Returns:
            T x B' x H x D, and with ``need_weights`` the B' x H x T x (N + M) probabilities.
        """
        return self.attend(self.q_proj(query), memory["prev_key"], memory["prev_value"],
                           memory["key_mask"], need_weights)

    def reorder_incremental_state(self, incremental_state, new_order: Tensor):
        """Follow beam search: reorder the cached source memory along the batch. A reorder that
        keeps the batch size only moves rows among the beam copies of one sentence, whose memory
        is the same, so it is left as it is (fairseq's MultiheadAttention relies on this too);
        when finished sentences leave the batch, the remaining sentences are selected."""
        memory = self._get_input_buffer(incremental_state)
        if "prev_key" not in memory:
            return incremental_state
        copies = memory["copies"]
        if memory["prev_key"].size(0) * copies != new_order.size(0):
            order = new_order.view(-1, copies)[:, 0] // copies
            for name in ("prev_key", "prev_value", "key_mask"):
                memory[name] = memory[name].index_select(0, order)
            self._set_input_buffer(incremental_state, memory)
        return incremental_state

    def _get_input_buffer(self, incremental_state) -> Dict[str, Tensor]:
        if incremental_state is None:
            return {}
        return self.get_incremental_state(incremental_state, "attn_state") or {}

    def _set_input_buffer(self, incremental_state, buffer: Dict[str, Tensor]):
        return self.set_incremental_state(incremental_state, "attn_state", buffer)


def shared_source_memories(attentions: Sequence[TreeCrossAttention], tree: SourceTree,
                           incremental: bool) -> Dict[TreeCrossAttention, Dict[str, Tensor]]:
    """The source memories of the decoder's cross-attentions, made together for the layers
    that accumulate as the first does (``accumulation_key``; the others, not returned, make
    their own): for each, its ``source_memory`` of the sentences of ``tree`` (one row a
    sentence where the rows are beam copies, ``memory_copies``) and that count of copies."""
    first = attentions[0]
    same = [a for a in attentions if a.accumulation_key() == first.accumulation_key()]
    if len(same) < 2:
        return {}
    copies = first.memory_copies(tree, incremental)
    memories = source_memories(same, tree.sentences(copies))
    return {a: {**memory, "copies": copies} for a, memory in zip(same, memories)}


def source_memories(attentions: Sequence[TreeCrossAttention],
                    tree: SourceTree) -> List[Dict[str, Tensor]]:
    """``TreeCrossAttention.source_memory`` of S layers with one ``accumulation_key``: they
    read the same source states, so their key and value projections and leaf weights are one
    matrix product, and their accumulations one (``accumulate_values`` with each layer's w and
    hierarchical embeddings as groups of their own). The same values as S calls of one layer,
    in a fraction of the operators (a GPU's host launches each)."""
    first = attentions[0]
    count, width, groups = len(attentions), first.embed_dim, first.leaf_weight_groups
    states, n = tree.states, tree.num_leaves  # T x B x C
    weight = torch.cat([a.in_proj_weight for a in attentions])  # S of [W^K; W^V; u^T; 0]
    bias = torch.cat([b for a in attentions for b in a.input_biases()])
    length, batch = states.shape[:2]
    keys, values, weights, _ = F.linear(states, weight, bias).view(length, batch, count, -1) \
        .split(first.in_proj_sizes, dim=-1)  # T x B x S x (C, C, G, zero rows)
    plan = tree.accumulation_plan(first.accumulation_rows(), values.dtype, first.conventions)
    tables = None
    if first.hierarchical_embedding is not None:
        tables = torch.stack([a.hierarchical_embedding.weight for a in attentions])
    node_values = accumulate_values(  # the S layers' values and w as groups of their own
        plan, values.transpose(0, 1).reshape(batch, length, count * width),
        weights.transpose(0, 1).reshape(batch, length, count * groups), tables)
    values = torch.cat([values[:n], node_values.transpose(0, 1).view(-1, batch, count, width)])

    def by_layer(x: Tensor):  # T x B x S x C -> S of B x H x T x D ([L-bar; N-bar'] for values)
        return x.view(length, batch, count, first.num_heads, first.head_dim) \
            .permute(2, 1, 3, 0, 4).unbind(0)

    mask = tree.memory_mask(values.dtype, leaves=not first.nodes_only)
    return [{"prev_key": k, "prev_value": v, "key_mask": mask}
            for k, v in zip(by_layer(keys), by_layer(values))]
