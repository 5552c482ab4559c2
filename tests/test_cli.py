"""The `switchboard` console command, run as a real subprocess from .venv/bin against a temp data dir."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import httpx
import msgspec
import pytest

from api.cli.processes import Child, free_port
from storage import owner
from storage.keys import hash_key
from storage.store import LocalStore

REPO = Path(__file__).resolve().parents[1]
SWITCHBOARD = str(REPO / ".venv" / "bin" / "switchboard")
PYTHON = str(REPO / ".venv" / "bin" / "python")


def env_for(data_dir: Path, **extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update(SWITCHBOARD_DATA_DIR=str(data_dir), LITELLM_LOCAL_MODEL_COST_MAP="True", **extra)
    env.pop("PREFECT_API_URL", None)
    return env


@pytest.fixture
def cli(tmp_path: Path):
    data_dir = tmp_path / "data"

    def run(*args: str, expect: int | None = 0) -> subprocess.CompletedProcess:
        done = subprocess.run([SWITCHBOARD, *args], capture_output=True, text=True, env=env_for(data_dir),
                              cwd=tmp_path, timeout=120)
        if expect is not None:
            assert done.returncode == expect, (args, done.returncode, done.stdout, done.stderr)
        return done

    run.data_dir = data_dir  # type: ignore[attr-defined]
    return run


def open_store(data_dir: Path) -> LocalStore:
    return LocalStore(data_dir / "switchboard.duckdb")


def test_keys_create_prints_the_key_last_and_it_authenticates(cli):
    done = cli("keys", "create", "--user", "u", "--org", "o", "--tier", "startup", "--prompt-optimization")
    lines = done.stdout.strip().splitlines()
    key = lines[-1].strip()
    assert key.startswith("sb-") and " " not in key
    assert "shown only once" in done.stdout
    assert "tier startup" in lines[0] and "organization o" in lines[0] and "prompt optimization on" in lines[0]
    store = open_store(cli.data_dir)
    try:
        user = store.accounts.user_for_key(hash_key(key))
        assert (user.user_id, user.organization_id, user.tier, user.prompt_optimization, user.is_admin) == \
            ("u", "o", "startup", True, False)
    finally:
        store.close()


def test_keys_create_defaults_and_second_key_for_the_same_user(cli):
    first = cli("keys", "create", "--user", "bob").stdout.strip().splitlines()[-1]
    second_out = cli("keys", "create", "--user", "bob", "--tier", "starter").stdout
    second = second_out.strip().splitlines()[-1]
    assert first != second
    store = open_store(cli.data_dir)
    try:
        # Defaults for a new user; the second call changed only the tier.
        one, two = store.accounts.user_for_key(hash_key(first)), store.accounts.user_for_key(hash_key(second))
        assert msgspec.structs.replace(one, key_id=None) == msgspec.structs.replace(two, key_id=None)
        assert one.key_id != two.key_id  # the same user, through two keys
        user = store.accounts.user_for_key(hash_key(first))
        assert (user.organization_id, user.tier, user.prompt_optimization) == ("bob", "starter", False)
    finally:
        store.close()


def test_keys_list_shows_prefixes_never_keys(cli):
    keys = [cli("keys", "create", "--user", name).stdout.strip().splitlines()[-1] for name in ("ann", "ben")]
    listing = cli("keys", "list").stdout
    lines = listing.strip().splitlines()
    assert lines[0].split()[:2] == ["key", "id"] and len(lines) == 3
    for key, line in zip(keys, lines[1:]):
        assert key[:9] in line and line.rstrip().endswith("active")
        assert key not in listing
        assert key[:12] not in listing  # not even a longer prefix
        assert hash_key(key) not in listing


def test_keys_list_on_an_empty_data_dir(cli):
    lines = cli("keys", "list").stdout.strip().splitlines()
    assert len(lines) == 1 and "prefix" in lines[0]


def test_keys_revoke_by_prefix_and_by_key(cli):
    a = cli("keys", "create", "--user", "a").stdout.strip().splitlines()[-1]
    b = cli("keys", "create", "--user", "b").stdout.strip().splitlines()[-1]
    out = cli("keys", "revoke", a[:9]).stdout
    assert "revoked key" in out and a[:9] in out and "user a" in out
    assert a not in out
    cli("keys", "revoke", b)
    listing = cli("keys", "list").stdout
    assert listing.count("revoked") == 2
    store = open_store(cli.data_dir)
    try:
        assert store.accounts.user_for_key(hash_key(a)) is None and store.accounts.user_for_key(hash_key(b)) is None
    finally:
        store.close()


def test_keys_revoke_bad_ref_exits_1_with_a_message(cli):
    key = cli("keys", "create", "--user", "a").stdout.strip().splitlines()[-1]
    done = cli("keys", "revoke", "sb-nothing", expect=1)
    assert "no API key matches 'sb-nothing'" in done.stderr
    assert "Traceback" not in done.stderr
    store = open_store(cli.data_dir)
    try:
        assert store.accounts.user_for_key(hash_key(key)) is not None  # nothing revoked
    finally:
        store.close()


def run_in_process(capsys, *args: str) -> tuple[int, str, str]:
    """Argument parsing through the same entry point, without paying for a process start."""
    from api.cli.main import main

    with pytest.raises(SystemExit) as exited:
        main(list(args))
    out, err = capsys.readouterr()
    return exited.value.code, out, err


def test_help_from_the_installed_command(cli):
    done = cli("--help")
    assert done.stdout.startswith("usage: switchboard")
    assert "serve" in done.stdout and "keys" in done.stdout


@pytest.mark.parametrize("args, expected", [
    (("serve", "--help"), "--port"),
    (("keys", "--help"), "revoke"),
    (("keys", "create", "--help"), "--prompt-optimization"),
    (("keys", "list", "--help"), "usage"),
    (("keys", "revoke", "--help"), "usage"),
])
def test_help_everywhere(capsys, args, expected):
    code, out, _ = run_in_process(capsys, *args)
    assert code == 0
    assert out.startswith("usage: switchboard")
    assert expected in out


def test_serve_help_documents_host_and_port(capsys):
    _, out, _ = run_in_process(capsys, "serve", "--help")
    assert "--host" in out and "--port" in out


def test_bad_tier_exits_2_from_the_installed_command(cli):
    done = cli("keys", "create", "--user", "x", "--tier", "gold", expect=2)
    assert "invalid choice: 'gold'" in done.stderr
    assert not (cli.data_dir / "switchboard.duckdb").exists()  # refused before storage was touched


@pytest.mark.parametrize("args, message", [
    (("keys", "create", "--user", "x", "--tier", "gold"), "invalid choice: 'gold'"),
    (("keys", "create"), "--user"),
    (("keys",), "required"),
    ((), "required"),
    (("keys", "create", "--user", "x", "--port", "1"), "unrecognized arguments"),
    (("keys", "revoke"), "key"),
    (("serve", "--port", "eighty"), "invalid int value"),
])
def test_usage_errors_exit_2(capsys, args, message):
    code, _, err = run_in_process(capsys, *args)
    assert code == 2
    assert message in err


def test_blank_user_gets_a_clear_error(cli):
    done = cli("keys", "create", "--user", "  ", expect=1)
    assert "user id must not be empty" in done.stderr
    assert "Traceback" not in done.stderr


def test_a_locked_database_gets_a_clear_error(cli, tmp_path):
    holder = subprocess.Popen([PYTHON, "-c", (
        "import sys; from pathlib import Path; from storage.store import LocalStore; "
        f"s = LocalStore(Path({str(cli.data_dir / 'switchboard.duckdb')!r})); print('held', flush=True); "
        "sys.stdin.read()")], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env_for(cli.data_dir),
        cwd=REPO)
    try:
        assert holder.stdout.readline().strip() == "held"
        done = cli("keys", "list", expect=None)
        assert done.returncode == 1, done.stderr
        assert "opened for writing by another process" in done.stderr
        assert "Traceback" not in done.stderr
    finally:
        holder.stdin.close()
        holder.wait(timeout=30)


# --- while the API runs, the CLI goes through the owner ---------------------------------------------


@pytest.fixture
def running_api(cli):
    port = free_port()
    cli.data_dir.mkdir(parents=True, exist_ok=True)
    log = open(cli.data_dir.parent / "granian.log", "wb")
    process = subprocess.Popen(
        [PYTHON, "-m", "granian", "--interface", "asgi", "--factory", "--host", "127.0.0.1", "--port", str(port),
         "api.app:create_app"], env=env_for(cli.data_dir, SWITCHBOARD_PORT=str(port)), cwd=REPO,
        stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            assert process.poll() is None, (cli.data_dir.parent / "granian.log").read_text()
            assert time.monotonic() < deadline, "API did not start"
            try:
                if httpx.get(url + "/internal/health", timeout=1).status_code == 200 and \
                        owner.owner_file(cli.data_dir / "run").exists():
                    break
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        yield url
    finally:
        Child("API", process).stop(timeout=20)
        log.close()


def test_cli_works_while_the_api_owns_the_database(cli, running_api):
    create = "/v2/preferences/userPreferenceCreate"
    key = cli("keys", "create", "--user", "live").stdout.strip().splitlines()[-1]
    headers = {"Authorization": f"Bearer {key}"}
    assert httpx.post(running_api + create, json={}, headers=headers).status_code == 200  # cached now
    assert key[:9] in cli("keys", "list").stdout
    cli("keys", "revoke", key[:9])
    response = httpx.post(running_api + create, json={}, headers=headers)
    assert response.status_code == 401  # revocation took effect at once, despite the auth cache
    done = cli("keys", "revoke", "sb-unknown", expect=1)
    assert "no API key matches" in done.stderr and "Traceback" not in done.stderr


def test_keys_create_without_a_data_dir_refuses_instead_of_creating_one(tmp_path: Path):
    """Issue 34: with SWITCHBOARD_DATA_DIR unset and no ./data where it runs, `keys create` would make a fresh
    ./data beside a running service; it says so and creates nothing."""
    env = env_for(tmp_path / "unused")
    env.pop("SWITCHBOARD_DATA_DIR")
    done = subprocess.run([SWITCHBOARD, "keys", "create", "--user", "u"], capture_output=True, text=True, env=env,
                          cwd=tmp_path, timeout=120)
    assert done.returncode == 1 and "SWITCHBOARD_DATA_DIR" in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "data").exists() and "sb-" not in done.stdout


def test_keys_rotate_budget_and_rate_limit_from_the_cli(cli):
    created = cli("keys", "create", "--user", "u", "--org", "o", "--admin")
    key_id = next(line.split()[2].rstrip(";") for line in created.stdout.splitlines() if line.startswith("key id"))
    rotated = cli("keys", "rotate", key_id, "--grace-seconds", "60")
    assert "works until" in rotated.stdout and rotated.stdout.strip().splitlines()[-1].startswith("sb-")
    assert "daily budget $1.5000" in cli("keys", "budget", "key", key_id, "day", "1.5").stdout
    refused = cli("keys", "budget", "key", key_id, "day", "-1", expect=1)
    assert "limit_usd" in refused.stderr and "Traceback" not in refused.stderr
    assert "rate limit 30" in cli("keys", "rate-limit", key_id, "30").stdout
    listed = cli("keys", "list").stdout
    assert key_id in listed and "valid until" in listed
    store = open_store(cli.data_dir)
    try:
        assert [b.limit_usd for b in store.budgets.budgets("o")] == [1.5]
        assert {e.actor for e in store.accounts.audit("o")} == {"cli"}
    finally:
        store.close()
