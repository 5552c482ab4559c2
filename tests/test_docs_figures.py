"""Headline figures quoted in the docs agree with the one place each lives, so they cannot drift apart again.

- The default router's held-out figures live in the shipped artefact's report (`heldout_report` in
  datasets/default_router/router.json, written by the training flow): the README's headline APGR row and the data
  card's quality table and RouterDC sentence quote it, rounded.
- Every other figure of the README's headline table lives in docs/benchmarks.md.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
README = (REPO / "README.md").read_text(encoding="utf-8")
CARD = (REPO / "datasets" / "default_router" / "README.md").read_text(encoding="utf-8")
BENCHMARKS = (REPO / "docs" / "benchmarks.md").read_text(encoding="utf-8")
ARTEFACT = REPO / "datasets" / "default_router" / "router.json"
REPORT = json.loads(ARTEFACT.read_text(encoding="utf-8"))["heldout_report"]
NUMBER = re.compile(r"\d[\d,]*\.\d+|\d[\d,]*")


def agrees(quoted: str, exact: float, scale: float = 1.0) -> bool:
    """A figure quoted with n decimals agrees when it is the exact one rounded (half a unit of its last digit)."""
    decimals = len(quoted.split(".")[1]) if "." in quoted else 0
    return abs(float(quoted.replace(",", "")) - exact * scale) <= 0.5 * 10.0 ** -decimals + 1e-9


def headline_rows() -> dict[str, list[str]]:
    table = README[README.index("| headline figure"):].split("\n\n")[0].splitlines()[2:]
    return {row.split(" | ")[0].strip("| "): row.split(" | ")[1:] for row in table}


def test_readme_headline_apgr_is_the_shipped_artefacts_report():
    [(name, cells)] = [(name, cells) for name, cells in headline_rows().items() if "held-out APGR" in name]
    assert "MMLU / GSM8K / MT-Bench" in name
    quoted = [q.strip() for q in cells[0].split("/")]
    exact = [REPORT[name]["router"]["apgr"] for name in ("mmlu", "gsm8k", "mt_bench")]
    assert len(quoted) == 3 and all(agrees(q, e) for q, e in zip(quoted, exact)), (quoted, exact)


def test_data_card_quality_table_is_the_shipped_artefacts_report():
    rows = {"MT-Bench (never trained on)": "mt_bench", "MMLU": "mmlu", "GSM8K": "gsm8k"}
    for label, name in rows.items():
        [line] = [line for line in CARD.splitlines() if line.startswith(f"| {label} |")]
        items, apgr, cpt50, cpt80, quantiles, _random, oracle = [c.strip(" *%") for c in line.split("|")[2:9]]
        figures = REPORT[name]
        assert int(items.replace(",", "")) == figures["items"], label
        assert agrees(apgr, figures["router"]["apgr"]), (label, apgr)
        assert agrees(cpt50, figures["router"]["cpt50"], 100) and agrees(cpt80, figures["router"]["cpt80"], 100), label
        assert agrees(quantiles, figures["router_quantile"]["apgr"]), (label, quantiles)
        assert agrees(oracle, figures["oracle"]["apgr"]), (label, oracle)


def test_data_card_routerdc_figures_are_the_shipped_artefacts_report():
    sentence = " ".join(CARD[CARD.index("Among RouterDC's 7 open models"):].split("\n\n")[0].split())
    found = re.findall(r"(MMLU|GSM8K|ARC|HumanEval|CMMLU) (\d\.\d+) vs (?:the best single model )?(\d\.\d+)", sentence)
    quoted = {label: (router, best) for label, router, best in found}
    assert set(quoted) == {"MMLU", "GSM8K", "ARC", "HumanEval", "CMMLU"}
    for label, (router, best) in quoted.items():
        figures = REPORT[f"routerdc_{label.lower()}"]
        assert agrees(router, figures["router"]) and agrees(best, figures["best_single"]), (label, router, best)


def test_other_readme_headline_figures_are_in_docs_benchmarks():
    for name, cells in headline_rows().items():
        if "held-out APGR" in name:
            continue
        for figure in NUMBER.findall(cells[0]):
            assert figure in BENCHMARKS, f"README headline {name!r} quotes {figure}, which docs/benchmarks.md lacks"
