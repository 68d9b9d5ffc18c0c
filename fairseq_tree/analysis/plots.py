"""The attention analysis as pictures (PNG, matplotlib): one sentence's source tree over its
cross-attention, and the node share per layer."""

from typing import List


def key_columns(spans: List[List[int]], num_leaves: int) -> List[int]:
    """The keys [leaves; nodes] ordered left to right for drawing: a node stands at the middle
    of its span, after the words there and above its children."""
    position = [(j, 0, 0) for j in range(num_leaves)]
    for i, (start, end) in enumerate(spans):
        position.append(((start + end - 1) / 2, 1, start - end))
    return sorted(range(len(position)), key=position.__getitem__)


def plot_sentence(picture: dict, path: str):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    leaves, spans = picture["leaves"], picture["spans"]
    n = len(leaves)
    real = [k for k, (s, e) in enumerate(spans) if s < e]
    keys = [c for c in key_columns(spans, n) if c < n or (c - n) in real]
    column = {key: x for x, key in enumerate(keys)}
    height = {}
    for i in sorted(real, key=lambda i: spans[i][1] - spans[i][0]):
        s, e = spans[i]
        inner = [k for k in real if k != i and s <= spans[k][0] and spans[k][1] <= e]
        height[i] = 1 + max((height[k] for k in inner), default=0)
    attention = picture["attention"][:, keys].numpy()
    fig, (top, bottom) = plt.subplots(
        2, 1, figsize=(max(6, 0.45 * len(keys)), 3 + 0.3 * len(picture["target"])),
        gridspec_kw={"height_ratios": [1.5, max(1, len(picture["target"]) / 6)]}, sharex=True,
        layout="constrained")
    for i in real:  # edges from each node to its children (the largest spans inside it)
        s, e = spans[i]
        inner = [k for k in real if k != i and s <= spans[k][0] and spans[k][1] <= e]
        children = [k for k in inner if not any(
            o != k and spans[o][0] <= spans[k][0] and spans[k][1] <= spans[o][1] for o in inner)]
        covered = {j for k in children for j in range(*spans[k])}
        ends = [(column[n + k], height[k]) for k in children]
        ends += [(column[j], 0) for j in range(s, e) if j not in covered]
        for x, y in ends:
            top.plot([column[n + i], x], [height[i], y], color="0.6", linewidth=0.8)
    for key in keys:
        x = column[key]
        if key < n:
            top.text(x, 0, leaves[key], ha="center", va="top", rotation=90, fontsize=8)
        else:
            top.text(x, height[key - n], picture["labels"][key - n], ha="center", va="center",
                     fontsize=8, bbox={"boxstyle": "round", "fc": "white", "ec": "0.5"})
    top.set_ylim(-2.5, max(height.values(), default=0) + 0.8)
    top.axis("off")
    image = bottom.imshow(attention, aspect="auto", cmap="viridis", interpolation="nearest")
    bottom.set_yticks(range(len(picture["target"])), picture["target"], fontsize=8)
    bottom.set_xticks(range(len(keys)), [leaves[k] if k < n else picture["labels"][k - n]
                                         for k in keys], rotation=90, fontsize=8)
    bottom.set_ylabel("target token")
    # beside both panels, so that the tree keeps the heat map's width and its columns
    fig.colorbar(image, ax=[top, bottom], fraction=0.03, label="attention")
    fig.suptitle("cross-attention over the source tree (words and nodes)")
    fig.savefig(path, dpi=120)
    plt.close(fig)


def plot_layers(result: dict, path: str):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axis = plt.subplots(figsize=(6, 3.5))
    width = 0.38
    for offset, kind, title in ((-width / 2, "decoder", "target -> source"),
                                (width / 2, "encoder", "source nodes -> source")):
        if result[kind] is None:
            continue
        rows = result[kind]["per_layer"]
        axis.bar([row["layer"] + offset for row in rows], [row["nodes"] for row in rows],
                 width, label=title)
    axis.axhline(result["constituents"]["nodes"], color="0.3", linestyle="--", linewidth=1,
                 label="nodes among constituents")
    layers = [row["layer"] for kind in ("decoder", "encoder") if result[kind]
              for row in result[kind]["per_layer"]]
    axis.set_xticks(sorted(set(layers)))
    axis.set_xlabel("layer")
    axis.set_ylabel("attention on nodes (%)")
    axis.set_ylim(0, 100)
    axis.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
