#!/bin/bash
# Runs inside the sandbox-agent image (test-runtime.sh) as uid 1000 with a writable /workspace:
# uses each developer tool the image promises once, the way an agent would.
set -euo pipefail
cd /workspace
git init -q repo
git -C repo -c user.email=t@example.invalid -c user.name=t commit -q --allow-empty -m init
[[ $(git -C repo log --oneline | wc -l) == 1 ]]
python3 -c 'import json, sqlite3, ssl, hashlib, zlib, subprocess, urllib.request; print(json.dumps({"py": 1}))' >/dev/null
curl --version >/dev/null
[[ $(echo '{"a": 41}' | jq '.a + 1') == 42 ]]
npm --version >/dev/null
printf 'hello\n' >f
tar -czf f.tgz f && tar -tzf f.tgz | grep -qx f
xz -k f && bzip2 -k f && gzip -k f
printf 'hello\nworld\n' >g
diff f g >f.patch || true
patch -s f <f.patch && cmp -s f g
less --version >/dev/null
unzip -v >/dev/null
[[ $(find . -maxdepth 1 -name 'f.*' | wc -l) -ge 4 ]]
# The agent's terminal helper: a program on a new PTY of the given size (stdin held open for 1 s).
[[ $( (sleep 1) | /opt/sandbox-agent/sandbox-pty 80 24 -- stty size | tr -d '\r') == '24 80' ]]
echo "agent-tools: all ok"
