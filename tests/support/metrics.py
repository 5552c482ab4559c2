"""Reading GET /metrics's text in tests: one sample's value by name and labels."""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families


def samples(text: str) -> list[tuple[str, dict[str, str], float]]:
    return [(s.name, s.labels, s.value) for family in text_string_to_metric_families(text) for s in family.samples]


def value(text: str, name: str, **labels: str) -> float:
    """The sum of the samples named `name` whose labels include `labels` (0 when there is none yet)."""
    return sum(v for n, got, v in samples(text) if n == name and all(got.get(k) == x for k, x in labels.items()))
