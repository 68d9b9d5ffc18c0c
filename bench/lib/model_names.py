"""The names bench/RESULTS.md gives the classification models of the reports and what they
read, and their order in its tables: the agreement questions' and the sentiment benchmark's."""

# The agreement reports' models (fairseq's architecture names, or the short names of the
# open-vocabulary runs) and the tree sources or cases they read (``MODEL@SOURCE``).
MODEL_NAMES = {"tree_classifier": "tree_classifier_tiny",
               "recursive_tree_attention_classifier": "Recursive Tree Attention",
               "rta": "Recursive Tree Attention",
               "recursive_multibranch_classifier": "CTT", "ctt": "CTT",
               "recursive_multibranch_classifier-dependency": "DTT (spaCy dependencies)",
               "dtt": "DTT (spaCy dependencies)", "roberta": "roberta (leaves)"}
SOURCE_NAMES = {"spacy": "spaCy trees", "lg": "link-grammar trees", "flat": "flat trees",
                # the agreement recipe's CASE, the same spaCy trees
                "cased": "text as written", "lowercase": "lowercased leaves",
                "augment": "text with lowercased copies",
                # and the made coordinations of the main clause's or every clause's verbs
                "coordination-main": "lowercased leaves and main-clause coordinations",
                "coordination-main-quarter":
                    "lowercased leaves and a quarter of the main-clause coordinations",
                "coordination-every": "lowercased leaves and every clause's coordinations",
                # and every past-tense verb of train labelled by its subject
                "past-tense": "lowercased leaves and past-tense examples",
                "past-tense-coordination-main":
                    "lowercased leaves, past-tense examples and main-clause coordinations",
                # and the examples against copying the nearest verb's number written twice
                "coordination-main-contrast":
                    "lowercased leaves, main-clause coordinations and contrast copies",
                # the made coordinations of the main clause's past-tense verbs instead
                "coordination-main-past":
                    "lowercased leaves and past-tense main-clause coordinations",
                # the same, the head reading the right frontier (--head-reads right-frontier)
                "coordination-main-past-frontier":
                    "lowercased leaves and past-tense main-clause coordinations, read at the "
                    "right frontier",
                # and the root's state added (--head-reads root-and-right-frontier)
                "coordination-main-past-root-frontier":
                    "lowercased leaves and past-tense main-clause coordinations, read at the "
                    "root and the right frontier",
                # the frontier's attention queried by the root's state
                # (--head-reads root-and-root-queried-right-frontier)
                "coordination-main-past-root-queried-frontier":
                    "lowercased leaves and past-tense main-clause coordinations, read at the "
                    "root and the right frontier queried by the root",
                # the same at twice the config's width (d 128, FFN 256)
                "coordination-main-past-root-queried-frontier-d128":
                    "lowercased leaves and past-tense main-clause coordinations, read at the "
                    "root and the right frontier queried by the root, d 128",
                # and at a third of the config's peak learning rate (--lr 0.003)
                "coordination-main-past-root-queried-frontier-d128-lr003":
                    "lowercased leaves and past-tense main-clause coordinations, read at the "
                    "root and the right frontier queried by the root, d 128, lr 0.003",
                # the defaults (no made coordinations, the root's head) at that width and rate
                "lowercase-d128-lr003": "lowercased leaves, d 128, lr 0.003"}
MODEL_ORDER = ["tree_classifier", "recursive_tree_attention_classifier",
               "recursive_multibranch_classifier", "recursive_multibranch_classifier-dependency",
               "roberta"]


def model_name(name: str) -> str:
    model, _, source = name.partition("@")
    shown = MODEL_NAMES.get(model, model)
    return f"{shown} on {SOURCE_NAMES.get(source, source)}" if source else shown


def model_rank(name: str) -> int:
    model = name.partition("@")[0]
    short = {"rta": "recursive_tree_attention_classifier",
             "ctt": "recursive_multibranch_classifier",
             "dtt": "recursive_multibranch_classifier-dependency"}.get(model, model)
    return MODEL_ORDER.index(short) if short in MODEL_ORDER else len(MODEL_ORDER)


# The sentiment benchmark's tasks and models (bench/sentiment.py), the models in their order in
# its tables.
SENTIMENT_TASK_NAMES = {"rt-snippets-5": "5 classes", "rt-snippets-2": "2 classes"}
SENTIMENT_MODEL_NAMES = {"tree_classifier": "tree_classifier_tiny",
                         "tree_classifier-no-hier-embed": "tree_classifier -HierEmb",
                         "tree_classifier-no-subtree-mask": "tree_classifier -SubMask",
                         "recursive_tree_attention_classifier": "Recursive Tree Attention",
                         "recursive_multibranch_classifier": "CTT",
                         "recursive_multibranch_classifier-dependency": "DTT",
                         "roberta": "roberta (leaves)"}
