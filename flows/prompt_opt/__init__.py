"""Prompt optimization beside its flow (flows/optimize_prompt.py): LLM access with usage accounting, the program
built from a caller's prompt, the metrics, and the optimizer."""
