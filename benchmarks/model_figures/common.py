"""What every importer of public figures shares: the CSV's columns, how a reasoning or thinking setting is named, which
models must get no new row, and how an importer's rows replace its earlier ones.

Naming a setting: a row measured at the model's API default carries the model's id as the provider's API takes it;
a row measured at another setting (a reasoning effort, an extended-thinking budget) carries `<id>:<setting>`, e.g.
`gpt-5.1-2025-11-13:reasoning-high` or `claude-opus-4-5-20251101:thinking-32k`, and its `setting` column says so.
The name rules of api/routing/model_names.py never match `<id>:<setting>` to `<id>` (the setting's words stay in the
key), so a thinking variant's figures never stand for its base model's, nor the other way round.
"""

from __future__ import annotations

import argparse
import csv
import subprocess
from collections.abc import Callable, Iterable
from pathlib import Path

from api.routing import model_names

FIGURES = Path(__file__).resolve().parents[2] / "datasets" / "model_benchmarks.csv"
COLUMNS = ("provider", "model", "benchmark", "score", "protocol", "source_url", "source_note", "date", "setting",
           "licence")
DEFAULT_SETTING = "API default"

# The models the shipped router trained on (datasets/default_router/router.json, "skills.models"): their figures are
# the artefact's inputs, so no importer adds a row that reaches them under any name rule (a new one would need a
# retrain; datasets/default_router/README.md, data card of the figures).
TRAINED_MODELS = ("gpt-4-1106-preview", "Mixtral-8x7B-Instruct-v0.1", "zephyr-7b-beta", "dolphin-2.6-mistral-7b",
                  "dolphin-2.9-llama3-8b", "Chinese-Mistral-7B-v0.1", "Meta-Llama-3-8B", "MetaMath-Mistral-7B",
                  "Mistral-7B-v0.1")
_TRAINED_KEYS = {model_names.key(name, level) for name in TRAINED_MODELS for level in model_names.LEVELS}


def reaches_trained_model(model: str) -> bool:
    """True when `model` would match a trained model at any name-rule level."""
    return any(model_names.key(model, level) in _TRAINED_KEYS for level in model_names.LEVELS)


def variant_name(model: str, setting_slug: str | None) -> str:
    return f"{model}:{setting_slug}" if setting_slug else model


def read_rows(path: Path = FIGURES) -> list[dict[str, str]]:
    with path.open(newline="", encoding="utf-8") as f:
        return [{c: r.get(c) or "" for c in COLUMNS} for r in csv.DictReader(f)]


def write_rows(rows: Iterable[dict[str, str]], path: Path = FIGURES) -> None:
    with path.open("w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=COLUMNS, lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)


def figure_key(row: dict[str, str]) -> tuple[str, str, str]:
    """One figure per key: a second one for the same model and benchmark would silently average with the first."""
    return row["provider"].lower(), row["model"].lower(), row["benchmark"]


def latest_per_key(rows: list[dict[str, str]]) -> list[dict[str, str]]:
    """A source that ran a model twice on one benchmark: the latest run (by `date`) stands."""
    best: dict[tuple[str, str, str], dict[str, str]] = {}
    for row in rows:
        current = best.get(figure_key(row))
        if current is None or row["date"] > current["date"]:
            best[figure_key(row)] = row
    return list(best.values())


def replace_source(new_rows: list[dict[str, str]], owns: Callable[[dict[str, str]], bool],
                   path: Path = FIGURES) -> tuple[int, int, int]:
    """Drop the rows this importer wrote before (`owns`), append `new_rows` except those whose (provider, model,
    benchmark) another source already gives (the earlier source stands): rerunning an importer is idempotent.
    Returns (rows removed, rows added, rows skipped as already given)."""
    before = read_rows(path)
    kept = [r for r in before if not owns(r)]
    taken = {figure_key(r) for r in kept}
    added = [r for r in latest_per_key(new_rows) if figure_key(r) not in taken]
    write_rows(kept + added, path)
    return len(before) - len(kept), len(added), len(new_rows) - len(added)


def percent(value: str) -> str:
    """A 0-1 share as a percentage with one decimal (the CSV's scale)."""
    return f"{100 * float(value):.1f}"


def git(git_dir: Path, *args: str) -> str:
    """A git command's output in a fetched mirror (the importers read a source repository at a pinned commit)."""
    return subprocess.run(["git", "--git-dir", str(git_dir), *args], check=True, capture_output=True,
                          text=True).stdout


def licensed_as(licence: str) -> Callable[[dict[str, str]], bool]:
    """The rows an importer owns in datasets/model_benchmarks.csv: those it wrote, named by their licence."""
    return lambda row: row["licence"] == licence


def mirror_command(source: str, description: str | None, owns: Callable[[dict[str, str]], bool],
                   rows_of: Callable[[argparse.Namespace, str], list[dict[str, str]]],
                   add_options: Callable[[argparse.ArgumentParser], object] | None = None) -> None:
    """An importer's command line, `<git-dir> <commit>` of a fetched mirror: the rows it owns are replaced by
    `rows_of(args, sha)` (the commit resolved to its sha) and the counts printed."""
    parser = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("git_dir", type=Path)
    parser.add_argument("commit")
    if add_options is not None:
        add_options(parser)
    args = parser.parse_args()
    commit = git(args.git_dir, "rev-parse", args.commit).strip()
    removed, added, skipped = replace_source(rows_of(args, commit), owns)
    print(f"{source}: removed {removed} rows, added {added}, skipped {skipped} (another source or a later run)")

