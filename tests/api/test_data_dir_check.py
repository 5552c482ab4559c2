"""A data dir that cannot be written at start (read-only, no space, a file in the way) stops `switchboard` with one
clear line on stderr and exit code 1, never a traceback from deep inside DuckDB or Prefect."""

from __future__ import annotations

import errno
import os
import subprocess
import sys
from pathlib import Path

import pytest

from api.settings import check_data_dir

SWITCHBOARD = Path(sys.executable).parent / "switchboard"


def run_cli(data_dir: Path, *args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, SWITCHBOARD_DATA_DIR=str(data_dir))
    return subprocess.run([str(SWITCHBOARD), *args], env=env, capture_output=True, text=True, timeout=120)


def assert_one_clear_line(done: subprocess.CompletedProcess, says: str) -> None:
    assert done.returncode == 1, done
    assert "Traceback" not in done.stderr + done.stdout, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and says in lines[0] and "SWITCHBOARD_DATA_DIR" in lines[0], done.stderr


def test_a_file_in_the_way_stops_serve_with_one_line(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("x")
    assert_one_clear_line(run_cli(blocker / "data", "serve"), "is not a directory")
    assert_one_clear_line(run_cli(blocker / "data", "keys", "list"), "is not a directory")


def test_a_read_only_data_dir_stops_serve_with_one_line(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    data.chmod(0o555)
    try:
        (data / "probe").write_text("x")  # root ignores file modes: the check has nothing to see then
        (data / "probe").unlink()
        pytest.skip("running as root: chmod does not make a directory read-only (EROFS is simulated below)")
    except PermissionError:
        pass
    try:
        assert_one_clear_line(run_cli(data, "serve"), "is not writable")
    finally:
        data.chmod(0o755)


@pytest.mark.parametrize(("code", "says"), [(errno.ENOSPC, "has no space left"), (errno.EDQUOT, "has no space left"),
                                            (errno.EROFS, "is not writable")])
def test_a_full_or_read_only_disk_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, code: int,
                                           says: str) -> None:
    def full_disk(path: Path) -> None:  # the fake fails at the first write, as a full disk would
        raise OSError(code, os.strerror(code), str(path))

    monkeypatch.setattr("api.settings._write_probe", full_disk)
    with pytest.raises(SystemExit) as stopped:
        check_data_dir(tmp_path / "data")
    message = str(stopped.value.code)
    assert message.startswith("error: the data dir") and says in message and "\n" not in message
    assert not list((tmp_path / "data").iterdir())  # no probe left behind


def test_cli_serve_checks_before_starting_anything(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from api.cli.main import main
    from api.settings import reset_settings

    monkeypatch.setenv("SWITCHBOARD_DATA_DIR", str(tmp_path / "data"))
    reset_settings()
    def full_disk(path: Path) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr("api.settings._write_probe", full_disk)
    monkeypatch.setattr("api.cli.main.serve", lambda *a: pytest.fail("serve started on a full disk"))
    try:
        with pytest.raises(SystemExit, match="no space left"):
            main(["serve"])
    finally:
        reset_settings()


def test_a_healthy_data_dir_passes_and_is_created(tmp_path: Path) -> None:
    check_data_dir(tmp_path / "new" / "data")
    assert (tmp_path / "new" / "data").is_dir() and not list((tmp_path / "new" / "data").iterdir())
