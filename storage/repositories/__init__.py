"""The DuckDB implementations of storage/interfaces.py, one module per domain, all over one storage.database."""
