"""Prompt optimization on the API side: request validation, runs, status, results and costs. The work itself is the
`optimize-prompt` flow (flows/optimize_prompt.py); nothing here imports Prefect, DSPy or LiteLLM at module level."""
