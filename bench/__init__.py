"""The benchmarks, one module a question, run from the repository root as ``python -m bench.NAME``
(bench/RESULTS.md gives each one's command); ``bench.report`` holds what they share: the machine
record, the JSON report, the seed-level paired tests."""
