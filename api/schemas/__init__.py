"""msgspec Structs: the only wire schema (house rule 1)."""
