"""Hostile connections against a real granian server with the options `switchboard serve` gives it (api_argv), over
raw sockets to 127.0.0.1: idle sockets cannot lock ready requests out, connections that send nothing, half a head
or half a body are closed, and a body hyper cannot parse is a 400 in the envelope, not a 500.

The server runs with short timeouts (2 s for headers and body pauses, 5 s for a whole body) so that the tests wait
little; every wait below is a generous bound on an outcome (the server closed the socket, it answered), never a
measured duration."""

from __future__ import annotations

import http.client
import resource
import selectors
import socket
import time
from collections.abc import Iterator

import httpx
import pytest

from api.cli.http_options import DEFAULT_MAX_CONNECTIONS, RESERVED_FILES, max_connections
from api.settings import get_settings
from storage import owner
from tests.support.api_server import ApiServer
from tests.support.envelopes import assert_envelope

IDLE_SOCKETS = 1_100  # more than granian's default connection cap (1,024 per worker), which idle sockets used up
TIMEOUTS = {"SWITCHBOARD_HTTP_HEADER_TIMEOUT_S": "2", "SWITCHBOARD_HTTP_BODY_IDLE_TIMEOUT_S": "2",
            "SWITCHBOARD_HTTP_BODY_TIMEOUT_S": "5"}
GENEROUS_S = 60.0  # a bound on "eventually", far above the timeouts on the busiest machine


@pytest.fixture(scope="module")
def server(tmp_path_factory) -> Iterator[ApiServer]:
    srv = ApiServer(tmp_path_factory.mktemp("connections") / "data", extra_env=TIMEOUTS)
    try:
        yield srv
    finally:
        srv.kill()


@pytest.fixture(scope="module")
def key(server) -> str:
    store = owner.open_store(server.db_path, server.run_dir)
    try:
        return store.accounts.issue_key("connections").key
    finally:
        store.close()


def connect(server: ApiServer) -> socket.socket:
    return socket.create_connection(("127.0.0.1", server.port), timeout=GENEROUS_S)


def read_response(sock: socket.socket) -> httpx.Response:
    """One HTTP/1.1 response from a raw socket, as an httpx.Response for the envelope assertions."""
    raw = http.client.HTTPResponse(sock)
    raw.begin()
    return httpx.Response(raw.status, headers=raw.getheaders(), content=raw.read())


def closed_by_server(sock: socket.socket) -> bool:
    """Read until the server closes the socket (True) or GENEROUS_S passes (False)."""
    sock.settimeout(GENEROUS_S)
    try:
        while sock.recv(65536):
            pass
    except ConnectionResetError:
        return True
    except socket.timeout:
        return False
    return True


def enough_open_files(needed: int) -> None:
    """The test opens `needed` sockets; the server inherits this limit too (api/cli/http_options.py raises it)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < needed:
        if hard != resource.RLIM_INFINITY and hard < needed:
            pytest.skip(f"the hard limit on open files ({hard}) is below the {needed} this test needs")
        resource.setrlimit(resource.RLIMIT_NOFILE, (needed, hard))


def test_ready_requests_are_answered_while_1100_idle_connections_are_open(server, key):
    enough_open_files(IDLE_SOCKETS + 512)
    headers = {"Authorization": f"Bearer {key}"}
    with httpx.Client(base_url=server.url, headers=headers, timeout=30) as keep_alive:
        assert keep_alive.get("/v2/models").status_code == 200
        idle = [connect(server) for _ in range(IDLE_SOCKETS)]
        try:
            assert keep_alive.get("/v2/models").status_code == 200  # a client already connected
            assert httpx.get(f"{server.url}/v2/models", headers=headers, timeout=30).status_code == 200  # a new one
            # ... and the idle sockets do not stay: each is closed by the server after the header timeout.
            still_open = set(idle)
            deadline = time.monotonic() + GENEROUS_S
            with selectors.DefaultSelector() as selector:
                for sock in idle:
                    selector.register(sock, selectors.EVENT_READ)
                while still_open and time.monotonic() < deadline:
                    for ready, _ in selector.select(timeout=1.0):
                        sock = ready.fileobj
                        try:
                            data = sock.recv(1024)
                        except ConnectionResetError:
                            data = b""
                        assert data == b"", data  # nothing was asked, so nothing is answered
                        selector.unregister(sock)
                        still_open.discard(sock)
            assert not still_open, f"{len(still_open)} idle connections still open after {GENEROUS_S:g} s"
        finally:
            for sock in idle:
                sock.close()


@pytest.mark.parametrize("sent", [b"", b"GET /v2/models HTTP/1.1\r\nHost: x\r\n"], ids=["nothing", "half-a-head"])
def test_a_connection_that_never_completes_its_head_is_closed(server, sent):
    with connect(server) as sock:
        sock.sendall(sent)
        assert closed_by_server(sock)


def test_a_keep_alive_connection_left_idle_after_its_response_is_closed(server):
    with connect(server) as sock:
        sock.sendall(b"GET /internal/health HTTP/1.1\r\nHost: x\r\n\r\n")
        assert read_response(sock).status_code == 200
        assert closed_by_server(sock)


def test_a_body_declared_and_never_sent_is_a_408_and_the_connection_is_closed(server, key):
    with connect(server) as sock:
        sock.sendall(f"POST /v2/modelRouter/modelSelect HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {key}\r\n"
                     "Content-Type: application/json\r\nContent-Length: 100\r\n\r\n".encode())
        error = assert_envelope(read_response(sock), 408, "REQUEST_TIMEOUT", "timeout_error")
        assert "no bytes for 2 s" in error["message"]
        assert closed_by_server(sock)


def test_a_body_trickled_a_byte_at_a_time_is_a_408_once_its_whole_time_is_up(server, key):
    with connect(server) as sock:
        sock.sendall(f"POST /v2/modelRouter/modelSelect HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {key}\r\n"
                     "Content-Type: application/json\r\nContent-Length: 100000\r\n\r\n".encode())
        sock.settimeout(0.5)  # each byte comes well within the 2 s pause allowed
        response = None
        for _ in range(int(GENEROUS_S / 0.5)):
            try:
                sock.sendall(b" ")
                response = read_response(sock)
                break
            except socket.timeout:
                continue
            except (BrokenPipeError, ConnectionResetError):  # closed after answering: read what it said
                sock.settimeout(GENEROUS_S)
                response = read_response(sock)
                break
        assert response is not None, "the server kept reading a trickled body"
        error = assert_envelope(response, 408, "REQUEST_TIMEOUT", "timeout_error")
        assert "not complete within 5 s" in error["message"]


@pytest.mark.parametrize("chunks", [
    b"-5\r\nhello\r\n0\r\n\r\n",  # a negative size
    b"ffffffffffffffffff\r\nhello\r\n0\r\n\r\n",  # a size over 64 bits
    b"5;" + b"x" * 100_000 + b"\r\nhello\r\n0\r\n\r\n",  # a 100 KB chunk extension
    b"5\nhello\n0\n\n",  # lines ended by LF alone
], ids=["negative", "huge", "long-extension", "lf-only"])
def test_a_malformed_chunked_body_is_a_400_not_a_500(server, key, chunks):
    with connect(server) as sock:
        sock.sendall(f"POST /v2/modelRouter/modelSelect HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {key}\r\n"
                     "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n".encode() + chunks)
        error = assert_envelope(read_response(sock), 400, "MALFORMED_BODY", "invalid_request_error")
        assert "chunked" in error["message"]


def test_the_connection_cap_stays_below_the_open_file_limit(data_dir):
    settings = get_settings()
    assert max_connections(settings, open_files=1_024) == 1_024 - RESERVED_FILES  # EMFILE in accept otherwise
    assert max_connections(settings, open_files=1_048_576) == DEFAULT_MAX_CONNECTIONS  # memory bounds it then
    chosen = type(settings)(**{**settings.__dict__, "http_max_connections": 5_000})
    assert max_connections(chosen, open_files=1_048_576) == 5_000
    assert max_connections(chosen, open_files=2_048) == 2_048 - RESERVED_FILES
