"""The benchmarks: each module here answers one question, run from the repository root as
``python -m bench.NAME`` (bench/RESULTS.md gives each one's command and table); a question may
read the reports of its own family (agreement, sentiment, hierarchical generalization, trees),
but imports no other question: only ``bench.lib`` and ``bench.tasks``
(tests/test_import_layers.py).

``bench.lib`` holds what the questions share and answers none itself: reports, statistics
(the seed summaries, paired t-tests and Holm's adjustment) and the tables of RESULTS
(``report``, ``tables``), the names the tables give models (``model_names``), training set-up
(``compare``, ``seeds``, ``fairseq_training``, ``data_bins``, ``measured_train``,
``profiled_train``), what a family of questions reads and scores alike (``agreement_recipe``,
``hierarchical_scoring``, ``tree_counts``, ``named_options``), measurement (``timing``,
``dense_reference``, ``masked_lm``), and running (``parallel_jobs``, the device runner
``device.sh``). ``bench.tasks`` generates the benchmarks' data: McCoy et al.'s grammars,
the targeted agreement templates, the synthetic tree transduction, random trees.
``bench/jobs`` holds job lists, ``bench/results`` the JSON the tables are written from."""
