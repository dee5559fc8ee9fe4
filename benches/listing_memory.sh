#!/usr/bin/env bash
# Peak RSS (VmHWM) of `toolsearch serve` once it has listed one hostile upstream whose single
# tools/list answer is about 14 MB, for each listing shape of tests/fixtures/mcp/servers/hostile.mjs:
# many small tools (past the tool cap), one huge schema, and 64 kept wide schemas.
#   benches/listing_memory.sh [path/to/toolsearch]   (default: target/release/toolsearch)
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-target/release/toolsearch}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
for listing in many huge schemas; do
  printf '{"mcp":{"servers":{"h":{"command":"node","args":["%s","--listing","%s","--bytes","14000000"]}}}}' \
    "$PWD/tests/fixtures/mcp/servers/hostile.mjs" "$listing" >"$dir/config.json"
  coproc SERVE { exec "$bin" serve --mode tools --config "$dir/config.json" 2>&1 >/dev/null; }
  pid=$SERVE_PID
  while read -r line <&"${SERVE[0]}"; do [[ $line == *serving* ]] && break; done
  echo "$listing: $(awk '/VmHWM/ {printf "%d MiB", $2/1024}' "/proc/$pid/status")"
  kill "$pid"; wait "$pid" 2>/dev/null || true
done
