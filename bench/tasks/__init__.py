"""The data the benchmarks generate (see ``bench``): grammars, templates and random trees."""
