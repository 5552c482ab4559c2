"""Every notebook in notebooks/ runs top to bottom against the seeded data dir (so they never rot) and draws its
charts. The kernel is the running interpreter's own ipykernel: no kernelspec is installed for the test, and a
kernelspec in the user's home cannot shadow it."""

from __future__ import annotations

import sys
from pathlib import Path

import nbformat
import pytest
from jupyter_client.manager import KernelManager
from nbclient import NotebookClient

NOTEBOOKS = sorted((Path(__file__).resolve().parents[2] / "notebooks").glob("*.ipynb"))
# Text each notebook must show from the seeded data (its tables are not empty).
EXPECTED_TEXT = {"01_usage_and_cost": "optimize-prompt", "02_routing_and_feedback": "custom",
                 "03_custom_router_evaluation": "oracle", "04_prompt_optimization": "completed"}


def test_the_four_notebooks_exist():
    assert [p.stem for p in NOTEBOOKS] == sorted(EXPECTED_TEXT)


@pytest.fixture
def kernel(seeded, tmp_path, monkeypatch) -> KernelManager:
    monkeypatch.setenv("SWITCHBOARD_DATA_DIR", str(seeded.data_dir))  # the kernel inherits the environment
    monkeypatch.setenv("JUPYTER_DATA_DIR", str(tmp_path / "jupyter"))  # no user-level kernelspecs
    manager = KernelManager(kernel_name="python3")
    assert manager.format_kernel_cmd()[0] == sys.executable, manager.format_kernel_cmd()
    return manager


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_runs_and_draws(path: Path, kernel: KernelManager, tmp_path: Path):
    notebook = nbformat.read(path, as_version=4)
    NotebookClient(notebook, km=kernel, timeout=180, resources={"metadata": {"path": str(tmp_path)}}).execute()

    outputs = [out for cell in notebook.cells if cell.cell_type == "code" for out in cell.outputs]
    assert not [out for out in outputs if out.output_type == "error"]
    chart_cells = [c for c in notebook.cells if c.cell_type == "code" and "charts." in c.source
                   and "analytics.connect" not in c.source]
    for cell in chart_cells:
        assert any("image/png" in out.get("data", {}) for out in cell.outputs), cell.source
    assert len(chart_cells) >= 1
    text = "".join(out.get("data", {}).get("text/plain", "") + out.get("text", "") for out in outputs)
    assert EXPECTED_TEXT[path.stem] in text
