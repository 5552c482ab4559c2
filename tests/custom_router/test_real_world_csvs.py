"""Uploads a real user sends, and hostile variants of them: each is accepted or refused with a 400 that says why,
never a 500. Excel's "CSV (Macintosh)" ends lines with CR alone; a spreadsheet may carry a stray CR in the header."""

from __future__ import annotations

import json
import random

import pytest

from tests.support.envelopes import error

MODELS = ("openai/gpt-4o", "openai/gpt-4o-mini")
COLUMNS = ["prompt"] + [f"{m}/{k}" for m in MODELS for k in ("score", "response")]


def table(n: int = 30) -> list[list[str]]:
    return [[f"question {i}: what is {i} + {i}?", "1", "ok", str(i % 2), "ok"] for i in range(n)]


def as_csv(rows: list[list[str]], header: list[str] = COLUMNS, newline: str = "\n") -> bytes:
    return (newline.join(",".join(row) for row in [header, *rows]) + newline).encode()


@pytest.mark.parametrize("newline", ["\r", "\r\n", "\n"])
def test_every_line_ending_is_accepted(auth, upload, newline):
    response = upload(auth(), csv=as_csv(table(), newline=newline))
    assert response.status_code == 200, response.text


def test_a_stray_carriage_return_in_the_header_is_a_clear_answer(auth, upload):
    header = ",".join(COLUMNS).replace("openai/gpt-4o/response", "openai/gpt-4o/response\r", 1)
    data = as_csv(table()).replace(",".join(COLUMNS).encode(), header.encode(), 1)
    response = upload(auth(), csv=data)
    # The CR ends the header early, so the rows have more fields than the header: a 400 saying so (no 500).
    assert "more fields" in error(response, 400, "INVALID_CSV")["message"]


def test_a_header_cell_beyond_the_csv_field_limit_is_a_400_naming_the_limit(auth, upload):
    data = as_csv(table(), header=COLUMNS + ["x" * 140_000])
    body = error(upload(auth(), csv=data), 400, "COLUMN_NAME_TOO_LONG")
    assert "1,000" in body["message"]


def test_a_long_column_name_is_a_400(auth, upload):
    data = as_csv(table(), header=COLUMNS + ["y" * 5_000])
    assert error(upload(auth(), csv=data), 400, "COLUMN_NAME_TOO_LONG")["details"]["maximum"] == 1_000


def test_a_prompt_column_that_is_a_model_column_is_a_400(auth, upload):
    body = error(upload(auth(), csv=as_csv(table()), prompt_column="openai/gpt-4o/score"), 400,
                 "INVALID_PROMPT_COLUMN")
    assert "openai/gpt-4o/score" in body["message"]


def test_llm_providers_nested_too_deep_is_a_400(auth, upload):
    deep = "[" * 100_000 + "]" * 100_000
    providers = json.dumps([{"provider": "openai", "model": "gpt-4o"}, {"provider": "openai",
                                                                          "model": "gpt-4o-mini"}])
    hostile = providers[:-1] + ', {"provider": "x", "model": "y", "extra": ' + deep + "}]"
    assert error(upload(auth(), csv=as_csv(table()), llm_providers=hostile), 400, "INVALID_LLM_PROVIDERS")


def test_hostile_files_get_a_clear_answer_never_a_500(auth, upload):
    rng = random.Random(7)
    good = as_csv(table())
    variants = [
        b"\x00" * 200, b'"' * 5_000, b"prompt\n" + b'"unterminated\n' * 40, good.replace(b",", b";"),
        good[: len(good) // 2], b"\r" * 1000, b"\n\n\n", b",,,,\n" * 50, good.replace(b"\n", b"\x0b"),
        bytes(rng.randrange(256) for _ in range(4_000)), good + b'"open quote at the end',
        b"prompt," * 999 + b"prompt\n", good.replace(b"1,ok", b'"1\r\n",ok'),
    ]
    headers = auth()
    for data in variants:
        response = upload(headers, csv=data)
        assert response.status_code in (200, 400), (data[:60], response.status_code, response.text[:300])
        if response.status_code == 400:
            assert response.json()["error"]["message"]
