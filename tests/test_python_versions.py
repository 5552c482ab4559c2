"""Which Python `make` builds the venv with (.ci/python.sh): the first of 3.11, 3.12, 3.13 on PATH, and one clear
line when there is none (requirements.lock is resolved for exactly those; `make check-pythons` installs each)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / ".ci" / "python.sh"


def fake_python(folder: Path, name: str, version: str) -> None:
    """A stand-in interpreter that reports `version` to the script's check."""
    major, minor = version.split(".")[:2]
    path = folder / name
    path.write_text(f"#!/bin/sh\nexec {sys.executable} -c \"import sys; "
                    f"sys.exit(not (3, 11) <= ({major}, {minor}) <= (3, 13))\" 2>/dev/null\n")
    path.chmod(0o755)


def choose(folder: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, PATH=str(folder))  # nothing else on PATH: this machine has its own pythons
    return subprocess.run(["/bin/sh", str(SCRIPT)], env=env, capture_output=True, text=True)


def test_a_supported_python3_is_chosen_when_no_versioned_name_exists(tmp_path):
    fake_python(tmp_path, "python3", "3.13.0")
    assert choose(tmp_path).stdout.strip() == str(tmp_path / "python3")


def test_an_unsupported_python3_is_refused_with_one_line(tmp_path):
    fake_python(tmp_path, "python3", "3.14.0")
    result = choose(tmp_path)
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr.count("\n") == 1 and "needs Python 3.11, 3.12 or 3.13" in result.stderr


def test_the_oldest_supported_version_wins(tmp_path):
    fake_python(tmp_path, "python3", "3.14.0")
    fake_python(tmp_path, "python3.12", "3.12.1")
    assert choose(tmp_path).stdout.strip() == str(tmp_path / "python3.12")
