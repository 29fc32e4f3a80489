#!/bin/bash
# Runs inside the testbox image (test-runtime.sh): starts netecho in echo and HTTP mode on
# ports $1 and $1+1 and talks to both over bash's /dev/tcp, printing what came back.
set -u
port=$1
netecho "$port" 2>/dev/null &
netecho --http $((port + 1)) 2>/dev/null &
# connect PORT FD: retries until the listener is up (at most 5 s).
connect() {
  local i
  for i in $(seq 50); do
    eval "exec $2<>/dev/tcp/127.0.0.1/$1" 2>/dev/null && return 0
    sleep 0.1
  done
  echo "cannot connect to $1" >&2
  return 1
}
connect "$port" 3
echo ping >&3
read -r line <&3
echo "echo:$line"
connect $((port + 1)) 4
printf 'GET / HTTP/1.0\r\n\r\n' >&4
read -r status <&4
echo "http:${status%$'\r'}"
kill %1 %2
