#!/usr/bin/env bash
# outside.sh — issue 20's measurement from outside: a Python MCP client
# against hive (through `hive mcp`, its daemon on a state dir of its own)
# and against bench/floor, interleaved, at several pauses between calls
# (bench/outside.py). Usage: bench/outside.sh [outside.py's flags], e.g.
#   bench/outside.sh --rounds 400 --pauses 0,0.02
# Needs python3. The daemon it starts is stopped at the end (hive stop).
set -euo pipefail
cd "$(dirname "$0")/.."
work=$(mktemp -d -t hive-outside.XXXXXX)
go build -o "$work/hive" ./cmd/hive
go build -o "$work/floor" ./bench/floor
mkdir -p "$work/state" "$work/floor-dir"
stop() {
	"$work/hive" stop --state-dir "$work/state" >/dev/null 2>&1 || true
	rm -rf "$work"
}
trap stop EXIT
echo "# $(nproc) cores, load: $(cut -d' ' -f1-3 /proc/loadavg), hive $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
python3 bench/outside.py --hive "$work/hive" --state "$work/state" --floor "$work/floor" --floor-dir "$work/floor-dir" "$@"
