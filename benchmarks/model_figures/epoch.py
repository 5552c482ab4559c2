"""Epoch AI's Benchmarking Hub runs -> rows of datasets/model_benchmarks.csv (data card: datasets/figures_epoch.md).

Epoch AI runs GPQA Diamond, MATH level 5, OTIS Mock AIME 2024-2025 and SWE-bench Verified itself, one harness and
prompt for every model, and publishes the results under CC-BY 4.0 (epoch.ai/benchmarks, benchmark_data.zip). The
copy read here is the one committed in a public repository (the zip's files, April 2026):

    python -m benchmarks.model_figures.epoch /path/to/git-dir <commit> [--repo owner/name]

`git-dir` is a clone or mirror of that repository (e.g. `fetch`ed); nothing is downloaded here. Rerunning replaces
the rows it wrote before.
"""

from __future__ import annotations

import csv
import io
import re
from pathlib import Path

from benchmarks.model_figures.common import DEFAULT_SETTING, git, licensed_as, mirror_command, percent, \
    reaches_trained_model, variant_name

DEFAULT_REPO = "madhu24raj/bayes-llm-saturation"
LICENCE = "CC-BY-4.0 (Epoch AI, AI Benchmarking Hub)"
# file -> (benchmark name in the CSV, protocol)
FILES = {
    "gpqa_diamond.csv": ("GPQA", "Epoch AI run: GPQA Diamond (198), 0-shot CoT, simple-evals prompt, API default "
                                 "temperature"),
    "math_level_5.csv": ("MATH-L5", "Epoch AI run: MATH level 5 (1,324), 0-shot CoT, API default temperature"),
    "otis_mock_aime_2024_2025.csv": ("OTIS-Mock-AIME", "Epoch AI run: OTIS Mock AIME 2024-2025 (45 problems), 0-shot "
                                                       "CoT, API default temperature"),
    "swe_bench_verified.csv": ("SWE-bench-Verified", "Epoch AI run: SWE-bench Verified (484 of 500), Epoch's own "
                                                     "agent scaffold"),
}
# Reasoning efforts that are the API's default for these models (OpenAI's reasoning guide: `reasoning.effort`
# defaults to medium for o-series and the GPT-5 (Aug 2025) models; gpt-5.1 and later default to none, so every
# effort measured for them is a variant).
MEDIUM_IS_DEFAULT = re.compile(r"^(o1|o3|o3-mini|o4-mini|gpt-5|gpt-5-mini|gpt-5-nano|gpt-oss-120b)(-\d{4}-\d{2}-\d{2})?\Z")
_SUFFIX = re.compile(r"_(none|minimal|low|medium|high|xhigh|max|unknown|thinking|\d+K)\Z", re.IGNORECASE)
# gpt-5.1 and later default to reasoning effort none (OpenAI's reasoning guide).
NONE_IS_DEFAULT = re.compile(r"^gpt-5\.[1-9]")
# Vendor by the model id's first word (Epoch's Organization column is sometimes empty).
_PROVIDER_BY_PREFIX = (
    (r"^(gpt|o\d|chatgpt|openai/)", "openai"), (r"^claude", "anthropic"), (r"^(gemini|gemma)", "google"),
    (r"^deepseek", "deepseek"), (r"^grok", "xai"), (r"^(meta-llama|llama|muse)", "meta"),
    (r"^(mistral|open-mistral|open-mixtral|ministral|magistral|codestral|mixtral)", "mistral"),
    (r"^(qwen|qwq)", "qwen"), (r"^glm", "zai"), (r"^(kimi|fireworks/kimi)", "moonshot"), (r"^phi", "microsoft"),
    (r"^yi-", "01-ai"), (r"^dbrx", "databricks"), (r"^wizardlm", "microsoft"),
)
# Ids Epoch spells otherwise than the vendor's API / Hugging Face repo.
_RENAMES = {"fireworks/kimi-k2p5": ("kimi-k2.5", "served by Fireworks")}


def provider_of(model: str, organization: str) -> str:
    lower = model.lower()
    for pattern, provider in _PROVIDER_BY_PREFIX:
        if re.match(pattern, lower):
            return provider
    return re.sub(r"[^a-z0-9]+", "-", organization.split(",")[0].lower()).strip("-") or "huggingface"


def split_setting(epoch_id: str) -> tuple[str, str, str | None]:
    """(model id, setting as words, setting slug for a variant's name or None at the API default)."""
    found = _SUFFIX.search(epoch_id)
    base = epoch_id[: found.start()] if found else epoch_id
    base = base.removeprefix("openai/")
    if not found:
        return base, DEFAULT_SETTING, None
    value = found.group(1)
    if value == "none" and NONE_IS_DEFAULT.match(base):
        return base, f"{DEFAULT_SETTING} (reasoning effort none)", None
    if value.upper().endswith("K"):
        return base, f"extended thinking, {value} token budget", f"thinking-{value.lower()}"
    if value == "thinking":
        return base, "thinking mode", "thinking"
    if value == "unknown":
        return base, "reasoning effort not stated by the source", "reasoning-unstated"
    if value == "medium" and MEDIUM_IS_DEFAULT.match(base):
        return base, f"{DEFAULT_SETTING} (reasoning effort medium)", None
    return base, f"reasoning effort {value}", f"reasoning-{value}"


def read_csv(git_dir: Path, commit: str, name: str) -> list[dict[str, str]]:
    text = git(git_dir, "show", f"{commit}:benchmark_data/{name}")
    return list(csv.DictReader(io.StringIO(text)))


def rows_from(git_dir: Path, commit: str, repo: str, snapshot_date: str) -> list[dict[str, str]]:
    """One row per run; a run without a start date is dated by the snapshot it was read from (the note says so)."""
    out = []
    for name, (benchmark, protocol) in FILES.items():
        for r in read_csv(git_dir, commit, name):
            epoch_id = r["Model version"].strip()
            score = r.get("mean_score") or r.get("Best score (across scorers)")
            if not epoch_id or not score:
                continue
            base, setting, slug = split_setting(epoch_id)
            base, served = _RENAMES.get(base, (base, ""))
            if reaches_trained_model(base):
                continue
            note = f"Epoch AI Benchmarking Hub, model '{epoch_id}'"
            if served:
                note += f" ({served})"
            if r.get("Log viewer"):
                note += f"; log {r['Log viewer']}"
            if not r.get("Started at"):
                note += "; no run date given, dated by the snapshot"
            out.append(dict(
                provider=provider_of(base, r.get("Organization", "")), model=variant_name(base, slug),
                benchmark=benchmark, score=percent(score), protocol=protocol,
                source_url=f"https://github.com/{repo}/blob/{commit}/benchmark_data/{name}",
                source_note=note, date=(r.get("Started at") or snapshot_date)[:10], setting=setting, licence=LICENCE))
    return out


ECI_FILE = "epoch_capabilities_index.csv"
ECI_PROTOCOL = ("Epoch Capabilities Index: one score per model fitted by Epoch AI across the benchmarks it tracks "
                "(an index, not a percentage; frontier models 140-160)")
_HOSTS = re.compile(r"^(chutes/|fireworks/|parasail-|together/|zai-org/|qwen/|moonshotai/|deepseek/|openai/)",
                    re.IGNORECASE)
_ECI_RENAMES = {"deepseek-v3p2": "DeepSeek-V3.2", "kimi-k2p5": "kimi-k2.5"}


def eci_rows(git_dir: Path, commit: str, repo: str, snapshot_date: str) -> list[dict[str, str]]:
    """ECI rows. Epoch lists the index per model version and setting, but gives every setting of a model the same
    value (it is fitted per model): such a model gets one row under its own name, its setting 'model-level'. A model
    whose settings carry different values keeps them apart, as for the runs."""
    groups: dict[tuple[str, str], list[tuple[str, str, str | None, dict[str, str]]]] = {}
    for r in read_csv(git_dir, commit, ECI_FILE):
        epoch_id = r["Model version"].strip()
        if not epoch_id or not r.get("ECI Score"):
            continue
        bare = _HOSTS.sub("", epoch_id)
        base, setting, slug = split_setting(bare)
        base = _ECI_RENAMES.get(base, base)
        if reaches_trained_model(base) or " " in base or "web" in base:  # web apps are not API models
            continue
        provider = provider_of(base, r.get("Organization", ""))
        groups.setdefault((provider, base.lower()), []).append((base, setting, slug, r | {"id": epoch_id}))
    out = []
    for (provider, _), members in groups.items():
        values = {m[3]["ECI Score"] for m in members}
        if len(values) == 1:
            base, _, _, r = min(members, key=lambda m: (m[2] is not None, len(m[3]["id"])))
            entries = [(base, "model-level: Epoch gives every setting of this model this value", None, r)]
        else:
            entries = members
        for base, setting, slug, r in entries:
            ids = ", ".join(sorted(m[3]["id"] for m in members)) if len(values) == 1 else r["id"]
            out.append(dict(
                provider=provider, model=variant_name(base, slug), benchmark="ECI",
                score=f"{float(r['ECI Score']):.1f}", protocol=ECI_PROTOCOL,
                source_url=f"https://github.com/{repo}/blob/{commit}/benchmark_data/{ECI_FILE}",
                source_note=f"Epoch AI Benchmarking Hub, ECI of '{ids}' ({r.get('Display name') or 'no display name'})",
                date=snapshot_date, setting=setting, licence=LICENCE))
    return out


owns = licensed_as(LICENCE)


def main() -> None:
    def rows(args, commit: str) -> list[dict[str, str]]:
        snapshot_date = git(args.git_dir, "show", "-s", "--format=%cs", commit).strip()
        return (rows_from(args.git_dir, commit, args.repo, snapshot_date)
                + eci_rows(args.git_dir, commit, args.repo, snapshot_date))

    mirror_command("epoch", __doc__, owns, rows, lambda parser: parser.add_argument("--repo", default=DEFAULT_REPO))


if __name__ == "__main__":
    main()
