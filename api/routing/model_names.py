"""Tolerant spellings of model names, so a caller's spelling finds a model's published figures.

A name becomes a tuple of lower-case tokens: letters and digits split apart ("llama3.1" -> llama 3 1), every
separator (- _ . / space) a boundary, so Llama-3.1, Llama-3_1, llama3.1 and LLAMA 3.1 are one spelling. Then, in
order of how much they change what the name means:

1. spelling: the organisation before a '/' ('meta-llama/...'), a serving host after '@' ('...@sambanova'),
   OpenRouter's ':free' / ':beta' / ':nitro' suffixes, a
   vendor word at the start ('Meta-Llama-3', 'c4ai-command-r'), '-hf' (the same weights in Hugging Face's format)
   and 'inst' for 'instruct' are dropped or unified: the weights are the same;
2. snapshot: date and version tags at the end (-2024-08-06, -0125, -002, -latest, -preview, -exp, -v0.2) and
   serving tags anywhere (-fp8, -Turbo as together.ai spells its builds) are dropped, and word order no longer
   counts (deepseek-coder-v2 / deepseek-v2-coder): the same model, maybe another snapshot;
3. variant: -Instruct / -chat / -it dropped too, so a base model and its chat-tuned sibling meet. They differ
   (tuning moves benchmark scores by several points), which is why this level comes last.
"""

from __future__ import annotations

import re

SPELLING, SNAPSHOT, VARIANT = 1, 2, 3
LEVELS = (SPELLING, SNAPSHOT, VARIANT)

_TOKEN = re.compile(r"[a-z]+|\d+")
# Tags that name how or when a model is served, not which weights it has (matched before tokens are split).
_SERVING_TAG = re.compile(r"(?<![a-z0-9])(?:fp8|fp16|bf16|int4|int8|awq|gptq|gguf|turbo)(?![a-z0-9])")
# '-hf': the same weights converted to Hugging Face's format.
_FORMAT_TAG = re.compile(r"(?<![a-z0-9])hf(?![a-z0-9])")
_HOST = re.compile(r"@[^/]*\Z")
# OpenRouter's variant suffixes that name a way of serving the same weights (':free', ':beta', ':nitro', ...);
# ':thinking' is not among them: it names a reasoning variant, kept apart from its base (api/routing/placement.py).
_ROUTE_SUFFIX = re.compile(r":(?:free|beta|nitro|floor|extended|online|exacto)\Z")
# Vendor words that some spell into the model name and others leave out.
_VENDOR_PREFIX = re.compile(r"^(?:meta|c4ai|mistralai|google|microsoft|anthropic|openai|cohere)[-_ ](?=.)")
_SPELLING_ALIASES = {"inst": "instruct"}
_SNAPSHOT_WORDS = {"latest", "preview", "exp", "experimental"}
_VARIANT_TAGS = {"instruct", "chat", "it"}


def _bare(name: str) -> str:
    """Everything after the last '/', before any '@host' or ':free'-like suffix, lower case."""
    return _ROUTE_SUFFIX.sub("", _HOST.sub("", name.strip().lower())).rsplit("/", 1)[-1]


def tokens(name: str) -> tuple[str, ...]:
    return tuple(_TOKEN.findall(_bare(name)))


def _strip_snapshot_tail(toks: list[str]) -> list[str]:
    """Drop trailing snapshot tags: latest/preview/exp, a release 'v0...' (not a generation: deepseek-v2 stays), a
    date (2024 08 06, 24 09 07, 09 2025; 05 20 after preview or exp) or a number of 3+ digits (0125, 002, 20240620). Short numbers stay: they
    are the family's version (claude-sonnet-3-5, llama 3 1)."""
    while len(toks) > 1:
        if toks[-1] in _SNAPSHOT_WORDS:
            toks.pop()
            continue
        run = 0
        while run < len(toks) - 1 and toks[-1 - run].isdigit():
            run += 1
        if run == 0:
            break
        widths = [len(t) for t in toks[-run:]]
        if toks[-1 - run] == "v" and toks[-run].startswith("0"):
            del toks[-1 - run:]
        elif run >= 3 and widths[-3:] in ([4, 2, 2], [2, 2, 2]):
            del toks[-3:]
        elif run >= 2 and widths[-2:] == [2, 4]:
            del toks[-2:]
        elif run == 2 and widths == [2, 2] and toks[-3] in _SNAPSHOT_WORDS:  # gemini-2.5-flash-preview-05-20
            del toks[-2:]
        elif widths[-1] >= 3:
            toks.pop()
        else:
            break
    return toks


def stripped_tokens(name: str) -> tuple[str, ...]:
    """The name's tokens in their order, spelling unified and snapshot tags dropped (the snapshot level without its
    free word order): what api/routing/placement.py reads family, generation and tier from."""
    bare = _SERVING_TAG.sub(" ", _FORMAT_TAG.sub(" ", _VENDOR_PREFIX.sub("", _bare(name))))
    return tuple(_strip_snapshot_tail([_SPELLING_ALIASES.get(t, t) for t in _TOKEN.findall(bare)]))


def key(name: str, level: int) -> tuple[str, ...]:
    """The name's key at a matching level (SPELLING, SNAPSHOT or VARIANT); two names match at a level when their
    keys are equal."""
    bare = _FORMAT_TAG.sub(" ", _VENDOR_PREFIX.sub("", _bare(name)))
    if level >= SNAPSHOT:
        bare = _SERVING_TAG.sub(" ", bare)
    toks = [_SPELLING_ALIASES.get(t, t) for t in _TOKEN.findall(bare)]
    if level >= SNAPSHOT:
        toks = _strip_snapshot_tail(toks)
    if level >= VARIANT:
        toks = [t for t in toks if t not in _VARIANT_TAGS] or toks
        toks = _strip_snapshot_tail(toks)
    # From the snapshot level on, word order is free: deepseek-coder-v2 / deepseek-v2-coder, claude-3-opus /
    # claude-opus-3, gemini-pro-1.5 / gemini-1.5-pro.
    return tuple(sorted(toks)) if level >= SNAPSHOT else tuple(toks)
