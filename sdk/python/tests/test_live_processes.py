"""Background processes (sync and asyncio) against a live gateway (the e2e tier's, or
sdk/scripts/with-local-gateway.sh)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

import sandbox_platform as sp
from conftest import Live

pytestmark = pytest.mark.live


@pytest.fixture(scope="module")
def session(live: Live) -> Iterator[tuple[sp.Client, str]]:
    name = live.session_name("sdk-pyp")
    with sp.Client(live.url, live.key, namespace=live.namespace) as client:
        client.create_session(name)
        try:
            client.wait_until_ready(name, timeout=120)
            yield client, name
        finally:
            try:
                client.delete_session(name)
            except (sp.NotFoundError, sp.SessionGoneError):
                pass


def test_start_wait_read_follow_and_remove(session: tuple[sp.Client, str]) -> None:
    client, name = session
    proc = client.start_process(name, "echo out; echo err >&2; sleep 0.3; printf 'a\\0b'; exit 3",
                                env={"X": "1"})
    assert proc.id and proc.pid > 0
    assert proc.id in [p.id for p in client.list_processes(name)]
    done = client.wait_process(name, proc.id, timeout=60)
    assert (done.state, done.exit_code, done.signal) == ("exited", 3, None)
    assert client.get_process(name, proc.id).stdout.size == 7

    out = client.process_output(name, proc.id)
    assert (out.stdout.data, out.stderr.data, out.stdout.next_offset) == (b"out\na\x00b", b"err\n", 7)
    tail = client.process_output(name, proc.id, stdout_offset=4, max_bytes=2)
    assert (tail.stdout.offset, tail.stdout.data, tail.stdout.next_offset) == (4, b"a\x00", 6)

    with client.follow_process(name, proc.id) as follow:
        events = list(follow)
    stdout = b"".join(e.data for e in events if isinstance(e, sp.ProcessOutputEvent) and e.stream == "stdout")
    assert stdout == b"out\na\x00b"
    assert events[-1] == sp.ProcessExitEvent(exit_code=3) == follow.exit
    assert (follow.stdout_offset, follow.stderr_offset) == (7, 4)

    client.remove_process(name, proc.id)
    with pytest.raises(sp.NotFoundError) as info:
        client.get_process(name, proc.id)
    assert info.value.code == "process-not-found"


def test_follow_a_running_process_then_signal_it(session: tuple[sp.Client, str]) -> None:
    client, name = session
    proc = client.start_process(name, "echo started; exec sleep 300")
    try:
        with pytest.raises(sp.ConflictError) as running:
            client.remove_process(name, proc.id)
        assert running.value.code == "process-running"
        with pytest.raises(sp.InvalidRequestError) as bad:
            client.signal_process(name, proc.id, "SIGSEGV")
        assert bad.value.code == "signal-not-allowed"

        # A follow that reaches its timeout ends without an exit event, at the offsets it saw.
        with client.follow_process(name, proc.id, timeout=2) as follow:
            seen = b"".join(e.data for e in follow if isinstance(e, sp.ProcessOutputEvent))
        assert (seen, follow.exit, follow.stdout_offset) == (b"started\n", None, 8)
    finally:
        client.signal_process(name, proc.id, "SIGTERM")
    done = client.wait_process(name, proc.id, timeout=60)
    assert (done.state, done.exit_code, done.signal) == ("exited", 143, "SIGTERM")
    client.remove_process(name, proc.id)


@pytest.mark.anyio
async def test_async_processes(live: Live) -> None:
    name = live.session_name("sdk-pypa")
    async with sp.AsyncClient(live.url, live.key, namespace=live.namespace) as client:
        await client.create_session(name)
        try:
            await client.wait_until_ready(name, timeout=120)
            proc = await client.start_process(name, "for i in 1 2 3; do echo $i; sleep 0.2; done")
            async with await client.follow_process(name, proc.id, timeout=60) as follow:
                out = b"".join([e.data async for e in follow if isinstance(e, sp.ProcessOutputEvent)])
            assert (out, follow.exit) == (b"1\n2\n3\n", sp.ProcessExitEvent(exit_code=0))
            assert (await client.wait_process(name, proc.id, timeout=30)).exit_code == 0
            assert (await client.process_output(name, proc.id)).stdout.data == b"1\n2\n3\n"
            assert [p.id for p in await client.list_processes(name)] == [proc.id]
            await client.remove_process(name, proc.id)
            with pytest.raises(sp.NotFoundError):
                await client.get_process(name, proc.id)
        finally:
            await client.delete_session(name)
