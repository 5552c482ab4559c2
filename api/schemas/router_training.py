"""Wire shapes of POST /v2/pzn/trainCustomRouter (multipart/form-data)."""

from __future__ import annotations

from dataclasses import dataclass

import msgspec
from litestar.datastructures import UploadFile


@dataclass
class TrainCustomRouterForm:
    """Form fields exactly as the spec and the official client send them (booleans arrive as "true"/"false")."""

    language: str
    llm_providers: str
    prompt_column: str
    dataset_file: UploadFile
    maximize: bool
    preference_id: str | None = None
    override: bool | None = None


class TrainCustomRouterResponse(msgspec.Struct):
    preference_id: str
