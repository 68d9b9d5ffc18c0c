"""A synthetic tree-transduction task: does reading the source tree help translation?

Source: English-like sentences sampled from a small PCFG (``GRAMMAR``, ``LEXICON``), with their
gold constituency trees. Target: the sentence translated word by word into an invented
verb-final (Japanese-like) language and reordered by the tree (``transduce``): objects before
their verbs, postpositions, noun modifiers before their nouns, adverbial phrases after the verb.
A prepositional phrase attaches to a noun phrase or to a verb phrase at random, so "saw the dog
with a stick" has two trees, and their targets differ in word order: the PP goes before the
object with a genitive particle ``no`` when it modifies the noun ("stick with no dog o saw"),
after the verb when it modifies the verb phrase ("dog o saw stick with"). The tree carries what
the source words lack. About half of the sentences hold such a PP (``ambiguity``,
``corpus_stats``).

    python -m bench.tasks.synthetic_task --out data --train 20000 --valid 1000 --test 1000 --seed 1

writes the layout of the real recipes (``data-prep/prepare.py``) under ``--out``/``--pair``:

    trees/{split}.src         gold bracketed trees, POS preterminals included
    tok/{split}.{src,tgt}     source and target tokens (no BPE: the vocabulary is small)
    ref/test.{src,tgt}        the test text again (there is no detokenisation here)
    data-bin/                 fairseq-tree-preprocess, separate src and tgt dictionaries
    recipe.json               languages, sizes, and the generator's seed, grammar and statistics

Splits for one seed: test and valid are sampled first from their own random streams, so they
are the same whatever the training size, and training sentences are drawn from a third stream
skipping every source sentence already used; a smaller training set is therefore a prefix of a
larger one. Every source sentence occurs once in the whole data set (duplicates are dropped and
counted). Trees are ``fairseq_tree.trees.Tree``, written by its ``format_bracketed``.
"""

import argparse
import json
import random
import time
from dataclasses import dataclass
from pathlib import Path

from fairseq_tree.data.preprocess import preprocess_folder
from fairseq_tree.data.recipe import Recipe, TextSteps
from fairseq_tree.trees import Tree, format_bracketed
from fairseq_tree.trees import tree_leaves as leaves

SPLITS = ("train", "valid", "test")
# Sampled in this order, each split skipping the source sentences of the ones before it.
SAMPLING_ORDER = ("test", "valid", "train")

LEXICON = {
    "DT": ("the", "a", "this", "every", "some"),
    "NN": ("man", "woman", "child", "dog", "cat", "bird", "horse", "farmer", "teacher", "doctor",
           "student", "king", "queen", "soldier", "sailor", "baker", "girl", "boy", "friend",
           "neighbor", "telescope", "stick", "book", "letter", "hat", "coat", "box", "table",
           "chair", "window", "door", "garden", "house", "river", "bridge", "road", "park",
           "tree", "flower", "apple", "cake", "ball", "boat", "car", "train", "city", "village",
           "school", "market", "hill", "forest", "mountain", "lamp", "key", "bag", "cup",
           "picture", "map", "song", "ring"),
    # VBD: the transitive verbs first, then the intransitive ones (see VERB_ARITY).
    "VBD": ("saw", "liked", "found", "chased", "watched", "followed", "visited", "painted",
            "carried", "pushed", "pulled", "helped", "met", "called", "heard", "kicked", "bought",
            "sold", "opened", "closed", "cleaned", "built", "broke", "dropped", "caught", "held",
            "touched", "loved", "noticed", "admired",
            "slept", "smiled", "laughed", "arrived", "left", "waited", "danced", "sang", "cried",
            "ran", "walked", "fell", "jumped", "swam", "shouted"),
    "JJ": ("old", "young", "big", "small", "red", "blue", "green", "happy", "sad", "tall",
           "short", "quiet", "loud", "tired", "clever", "strange", "famous", "heavy", "bright",
           "dark"),
    "IN": ("with", "near", "behind", "under", "beside", "from", "in", "on", "at", "without"),
    "WDT": ("that",),
}
TRANSITIVE = 30  # the first 30 VBD words take an object (VP -> VBD NP), the others do not

# label -> ((probability, right-hand side), ...). Rules whose right-hand side holds their own
# label are recursive and are not used at or below MAX_DEPTH. Tuned on 20k sentences: 82% have
# 6-30 tokens (mean 11.7, 15% have 3-5), and about half hold a PP that could attach to either
# a noun phrase or a verb phrase.
GRAMMAR = {
    "S": ((1.0, ("NP", "VP")),),
    "NP": ((0.40, ("DT", "NN")), (0.35, ("DT", "JJ", "NN")), (0.16, ("NP", "PP")),
           (0.09, ("NP", "SBAR"))),
    "VP": ((0.58, ("VBD", "NP")), (0.08, ("VBD",)), (0.34, ("VP", "PP"))),
    "PP": ((1.0, ("IN", "NP")),),
    "SBAR": ((1.0, ("WDT", "VP")),),
}
MAX_DEPTH = 7  # tree levels below S; phrases this deep use non-recursive rules only

PARTICLES = {"subject": "ga", "object": "o", "genitive": "no"}
# (label, child labels) -> target order: an int is the translation of that child, a str a particle.
TRANSDUCTION = {
    ("S", ("NP", "VP")): (0, PARTICLES["subject"], 1),
    ("NP", ("DT", "NN")): (0, 1),
    ("NP", ("DT", "JJ", "NN")): (0, 1, 2),
    ("NP", ("NP", "PP")): (1, PARTICLES["genitive"], 0),
    ("NP", ("NP", "SBAR")): (1, 0),
    ("SBAR", ("WDT", "VP")): (1,),
    ("VP", ("VBD",)): (0,),
    ("VP", ("VBD", "NP")): (1, PARTICLES["object"], 0),
    ("VP", ("VP", "PP")): (0, 1),
    ("PP", ("IN", "NP")): (1, 0),
}
# Modifier label -> labels of the phrases it may attach to (X -> X modifier).
HOSTS = {"PP": ("NP", "VP"), "SBAR": ("NP",)}


def is_preterminal(tree) -> bool:
    return len(tree.children) == 1 and isinstance(tree.children[0], str)


def _invent_target_words() -> dict[str, str]:
    """Source word -> invented target word: CV syllables, two for determiners and prepositions,
    three for content words; a fixed draw, distinct, never a source word or a particle."""
    syllables = [c + v for c in "kstnhmrgbdpz" for v in "aiueo"]
    taken = {word for words in LEXICON.values() for word in words} | set(PARTICLES.values())
    rng = random.Random("fairseq-tree synthetic lexicon")
    mapping, used = {}, set()
    for tag, words in LEXICON.items():
        length = 2 if tag in ("DT", "IN", "WDT") else 3
        for word in words:
            candidate = "".join(rng.choice(syllables) for _ in range(length))
            while candidate in taken or candidate in used:
                candidate = "".join(rng.choice(syllables) for _ in range(length))
            mapping[word] = candidate
            used.add(candidate)
    return mapping


TARGET_WORDS = _invent_target_words()


def _words(tag: str, rule: tuple) -> tuple:
    """The words a preterminal may take: only transitive verbs before an object."""
    if tag != "VBD":
        return LEXICON[tag]
    return LEXICON["VBD"][:TRANSITIVE] if len(rule) == 2 else LEXICON["VBD"][TRANSITIVE:]


def sample_tree(rng: random.Random, label: str = "S", depth: int = 0,
                max_depth: int = MAX_DEPTH) -> Tree:
    """A tree sampled top-down from ``GRAMMAR``; at ``max_depth`` recursive rules are dropped."""
    rules = GRAMMAR[label]
    if depth >= max_depth:
        rules = tuple(rule for rule in rules if label not in rule[1])
    rhs = rng.choices([r for _, r in rules], weights=[p for p, _ in rules])[0]
    children = []
    for child in rhs:
        if child in LEXICON:
            children.append(Tree(child, [rng.choice(_words(child, rhs))]))
        else:
            children.append(sample_tree(rng, child, depth + 1, max_depth))
    return Tree(label, children)


def transduce(tree) -> list[str]:
    """Target tokens of a source tree: verb-final order, words replaced by ``TARGET_WORDS``.

    Rules (``TRANSDUCTION``; translations of the children in the order given):

    * S -> NP VP      => NP ga VP          (subject particle)
    * VP -> VBD NP    => NP o VBD          (object, object particle, verb last)
    * VP -> VBD       => VBD
    * VP -> VP PP     => VP PP             (adverbial PP after the verb phrase)
    * PP -> IN NP     => NP IN             (postposition)
    * NP -> NP PP     => PP no NP          (PP modifier before the noun, genitive particle)
    * NP -> NP SBAR   => SBAR NP           (relative clause before the noun)
    * SBAR -> WDT VP  => VP                (complementizer dropped)
    * NP -> DT NN, NP -> DT JJ NN          keep their order (adjectives before nouns)

    Raises ValueError for a phrase that no rule covers.
    """
    if is_preterminal(tree):
        return [TARGET_WORDS[tree.children[0]]]
    key = (tree.label, tuple(child.label for child in tree.children))
    if key not in TRANSDUCTION:
        raise ValueError(f"no transduction rule for {key[0]} -> {' '.join(key[1])}")
    out = []
    for item in TRANSDUCTION[key]:
        out.extend([item] if isinstance(item, str) else transduce(tree.children[item]))
    return out


def _phrases(tree: Tree, path: tuple = (), start: int = 0) -> list:
    """(path, phrase, start, end) of every non-preterminal node, ``end`` exclusive, post-order
    (so the last entry is ``tree`` itself)."""
    found, end = [], start
    for i, child in enumerate(tree.children):
        if is_preterminal(child):
            end += 1
        else:
            found += _phrases(child, path + (i,), end)
            end = found[-1][3]
    found.append((path, tree, start, end))
    return found


def _replace(tree: Tree, path: tuple, new: Tree) -> Tree:
    if not path:
        return new
    children = list(tree.children)
    children[path[0]] = _replace(children[path[0]], path[1:], new)
    return Tree(tree.label, children)


def reattachments(tree: Tree):
    """Every other tree with the same words obtained by moving one modifier (a PP or SBAR in
    ``X -> X modifier``) to another phrase that may host it and ends where the modifier starts.

    Yields (modifier label, old host label, new host label, tree).
    """
    for path, node, _, end in _phrases(tree):
        if len(node.children) != 2 or node.children[0].label != node.label:
            continue
        host, modifier = node.children
        if modifier.label not in HOSTS:
            continue
        detached = _replace(tree, path, host)
        where = end - len(leaves(modifier))
        for other_path, other, _, other_end in _phrases(detached):
            if other_end == where and other.label in HOSTS[modifier.label] and other_path != path:
                moved = _replace(detached, other_path, Tree(other.label, [other, modifier]))
                yield modifier.label, host.label, other.label, moved


def ambiguity(tree: Tree) -> dict[str, bool]:
    """Whether the words of ``tree`` have another tree (one modifier moved): ``any``; one whose
    PP moves between a noun phrase and a verb phrase: ``pp_np_vp``; one with another target:
    ``target``."""
    flags = {"any": False, "pp_np_vp": False, "target": False}
    target = transduce(tree)
    for modifier, old, new, moved in reattachments(tree):
        flags["any"] = True
        flags["pp_np_vp"] |= modifier == "PP" and old != new
        flags["target"] = flags["target"] or transduce(moved) != target
    return flags


def count_phrases(tree: Tree) -> int:
    """Nonterminal nodes of the normal form (this grammar has no unary chains)."""
    return len(_phrases(tree))


@dataclass(frozen=True)
class Example:
    tree: Tree
    source: tuple[str, ...]
    target: tuple[str, ...]


def make_example(tree: Tree) -> Example:
    return Example(tree, tuple(leaves(tree)), tuple(transduce(tree)))


def sample_unique(rng: random.Random, count: int, seen: set) -> tuple[list[Example], int]:
    """``count`` examples whose source sentences are not in ``seen`` (which they are added to);
    also returns how many sampled sentences were dropped as duplicates."""
    examples, dropped = [], 0
    while len(examples) < count:
        example = make_example(sample_tree(rng))
        if example.source in seen:
            dropped += 1
            if dropped > 10 * count + 1000:
                raise RuntimeError(f"the grammar gives too few distinct sentences for {count}")
            continue
        seen.add(example.source)
        examples.append(example)
    return examples, dropped


def generate_splits(seed: int, sizes: dict[str, int]) -> tuple[dict, dict]:
    """{split: examples} and {split: duplicates dropped}, deterministic for ``seed``: each split
    has its own random stream, sampled in SAMPLING_ORDER (see the module docstring)."""
    seen: set = set()
    splits, dropped = {}, {}
    for split in SAMPLING_ORDER:
        rng = random.Random(f"fairseq-tree synthetic {seed} {split}")
        splits[split], dropped[split] = sample_unique(rng, sizes[split], seen)
    return splits, dropped


def corpus_stats(examples: list[Example]) -> dict:
    """Lengths, nodes per sentence and ambiguity fractions (see ``ambiguity``) of a sample."""
    n = max(len(examples), 1)
    lengths = [len(e.source) for e in examples] or [0]
    flags = [ambiguity(e.tree) for e in examples]
    return {
        "sentences": len(examples),
        "source_tokens": {"mean": sum(lengths) / n, "min": min(lengths), "max": max(lengths)},
        "fraction_6_to_30_tokens": sum(6 <= k <= 30 for k in lengths) / n,
        "target_tokens_mean": sum(len(e.target) for e in examples) / n,
        "nodes_mean": sum(count_phrases(e.tree) for e in examples) / n,
        "fraction_ambiguous": {key: sum(f[key] for f in flags) / n
                               for key in ("any", "pp_np_vp", "target")},
    }


def write_lines(path: Path, lines):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")


def write_text(pair_dir: Path, splits: dict[str, list[Example]]):
    """trees/, tok/ and ref/ (see the module docstring)."""
    for split in SPLITS:
        examples = splits[split]
        write_lines(pair_dir / "trees" / f"{split}.src", (format_bracketed(e.tree) for e in examples))
        write_lines(pair_dir / "tok" / f"{split}.src", (" ".join(e.source) for e in examples))
        write_lines(pair_dir / "tok" / f"{split}.tgt", (" ".join(e.target) for e in examples))
    for side in ("src", "tgt"):
        write_lines(pair_dir / "ref" / f"test.{side}",
                    (pair_dir / "tok" / f"test.{side}").read_text(encoding="utf-8").splitlines())


def grammar_description() -> dict:
    return {"rules": {label: [[p, " ".join(rhs)] for p, rhs in rules]
                      for label, rules in GRAMMAR.items()},
            "max_depth": MAX_DEPTH,
            "lexicon": {tag: len(words) for tag, words in LEXICON.items()},
            "transitive_verbs": TRANSITIVE, "particles": PARTICLES}


def write_dataset(out: Path, sizes: dict[str, int], seed: int, pair: str = "synthetic",
                  binarise: bool = True, workers: int = 1) -> dict:
    """Generate, write and binarise the data set of ``pair`` under ``out``; return recipe.json."""
    pair_dir = Path(out) / pair
    splits, dropped = generate_splits(seed, sizes)
    write_text(pair_dir, splits)
    if binarise:
        preprocess_folder(pair_dir, workers=workers)
    recipe = Recipe("translation", TextSteps(tokenize="none"), src="src", tgt="tgt", details={
        "pair": pair, "moses_lang": {"src": "en", "tgt": "en"},
        "sizes": {split: len(splits[split]) for split in SPLITS},
        "generator": {
            "seed": seed, "sizes": dict(sizes), "sampling_order": list(SAMPLING_ORDER),
            "grammar": grammar_description(), "duplicates_dropped": dropped,
            "stats": {split: corpus_stats(splits[split]) for split in SPLITS},
        },
    })
    recipe.write(pair_dir)
    return recipe.to_json()


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", required=True, type=Path, help="root folder (like $DATA)")
    parser.add_argument("--pair", default="synthetic", help="folder name under --out")
    parser.add_argument("--train", type=int, required=True)
    parser.add_argument("--valid", type=int, required=True)
    parser.add_argument("--test", type=int, required=True)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--workers", type=int, default=1, help="binarisation workers")
    parser.add_argument("--no-binarize", action="store_true", help="text files only")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    recipe = write_dataset(args.out, {"train": args.train, "valid": args.valid,
                                      "test": args.test}, args.seed, args.pair,
                           binarise=not args.no_binarize, workers=args.workers)
    print(json.dumps(recipe["generator"]["stats"], indent=2))
    print(f"wrote {args.out / args.pair} in {time.perf_counter() - started:.1f} s")
    return recipe


if __name__ == "__main__":
    main()
