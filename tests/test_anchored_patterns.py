"""Issue 31, item 10: a pattern anchored with `$` also matches before a final newline, so `judge_model:
"openai/gpt-4o\\n"` passed `^...$` and was stored. Every regex literal in the project's code ends in `\\Z` (or is
used with fullmatch) instead: this test reads the source and names any pattern that ends in an unescaped `$`."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import msgspec
import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("api", "flows", "storage", "benchmarks", "datasets")
RE_FUNCTIONS = {"compile", "match", "search", "fullmatch", "sub", "subn", "findall", "finditer", "split"}


def _text(node: ast.AST) -> str | bytes | None:
    """A string literal, or the literal tail of an f-string (where an end anchor would be)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, (str, bytes)):
        return node.value
    if isinstance(node, ast.JoinedStr) and node.values and isinstance(node.values[-1], ast.Constant):
        return node.values[-1].value
    return None


def _ends_with_dollar(pattern: str | bytes) -> bool:
    text = pattern.decode("latin-1") if isinstance(pattern, bytes) else pattern
    if not text.endswith("$"):
        return False
    backslashes = len(text[:-1]) - len(text[:-1].rstrip("\\"))
    return backslashes % 2 == 0  # `\$` is a literal dollar sign


def dollar_anchored(tree: ast.AST) -> list[int]:
    """Lines of re.<function>(pattern, ...) calls and `pattern=` keywords whose pattern ends in an anchoring `$`."""
    lines = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        patterns = [k.value for k in node.keywords if k.arg == "pattern"]
        func = node.func
        if (isinstance(func, ast.Attribute) and func.attr in RE_FUNCTIONS and isinstance(func.value, ast.Name)
                and func.value.id == "re" and node.args):
            patterns.append(node.args[0])
        lines += [node.lineno for p in patterns if (text := _text(p)) is not None and _ends_with_dollar(text)]
    return lines


def test_no_regex_in_the_code_is_anchored_with_a_dollar() -> None:
    found = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
            found += [f"{path.relative_to(ROOT)}:{line}" for line in dollar_anchored(tree)]
    assert not found, f"patterns anchored with $ (use \\Z or fullmatch): {found}"


def test_the_scan_finds_what_it_looks_for() -> None:
    sample = ast.parse('import re\nre.compile(r"^a$")\nMeta(pattern=f"^{x}$")\nre.match(r"\\$", s)\n'
                       're.search(r"a\\Z", s)\n')
    assert dollar_anchored(sample) == [2, 3]


@pytest.mark.parametrize("type_name, value", [("ModelName", "openai/gpt-4o\n"), ("ToolName", "get_weather\n"),
                                              ("ModelId", "gpt-4o\n")])
def test_the_schemas_patterns_refuse_a_final_newline(type_name: str, value: str) -> None:
    from api.schemas import common, model_select, preferences

    annotated = getattr(preferences, type_name, None) or getattr(model_select, type_name, None) or getattr(
        common, type_name)
    with pytest.raises(msgspec.ValidationError):
        msgspec.convert(value, annotated)
    msgspec.convert(value.rstrip("\n"), annotated)


def test_a_request_id_with_a_final_newline_is_not_echoed() -> None:
    from api.request_id import _SAFE

    assert _SAFE.fullmatch(b"abc-123") and not _SAFE.fullmatch(b"abc-123\n")
    assert re.fullmatch(r"[a-z]+", "abc\n") is None  # what fullmatch guarantees, unlike ^...$
