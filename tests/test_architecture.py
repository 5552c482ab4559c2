"""The layering contract of docs/architecture.md (rule 10), read from the source with `ast`:

- storage imports nothing of the project's; api imports storage, and flows only through the launcher seam
  (flows/prefect_api.py, from api/launcher.py) and in the CLI package (api/cli, the composition root);
  flows imports api and storage; nothing imports tests or benchmarks;
- no import cycles between modules, counting imports inside functions;
- an import inside a function keeps a heavy library off a path, and says so in a `# lazy:` comment above it;
- code cites only files in the repository.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("api", "flows", "storage")
SEAM = "flows.prefect_api"


def modules() -> dict[str, Path]:
    found = {}
    for package in PACKAGES:
        for path in (REPO / package).rglob("*.py"):
            parts = path.relative_to(REPO).with_suffix("").parts
            found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def imports(path: Path, known: dict[str, Path]) -> Iterator[tuple[str, ast.stmt, bool]]:
    """(imported project module, the statement, whether it sits inside a function) for each project import.
    `from package import submodule` names the submodule; `from package import name` names the package."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    inside: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            inside.update(id(n) for n in ast.walk(node) if n is not node)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            targets = [f"{node.module}.{a.name}" if f"{node.module}.{a.name}" in known else node.module
                       for a in node.names]
        else:
            continue
        for target in targets:
            yield target, node, id(node) in inside


def graph() -> dict[str, set[str]]:
    known = modules()
    return {name: {t for t, _, _ in imports(path, known) if t.split(".")[0] in (*PACKAGES, "tests", "benchmarks")}
            for name, path in known.items()}


def allowed(importer: str, imported: str) -> bool:
    layer, target = importer.split(".")[0], imported.split(".")[0]
    if target in ("tests", "benchmarks"):
        return False
    if layer == "storage":
        return target == "storage"
    if layer == "api":
        if target == "flows":
            return imported == SEAM and importer == "api.launcher" or importer.startswith("api.cli")
        return target in ("api", "storage")
    return True  # flows may import api, storage and flows


def test_imports_run_one_way() -> None:
    upward = sorted(f"{a} -> {b}" for a, targets in graph().items() for b in targets if not allowed(a, b))
    assert upward == []


def test_the_seam_itself_imports_nothing_of_the_project() -> None:
    assert graph()[SEAM] == set()


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in edges.get(node, ()):
            if nxt not in edges:
                continue
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in edges:
        if node not in index:
            visit(node)
    return found


def test_no_module_cycles() -> None:
    assert cycles(graph()) == []


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_every_import_inside_a_function_says_why() -> None:
    known = modules()
    unexplained = []
    for name, path in known.items():
        lines = path.read_text(encoding="utf-8").splitlines()
        tree = ast.parse("\n".join(lines))
        for node in ast.walk(tree):
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for stmt in ast.walk(node):
                if not isinstance(stmt, (ast.Import, ast.ImportFrom)):
                    continue
                above = stmt.lineno - 2  # the line before, 0-based
                while above >= 0 and lines[above].strip().startswith(("from ", "import ")):
                    above -= 1  # a block of lazy imports shares one comment
                if above < 0 or not lines[above].strip().startswith("# lazy:"):
                    unexplained.append(f"{path.relative_to(REPO)}:{stmt.lineno}")
    assert unexplained == []


def test_code_cites_only_files_in_the_repository() -> None:
    outside = re.compile(r"house rule|ARCHITECTURE\.md|SPEC\.md|\bSPEC \d")
    hits = [f"{path.relative_to(REPO)}:{n}" for package in (*PACKAGES, "tests", "benchmarks")
            for path in (REPO / package).rglob("*.py") if path.resolve() != Path(__file__).resolve()
            for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1) if outside.search(line)]
    assert hits == []
    cited = {m.group(0) for package in PACKAGES for path in (REPO / package).rglob("*.py")
             for m in re.finditer(r"\bdocs/[\w./-]+\.md\b", path.read_text(encoding="utf-8"))}
    assert sorted(c for c in cited if not (REPO / c).exists()) == []
