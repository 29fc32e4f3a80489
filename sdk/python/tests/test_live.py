"""The synchronous client against a live gateway (the e2e tier's, or sdk/scripts/with-local-gateway.sh)."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

import sandbox_platform as sp
from conftest import Live

pytestmark = pytest.mark.live


@pytest.fixture(scope="module")
def session(live: Live) -> Iterator[tuple[sp.Client, str]]:
    name = live.session_name("sdk-py")
    with sp.Client(live.url, live.key, namespace=live.namespace) as client:
        first = client.create_session(name)
        again = client.create_session(name)
        assert (first.created, again.created, again.uid) == (True, False, first.uid)
        client.wait_until_ready(name, timeout=120)
        yield client, name
        try:
            client.delete_session(name)
        except (sp.NotFoundError, sp.SessionGoneError):
            pass


def test_get_and_list(session: tuple[sp.Client, str], live: Live) -> None:
    client, name = session
    got = client.get_session(name)
    assert got.ready and got.namespace == live.namespace
    assert name in [s.name for s in client.list_sessions()]


def test_exec_output_and_exit_code(session: tuple[sp.Client, str]) -> None:
    client, name = session
    result = client.exec(name, "echo out; echo err >&2; exit 3", timeout=30)
    assert (result.stdout, result.stderr, result.exit_code) == ("out\n", "err\n", 3)
    with pytest.raises(sp.CommandError):
        result.check_returncode()


def test_exec_stream(session: tuple[sp.Client, str]) -> None:
    client, name = session
    with client.exec_stream(name, "for i in 1 2 3; do echo $i; sleep 0.2; done; echo e >&2; exit 4") as stream:
        chunks = list(stream)
    assert b"".join(c.data for c in chunks if c.stream == "stdout") == b"1\n2\n3\n"
    assert b"".join(c.data for c in chunks if c.stream == "stderr") == b"e\n"
    assert stream.exit_code == 4


def test_files_round_trip_every_byte_value(session: tuple[sp.Client, str]) -> None:
    client, name = session
    data = bytes((i * 7 + 3) % 256 for i in range(70_000))
    written = client.write_file(name, "sdk-py/all-bytes.bin", data)
    assert (written.path, written.size) == ("sdk-py/all-bytes.bin", len(data))
    assert client.read_file(name, "sdk-py/all-bytes.bin") == data
    assert client.exec(name, "head -c 4 sdk-py/all-bytes.bin").stdout_bytes == bytes([3, 10, 17, 24])


def test_errors_are_typed(session: tuple[sp.Client, str], live: Live) -> None:
    client, name = session
    with pytest.raises(sp.NotFoundError) as nf:
        client.get_session("no-such-session-sdk")
    assert (nf.value.code, nf.value.status) == ("session-not-found", 404)
    with pytest.raises(sp.NotFoundError):
        client.exec("no-such-session-sdk", "true")
    for path in ("/etc/passwd", "../etc/passwd"):  # refused by the gateway, and before sending
        with pytest.raises(sp.PermissionDeniedError) as pf:
            client.read_file(name, path)
        assert pf.value.code == "path-forbidden"
    if live.other_namespace:
        with pytest.raises(sp.PermissionDeniedError) as fb:
            client.list_sessions(namespace=live.other_namespace)
        assert fb.value.code == "forbidden"


def test_wrong_key(live: Live) -> None:
    with sp.Client(live.url, "wrong-key-0123456789abcdef", namespace=live.namespace) as client:
        with pytest.raises(sp.AuthenticationError) as info:
            client.list_sessions()
    assert info.value.code == "unauthorized"


def test_gateway_down(closed_port: int) -> None:
    with sp.Client(f"http://127.0.0.1:{closed_port}", "any-key") as client:
        with pytest.raises(sp.APIConnectionError) as info:
            client.list_sessions()
    assert info.value.code == "connection-failed"
    assert "ECONNREFUSED" in str(info.value)


def test_delete(session: tuple[sp.Client, str]) -> None:
    client, name = session
    client.delete_session(name)
    # On a cluster the object outlives the call (the garbage collector removes the Pod and Secret
    # first, and the gateway reads a watch cache): right after the delete the gateway may still
    # answer with the session (reason Terminating, or as it was). It is gone within a bounded time.
    deadline = time.monotonic() + 60
    while True:
        try:
            got = client.get_session(name)
        except (sp.NotFoundError, sp.SessionGoneError):
            break
        assert time.monotonic() < deadline, f"{name} still there 60 s after its delete: {got.reason}"
        time.sleep(0.5)
