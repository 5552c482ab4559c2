"""The `switchboard` command: the composition root that starts and wires every process (see docs/architecture.md)."""
