"""The routing engine shared by serving and training.

Serving imports only numpy-backed modules from here (text, features, router, policy, default_router, evaluation);
training code lives in api.routing.training and is never imported on the hot path.
"""
