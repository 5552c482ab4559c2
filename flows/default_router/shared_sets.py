"""Per-query outcomes of many models on MMLU-Pro and ZeroEval (CRUX, MATH level 5), with one name per model.

- MMLU-Pro (../shared/data/mmlu_pro, TIGER-AI-Lab/MMLU-Pro at f418b11, MIT data): 5,138 questions not from MMLU
  (STEM websites, TheoremQA, SciBench) x 29 models, 0/1, blank = not run. The 18 `revised` questions are dropped
  (their label differs between model runs, the data card).
- ZeroEval (../shared/data/zeroeval, WildEval/ZeroEval at 8c1485e, Apache-2.0; CRUXEval and MATH are MIT): CRUX code
  reasoning, 800 x 51 models, and MATH level 5, 598 x 41 models, 0/1.

The sources spell one model several ways (Meta-Llama-3_1-70B-Instruct, Meta-Llama-3.1-70B-Instruct; three providers'
Llama-3.1-405B-Instruct columns). `canonical` maps each spelling to one "provider/model" key, the key a caller's
candidate has at serving (the model's own vendor for API models, huggingface/<org>/<name> for open weights, as the
RouterDC models are named); columns of one model in one file are averaged (a soft outcome).
"""

from __future__ import annotations

import csv
import re
from pathlib import Path

import numpy as np

from flows.default_router.data import STRONG, WEAK
from flows.default_router.multi import ROUTERDC_MODELS, Outcomes

csv.field_size_limit(1 << 28)

# Spellings that the rules below would not bring to the key the rest of the data (and the catalogue) uses.
ALIASES = {
    STRONG: "openai/gpt-4-1106-preview",
    WEAK: "togetherai/mistralai/Mixtral-8x7B-Instruct-v0.1",
    "Mixtral-8x7B-Instruct-v0.1": "togetherai/mistralai/Mixtral-8x7B-Instruct-v0.1",
    "Llama-3.1-405B-Inst-fp8": "togetherai/meta-llama/Llama-3.1-405B-Instruct",
    "Llama-3.1-405B-Inst@sambanova": "togetherai/meta-llama/Llama-3.1-405B-Instruct",
    "Meta-Llama-3.1-405B-Instruct@hyperbolic": "togetherai/meta-llama/Llama-3.1-405B-Instruct",
    "Mistral-Large-2": "mistral/mistral-large-2407",
    **{m: f"huggingface/{m}" for m in ROUTERDC_MODELS},
}
# API models: the vendor, by the name's start.
VENDORS = (("gpt-", "openai"), ("o1-", "openai"), ("chatgpt-", "openai"), ("claude-", "anthropic"),
           ("gemini-", "google"), ("grok-", "xai"), ("deepseek-v2", "deepseek"), ("reka-", "reka"),
           ("yi-large", "01-ai"))
# Open weights: the Hugging Face organisation, by the name's start (case-insensitive).
ORGS = (("meta-llama-", "meta-llama"), ("llama-", "meta-llama"), ("mistral-", "mistralai"), ("mixtral-", "mistralai"),
        ("mathstral", "mistralai"), ("qwen", "Qwen"), ("yi-", "01-ai"), ("gemma", "google"), ("phi-", "microsoft"),
        ("c4ai-", "CohereForAI"), ("jamba-", "ai21labs"), ("deepseek-coder", "deepseek-ai"), ("athene", "Nexusflow"))
_VERSION_UNDERSCORE = re.compile(r"(\d)_(\d)")  # Meta-Llama-3_1 -> Meta-Llama-3.1 (MMLU-Pro's file names)


def canonical(name: str) -> str:
    """One "provider/model" key per model, whatever the source's spelling."""
    if name in ALIASES:
        return ALIASES[name]
    lower = name.lower()
    for prefix, vendor in VENDORS:
        if lower.startswith(prefix):
            return f"{vendor}/{name}"
    spelled = _VERSION_UNDERSCORE.sub(r"\1.\2", name)
    for prefix, org in ORGS:
        if lower.startswith(prefix):
            return f"huggingface/{org}/{spelled}"
    return f"huggingface/{spelled}"


def model_key(model: str) -> str:
    """The key of a model of any set: RouteLLM's and RouterDC's spellings through ALIASES; the sets read here name
    their models by key already."""
    return ALIASES.get(model, model)


def _outcomes(source: str, name: str, path: Path, meta: set[str], keep=lambda row: True) -> Outcomes:
    with path.open(newline="", encoding="utf-8") as f:
        reader = csv.DictReader(f)
        columns = [c for c in reader.fieldnames or [] if c not in meta]
        rows = [r for r in reader if keep(r)]
    raw = np.array([[float(r[c]) if r[c].strip() else np.nan for c in columns] for r in rows], dtype=np.float64)
    keys = list(dict.fromkeys(canonical(c) for c in columns))
    scores = np.empty((len(rows), len(keys)))
    for j, key in enumerate(keys):
        same = [i for i, c in enumerate(columns) if canonical(c) == key]
        # Several providers' runs of one model (the 405B): their mean, a soft outcome (every such cell is known).
        scores[:, j] = raw[:, same].mean(axis=1)
    return Outcomes(source, name, [r["prompt"] for r in rows], tuple(keys), scores)


def mmlu_pro(data_dir: Path) -> Outcomes:
    return _outcomes("mmlu_pro", "mmlu_pro", Path(data_dir) / "mmlu_pro_nonmmlu.csv",
                     {"question_id", "category", "src", "prompt", "answer", "revised"},
                     keep=lambda r: r["revised"].strip() != "1")


def zeroeval(data_dir: Path) -> list[Outcomes]:
    return [_outcomes("zeroeval", name, Path(data_dir) / f"{name}.csv", {"id", "prompt", "answer"})
            for name in ("crux", "math_l5")]


def shared_sets(shared_dir: Path) -> list[Outcomes]:
    """Every one of these sets found under shared_dir (the folder holding routellm/, mmlu_pro/, zeroeval/)."""
    out = []
    if (Path(shared_dir) / "mmlu_pro" / "mmlu_pro_nonmmlu.csv").exists():
        out.append(mmlu_pro(Path(shared_dir) / "mmlu_pro"))
    if (Path(shared_dir) / "zeroeval" / "crux.csv").exists():
        out.extend(zeroeval(Path(shared_dir) / "zeroeval"))
    return out
