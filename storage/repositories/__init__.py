"""The implementations of storage/interfaces.py, one module per domain, written once over storage/sql.py: the same
code runs on DuckDB (storage/database.py) and PostgreSQL (storage/postgres.py)."""
