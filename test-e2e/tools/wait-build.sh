# Sourced by the Go build scripts (tools, localkube and its add-ons). wait_build PID LABEL START:
# waits for a background `go build`, polling every second (a warm Go cache links in seconds: a
# fixed 15 s sleep cost every cached build 15 s, ~2.5 min per clean clone) and saying every 15 s
# that it still compiles. Returns the build's exit status. Uses the caller's `say`.
wait_build() {
  local pid="$1" label="$2" start="$3" n=0
  while kill -0 "$pid" 2>/dev/null; do
    sleep 1
    n=$((n + 1))
    if [ $((n % 15)) -eq 0 ] && kill -0 "$pid" 2>/dev/null; then
      say "  still compiling${label:+ $label} ($(($(date +%s) - start)) s)..."
    fi
  done
  wait "$pid"
}
