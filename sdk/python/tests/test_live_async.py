"""The asyncio client against a live gateway: the same calls as test_live.py, awaited."""

from __future__ import annotations

import pytest

import sandbox_platform as sp
from conftest import Live

pytestmark = [pytest.mark.live, pytest.mark.anyio]


async def test_async_client_end_to_end(live: Live, closed_port: int) -> None:
    name = live.session_name("sdk-pya")
    async with sp.AsyncClient(live.url, live.key, namespace=live.namespace) as client:
        created = await client.create_session(name)
        assert created.created
        try:
            await client.wait_until_ready(name, timeout=120)
            assert name in [s.name for s in await client.list_sessions()]

            result = await client.exec(name, "printf 'a\\0b'; exit 5")
            assert (result.stdout_bytes, result.exit_code) == (b"a\x00b", 5)

            async with await client.exec_stream(name, "echo 1; sleep 0.2; echo 2") as stream:
                out = b"".join([chunk.data async for chunk in stream])
            assert (out, stream.exit_code) == (b"1\n2\n", 0)

            data = bytes(range(256)) * 64
            await client.write_file(name, "sdk-pya/bytes.bin", data)
            assert await client.read_file(name, "sdk-pya/bytes.bin") == data

            with pytest.raises(sp.NotFoundError):
                await client.exec("no-such-session-sdk", "true")
            with pytest.raises(sp.NotFoundError):
                await client.read_file(name, "sdk-pya/missing.bin")
        finally:
            await client.delete_session(name)

    async with sp.AsyncClient(live.url, "wrong-key-0123456789abcdef") as wrong:
        with pytest.raises(sp.AuthenticationError):
            await wrong.get_session(name)
    async with sp.AsyncClient(f"http://127.0.0.1:{closed_port}", "k") as down:
        with pytest.raises(sp.APIConnectionError):
            await down.get_session(name)
