"""The official Python e2b SDK (pinned in requirements.txt) against the gateway's E2B API.

Run by e2b-python.e2e.test.ts with E2B_API_URL, E2B_SANDBOX_URL, E2B_API_KEY (a key of the e2e
tenant) and E2B_OTHER_API_KEY (the other tenant's). Prints "ok <step>" for every step that passed;
a failed assertion or an unexpected exception ends it with a traceback (exit status 1).
"""

import os
import time

from e2b import (
    AuthenticationException,
    CommandExitException,
    FileNotFoundException,
    InvalidArgumentException,
    PtySize,
    Sandbox,
    SandboxException,
    SandboxNotFoundException,
)

OPTS = dict(
    api_key=os.environ["E2B_API_KEY"],
    api_url=os.environ["E2B_API_URL"],
    sandbox_url=os.environ["E2B_SANDBOX_URL"],
)
OTHER = dict(OPTS, api_key=os.environ["E2B_OTHER_API_KEY"])


def ok(step: str) -> None:
    print("ok", step, flush=True)


def raises(exc: type, fn) -> BaseException:
    try:
        fn()
    except exc as e:  # noqa: PERF203
        return e
    raise AssertionError(f"expected {exc.__name__}")


sbx = Sandbox.create(**OPTS)
ok("create")

r = sbx.commands.run("echo hi")
assert (r.stdout, r.exit_code) == ("hi\n", 0), r
e = raises(CommandExitException, lambda: sbx.commands.run("echo out; exit 3"))
assert e.exit_code == 3 and e.stdout == "out\n", e
ok("commands.run")

h = sbx.commands.run("echo started; sleep 60", background=True)
assert h.pid in [p.pid for p in sbx.commands.list()]
assert h.kill()
assert h.pid not in [p.pid for p in sbx.commands.list()]
ok("background command killed")

h = sbx.commands.run("cat", background=True, stdin=True)
sbx.commands.send_stdin(h.pid, "from stdin\n")
sbx.commands.close_stdin(h.pid)
assert h.wait().stdout == "from stdin\n"
ok("stdin")

blob = bytes(range(256)) * 64
sbx.files.write("py/text.txt", "hello from python")
sbx.files.write("py/blob.bin", blob)
assert sbx.files.read("py/text.txt") == "hello from python"
assert sbx.files.read("py/blob.bin", format="bytes") == blob
assert sorted(x.name for x in sbx.files.list("py")) == ["blob.bin", "text.txt"]
sbx.files.remove("py/text.txt")
assert not sbx.files.exists("py/text.txt")
ok("files")

sbx.files.make_dir("py/watched")
watcher = sbx.files.watch_dir("py/watched")
sbx.files.write("py/watched/new.txt", "x")
events = []
for _ in range(30):
    events += watcher.get_new_events()
    if any(ev.name == "new.txt" for ev in events):
        break
    time.sleep(0.5)
assert any(ev.name == "new.txt" for ev in events), events
watcher.stop()
ok("watch")

out = []
pty = sbx.pty.create(size=PtySize(rows=24, cols=80))
sbx.pty.resize(pty.pid, PtySize(rows=40, cols=100))
sbx.pty.send_stdin(pty.pid, b"stty size; echo typed-$((6*7)); exit\n")
pty.wait(on_pty=out.append)
text = b"".join(out).decode(errors="replace")
assert "typed-42" in text and "40 100" in text, text
ok("pty")

sbx.set_timeout(900)
sbx.pause()
assert Sandbox.get_info(sbx.sandbox_id, **OPTS).state.value == "paused"
back = Sandbox.connect(sbx.sandbox_id, **OPTS)
assert back.files.read("py/blob.bin", format="bytes") == blob
ok("pause and connect")

assert sbx.sandbox_id in [s.sandbox_id for s in Sandbox.list(**OPTS).next_items()]
assert sbx.sandbox_id not in [s.sandbox_id for s in Sandbox.list(**OTHER).next_items()]
raises(SandboxNotFoundException, lambda: Sandbox.connect(sbx.sandbox_id, **OTHER))
assert Sandbox.kill(sbx.sandbox_id, **OTHER) is False
ok("other key refused")

raises(InvalidArgumentException, lambda: back.files.read("/etc/passwd"))
raises(InvalidArgumentException, lambda: back.files.write("big.bin", b"x" * (16 * 1024 * 1024 + 1)))
raises(FileNotFoundException, lambda: back.files.read("py/none.txt"))
err = raises(SandboxException, lambda: Sandbox.create("no-such-template", **OPTS))
assert "404" in str(err), err
raises(AuthenticationException, lambda: Sandbox.list(**dict(OPTS, api_key="not-a-key-0123456789abcdef")).next_items())
ok("bad input")

assert back.kill()
assert Sandbox.kill(sbx.sandbox_id, **OPTS) is False
ok("kill")
