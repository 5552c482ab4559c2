"""Serving routers that an earlier version trained on e5 vectors, without running e5.

Those routers' heads read [multilingual-e5-small vector | hand features], and that version embedded every uncached
query with e5 in the API (tens of milliseconds to seconds). Their artefact keeps e5's vector of every training
prompt (knn_embeddings.npy, in upload order), so the loader fits a lexicon to exactly those vectors
(api/custom_router/lexicon.py) and serves the unchanged heads on its output: no e5 call, no retraining, and the log
says so once per router. The lexicon approximates e5; uploading the data again trains a router for the current
encoder (docs/routing.md, "Routers of earlier versions").
"""

from __future__ import annotations

import logging
import time
from pathlib import Path

import numpy as np

from api.custom_router.encoders import MigratedE5Encoder
from api.custom_router.lexicon import fit_lexicon, hash_order
from api.routing.features import FeatureVersionMismatch

log = logging.getLogger("switchboard.custom_routers")
# The dual ridge solve grows with the cube of the rows: 3,000 take a few seconds at start-up.
MIGRATION_ROWS = 3000


def migrated_e5_encoder(folder: Path, prompts: list[str]) -> MigratedE5Encoder:
    targets = np.load(folder / "knn_embeddings.npy").astype(np.float64)
    if len(prompts) != len(targets):
        raise FeatureVersionMismatch(f"custom router in {folder}: {len(prompts)} training prompts for "
                                     f"{len(targets)} stored e5 vectors; train it again")
    started = time.perf_counter()
    rows = hash_order(prompts)[:MIGRATION_ROWS]
    lexicon = fit_lexicon([prompts[i] for i in rows], targets[rows])
    log.warning("custom router %s was trained on e5 by an earlier version: serving it without e5 through a lexicon "
                "fitted to its stored e5 vectors (%d prompts, %d tokens, %.1f s); upload the data again to retrain "
                "it for the current encoder", folder, len(rows), len(lexicon.tokens), time.perf_counter() - started)
    return MigratedE5Encoder(lexicon)
