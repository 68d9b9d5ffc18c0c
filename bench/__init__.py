"""The benchmarks: each module here answers one question, run from the repository root as
``python -m bench.NAME`` (bench/RESULTS.md gives each one's command and table); a question may
read the reports of its own family (agreement, sentiment, hierarchical generalization, trees).

``bench.lib`` holds what the questions share and answers none itself: reports, statistics and
the tables of RESULTS (``report``, ``tables``), training set-up (``compare``, ``seeds``,
``fairseq_training``, ``data_bins``, ``measured_train``, ``profiled_train``), measurement
(``timing``, ``dense_reference``, ``masked_lm``), and running (``parallel_jobs``, the device
runner ``device.sh``). ``bench.tasks`` generates the benchmarks' data: McCoy et al.'s grammars,
the targeted agreement templates, the synthetic tree transduction, random trees.
``bench/jobs`` holds job lists, ``bench/results`` the JSON the tables are written from."""
