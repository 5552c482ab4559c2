"""Figures beyond the shipped file (docs/routing.md, "Refreshing and measuring model figures"): sets an operator
refreshes without a release (flows/model_figures/refresh.py), and figures measured by onboarding a model that has
none (flows/model_figures/onboard.py); every API worker serves them through the store's change feed (live.py)."""
