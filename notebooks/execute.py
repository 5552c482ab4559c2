"""`make notebooks`: run every analysts' notebook top to bottom against the configured data dir
(SWITCHBOARD_DATA_DIR, default ./data) with this virtual environment's own kernel (ipykernel, installed with the
test set), and write the executed copies, charts and tables included, to <data dir>/notebooks/. Open them in any
notebook viewer (JupyterLab, VS Code); to edit them live, install a Jupyter front end into the venv."""

from __future__ import annotations

import sys
from pathlib import Path

import nbformat
from jupyter_client.manager import KernelManager
from nbclient import NotebookClient

from api.settings import get_settings

HERE = Path(__file__).resolve().parent


def main() -> int:
    out = get_settings().data_dir / "notebooks"
    out.mkdir(parents=True, exist_ok=True)
    for path in sorted(HERE.glob("*.ipynb")):
        notebook = nbformat.read(path, as_version=4)
        kernel = KernelManager(kernel_name="python3")  # this interpreter's: ipykernel ships its kernelspec
        NotebookClient(notebook, km=kernel, timeout=600, resources={"metadata": {"path": str(out)}}).execute()
        nbformat.write(notebook, out / path.name)
        print(f"{path.name} -> {out / path.name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
