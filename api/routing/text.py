"""Query text extraction and offline token counting.

The routing engine only ever looks at text: `messages` arrive either as a bare string or as a chat array whose
`content` is a string or a list of typed parts (OpenAI style). Non-text parts (images, audio, files) carry no text
we can route on and are ignored.

Token counting must never touch the network. tiktoken downloads its BPE files on first use unless
`TIKTOKEN_CACHE_DIR` points at a folder that already holds them; LiteLLM ships exactly those files (named by the
sha1 of their download URL, which is tiktoken's cache key) in `litellm/litellm_core_utils/tokenizers/`. We locate
that folder with importlib *without importing litellm* (importing it is slow and may fetch its price map), point
tiktoken at it before the first encoding is built, and fail loudly if the file is missing rather than download.
"""

from __future__ import annotations

import importlib.util
import os
import threading
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

__all__ = [
    "DEFAULT_ENCODING",
    "bundled_tiktoken_dir",
    "count_tokens",
    "full_text",
    "joined",
    "message_texts",
    "routing_text",
    "routing_text_of",
]

DEFAULT_ENCODING = "cl100k_base"

# tiktoken caches each encoding under sha1(download URL); these are the names LiteLLM's bundled copies carry.
_BUNDLED_FILES = {
    "cl100k_base": "9b5ad71b2ce5302211f9c61530b329a4922fc6a4",
    "o200k_base": "fb374d419588a4632f3f557e76b4b70aebbca790",
}

_lock = threading.Lock()
_encodings: dict[str, Any] = {}


def _part_text(part: Any) -> str:
    """Text of one content part; '' for image/audio/file parts or anything unrecognised."""
    if isinstance(part, str):
        return part
    if isinstance(part, Mapping):
        kind = part.get("type", "text")
        if kind in ("text", "input_text", "output_text"):
            text = part.get("text")
            return text if isinstance(text, str) else ""
    return ""


def _content_text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, Mapping):  # a single part given without a list around it
        return _part_text(content)
    if isinstance(content, Iterable):
        return "\n".join(t for t in (_part_text(p) for p in content) if t)
    return ""


def message_texts(messages: Any) -> list[tuple[str, str]]:
    """(role, text) for every message that has text. A bare string counts as one user message."""
    if messages is None:
        return []
    if isinstance(messages, str):
        return [("user", messages)] if messages else []
    if isinstance(messages, Mapping):
        messages = [messages]
    out: list[tuple[str, str]] = []
    for message in messages:
        if isinstance(message, str):
            role, text = "user", message
        elif isinstance(message, Mapping):
            role = str(message.get("role") or "user")
            text = _content_text(message.get("content"))
        else:
            continue
        if text:
            out.append((role, text))
    return out


def full_text(messages: Any) -> str:
    """All text of the conversation, one message per paragraph: what fills the context window."""
    return joined(message_texts(messages))


def joined(texts: list[tuple[str, str]]) -> str:
    """full_text of messages whose message_texts are `texts`."""
    return "\n".join(text for _, text in texts)


def routing_text(messages: Any) -> str:
    """The text the router scores: the last user turn, as RouteLLM routes on the current user prompt.

    Falls back to the whole conversation when there is no user turn (e.g. only a system prompt).
    """
    return routing_text_of(message_texts(messages))


def routing_text_of(texts: list[tuple[str, str]]) -> str:
    """routing_text of messages whose message_texts are `texts` (the hot path extracts them once)."""
    for role, text in reversed(texts):
        if role == "user":
            return text
    return joined(texts)


def bundled_tiktoken_dir() -> Path | None:
    """LiteLLM's folder of tiktoken BPE files, found without importing litellm."""
    spec = importlib.util.find_spec("litellm")
    if spec is None or not spec.submodule_search_locations:
        return None
    for location in spec.submodule_search_locations:
        candidate = Path(location) / "litellm_core_utils" / "tokenizers"
        if candidate.is_dir():
            return candidate
    return None


def _point_tiktoken_at_bundle(encoding: str) -> None:
    """Set TIKTOKEN_CACHE_DIR to a folder holding `encoding`, unless it already points at one."""
    wanted = _BUNDLED_FILES.get(encoding)
    if wanted is None:
        raise ValueError(f"no bundled copy of tiktoken encoding {encoding!r}; use one of {sorted(_BUNDLED_FILES)}")
    current = os.environ.get("TIKTOKEN_CACHE_DIR")
    if current and (Path(current) / wanted).is_file():
        return
    bundle = bundled_tiktoken_dir()
    if bundle is None or not (bundle / wanted).is_file():
        # Refuse rather than let tiktoken download the file at run time.
        raise RuntimeError(f"tiktoken encoding {encoding!r} is not bundled (looked in {bundle}); refusing to download")
    os.environ["TIKTOKEN_CACHE_DIR"] = str(bundle)


def get_encoding(encoding: str = DEFAULT_ENCODING) -> Any:
    """The tiktoken Encoding, built once per process from the bundled file (a few hundred ms the first time)."""
    enc = _encodings.get(encoding)
    if enc is not None:
        return enc
    with _lock:
        enc = _encodings.get(encoding)
        if enc is None:
            _point_tiktoken_at_bundle(encoding)
            # lazy: tiktoken reads its cache dir from the environment at import, so that is set first
            import tiktoken

            enc = tiktoken.get_encoding(encoding)
            _encodings[encoding] = enc
    return enc


def count_tokens(text: str, encoding: str = DEFAULT_ENCODING) -> int:
    """Number of tokens in `text`. Special-token strings such as '<|endoftext|>' are counted as plain text."""
    if not text:
        return 0
    return len(get_encoding(encoding).encode(text, disallowed_special=()))
