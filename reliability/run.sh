#!/usr/bin/env bash
# run.sh — the reliability suite at its full counts (docs/reliability.md),
# then every fuzz target for a while; prints each row's figure at the end.
# Usage: reliability/run.sh   (from anywhere; rows 7 and 10 need root)
#
#   FUZZTIME   -fuzztime of each fuzz target (default 60s)
#   REPORT     where the figures go (default: a temp file)
set -euo pipefail
cd "$(dirname "$0")/.."

report=${REPORT:-$(mktemp -t hive-reliability.XXXXXX)}
: >"$report"
echo "# $(nproc) cores, $(uname -sr), $(go version | cut -d' ' -f3), $(date -u +%Y-%m-%d)"
HIVE_RELIABILITY_REPORT="$report" go test -count=1 -v -timeout 3h ./reliability -full
FUZZTIME=${FUZZTIME:-60s} reliability/fuzz.sh
echo
echo "# figures"
sort -t: -k1,1V "$report"
