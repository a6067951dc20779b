"""The measured reference as package data: one JSON file per measurement, in the one
format ``svmcore.app.reference`` reads, written by the benchmarks in ``bench/``."""
