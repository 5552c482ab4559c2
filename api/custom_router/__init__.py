"""Custom routers: trained per preference from a team's own evaluation CSV (POST /v2/pzn/trainCustomRouter).

Serving modules (model, trees, registry, encoders) import numpy only; training (training, stacking) and upload
validation (validation: polars) are imported lazily, by the flow and by the upload controller.
"""
