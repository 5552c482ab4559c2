"""msgspec Structs: the only wire schema (docs/architecture.md, rule 1)."""
