"""Importers that turn public result sets into rows of datasets/model_benchmarks.csv (data cards in datasets/)."""
