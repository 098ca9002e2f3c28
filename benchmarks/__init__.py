"""The performance harness: `make bench` runs every ``bench_*.py`` here and prints its figures."""
