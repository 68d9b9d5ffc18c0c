"""What the benchmarks share (see ``bench``): no module here answers a question of its own."""
