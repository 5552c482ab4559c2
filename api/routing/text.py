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
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from api.routing.token_count import PieceCounter

__all__ = [
    "DEFAULT_ENCODING",
    "MessageShapeError",
    "bundled_tiktoken_dir",
    "count_tokens",
    "full_text",
    "joined",
    "message_texts",
    "routing_text",
    "routing_text_of",
    "text_size",
]

DEFAULT_ENCODING = "cl100k_base"

# tiktoken caches each encoding under sha1(download URL); these are the names LiteLLM's bundled copies carry.
_BUNDLED_FILES = {
    "cl100k_base": "9b5ad71b2ce5302211f9c61530b329a4922fc6a4",
    "o200k_base": "fb374d419588a4632f3f557e76b4b70aebbca790",
}

_lock = threading.Lock()
_encodings: dict[str, Any] = {}
_piece_counters: dict[str, PieceCounter | None] = {}


TEXT_PART_TYPES = ("text", "input_text", "output_text")


class MessageShapeError(ValueError):
    """`messages` holds a shape the interface does not define; the message names where (`messages[0].content`)."""


def _part_text(part: Any, where: str) -> str:
    """Text of one content part: a string, or a typed part object; '' for image/audio/file parts."""
    if isinstance(part, str):
        return part
    if isinstance(part, Mapping):
        kind = part.get("type", "text")
        if kind in TEXT_PART_TYPES:
            text = part.get("text")
            if not isinstance(text, str):
                raise MessageShapeError(f"{where}.text must be a string (a part of type {kind!r} carries its text "
                                        "there)")
            return text
        return ""
    raise MessageShapeError(f"{where} must be a string or a content part object such as "
                            '{"type": "text", "text": "..."}')


def _message_parts(messages: Any) -> Iterator[tuple[int, str, str]]:
    """(message index, role, text) for every content part of every message, in order, checking the shapes the
    interface defines (docs/api.md): `messages` is a string or an array of message objects; a message's `role`
    is a string and its `content` a string, an array of parts (strings or typed part objects) or null (the chat
    format's assistant turn that only calls tools). Parts without text (images, audio, files) yield ''.
    Everything that reads text out of messages goes through here: the router's text and the size that decides
    whether a request is worked off the event loop are measured on the same thing."""
    if messages is None:
        return
    if isinstance(messages, str):
        yield 0, "user", messages
        return
    if not isinstance(messages, list):
        raise MessageShapeError("messages must be a string or an array of message objects")
    for index, message in enumerate(messages):
        where = f"messages[{index}]"
        if not isinstance(message, Mapping):
            raise MessageShapeError(f"{where} must be an object with role and content")
        role = message.get("role")
        if role is not None and not isinstance(role, str):
            raise MessageShapeError(f"{where}.role must be a string")
        role = role or "user"
        content = message.get("content")
        if content is None:
            yield index, role, ""
        elif isinstance(content, str):
            yield index, role, content
        elif isinstance(content, list):
            if not content:
                yield index, role, ""
            for number, part in enumerate(content):
                yield index, role, _part_text(part, f"{where}.content[{number}]")
        else:
            raise MessageShapeError(f"{where}.content must be a string or an array of content parts, not "
                                    f"{_json_type(content)}; wrap a single part in an array: "
                                    '[{"type": "text", "text": "..."}]')


def _json_type(value: Any) -> str:
    return "an object" if isinstance(value, Mapping) else f"a {type(value).__name__}"


def message_texts(messages: Any) -> list[tuple[str, str]]:
    """(role, text) for every message that has text, its text parts joined by newlines. A bare string counts as
    one user message. Raises MessageShapeError for a shape the interface does not define."""
    out: list[tuple[str, str]] = []
    current, role, texts = -1, "user", list[str]()
    for index, part_role, text in _message_parts(messages):
        if index != current:
            if texts:
                out.append((role, "\n".join(texts)))
            current, role, texts = index, part_role, []
        if text:
            texts.append(text)
    if texts:
        out.append((role, "\n".join(texts)))
    return out


def text_size(messages: Any, stop_above: int) -> int:
    """An upper bound on the length of the text message_texts() reads, counting one character more for every
    message and part (a separator, and the work of visiting it, which an array of many tiny parts costs without
    any text); it stops counting once the total exceeds `stop_above`, so deciding costs at most that much."""
    total = 0
    for _, _, text in _message_parts(messages):
        total += len(text) + 1
        if total > stop_above:
            break
    return total


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
            _piece_counters[encoding] = PieceCounter.for_encoding(enc)
            _encodings[encoding] = enc
    return enc


def count_tokens(text: str, encoding: str = DEFAULT_ENCODING) -> int:
    """Number of tokens in `text`. Special-token strings such as '<|endoftext|>' are counted as plain text."""
    if not text:
        return 0
    enc = get_encoding(encoding)
    counter = _piece_counters[encoding]
    counted = counter.count(text) if counter is not None else None  # ASCII text (api/routing/token_count.py)
    if counted is not None:
        return counted
    # encode_ordinary is tiktoken's encode(text, disallowed_special=()) without building the special-token set
    # and searching the text for them first (about 2 us of ~90 on a 2,000-character prompt; same count)
    return len(enc.encode_ordinary(text))
