#!/usr/bin/env bash
# fuzz.sh — run every fuzz target of hive for a while each, one after the
# other; stop at the first failure (go test then names the failing input,
# saved under the package's testdata/fuzz/). Usage: reliability/fuzz.sh
# (from anywhere)
#
#   FUZZTIME          -fuzztime of each target        (default 10s)
#   FUZZMINIMIZETIME  -fuzzminimizetime of each target (default 10s; Go's
#                     60 s per new input can eat a short run whole)
set -euo pipefail
cd "$(dirname "$0")/.."

fuzztime=${FUZZTIME:-10s}
minimize=${FUZZMINIMIZETIME:-10s}

# Every target, by package. A Fuzz function missing here fails the run.
targets=(
	"FuzzArgCheck ./internal/tools"
	"FuzzFlatArgsAgree ./internal/tools"
	"FuzzEnvelopeJSON ./internal/tools"
	"FuzzAppendString ./internal/jsonenc"
	"FuzzPlan ./internal/shell"
	"FuzzWarning ./internal/shell"
	"FuzzSemantic ./internal/shell"
	"FuzzStream ./internal/output"
	"FuzzSocketRequest ./internal/daemon"
	"FuzzLineConn ./internal/mcpline"
	"FuzzDecodeMessageAgrees ./internal/mcpline"
	"FuzzEncodeAnswer ./internal/mcpline"
	"FuzzKeptEndLine ./internal/holder"
	"FuzzKeepEndedLine ./internal/holder"
	"FuzzKeepLine ./internal/holder"
	"FuzzJobJSON ./internal/store"
	"FuzzJournalRegion ./internal/job"
	"FuzzEscaped ./internal/termsafe"
	"FuzzCheck ./internal/policy"
)

listed=$(printf '%s\n' "${targets[@]}" | cut -d' ' -f1 | sort)
found=$(grep -rhoE --include='*_test.go' '^func Fuzz[A-Za-z0-9_]*' . | cut -d' ' -f2 | sort)
if [ "$listed" != "$found" ]; then
	echo "fuzz.sh: the targets listed differ from the Fuzz functions in the tree:" >&2
	diff <(echo "$listed") <(echo "$found") >&2 || true
	exit 1
fi

for t in "${targets[@]}"; do
	read -r name pkg <<<"$t"
	echo "== $name ($pkg, $fuzztime)"
	corpus="$pkg/testdata/fuzz/$name"
	before=$(ls "$corpus" 2>/dev/null | sort || true)
	if ! out=$(go test -run '^$' -fuzz "^$name\$" -fuzztime "$fuzztime" -fuzzminimizetime "$minimize" "$pkg" 2>&1); then
		echo "$out"
		after=$(ls "$corpus" 2>/dev/null | sort || true)
		# Go's fuzz coordinator (go1.26; golang/go#75804, fixed in 1.27)
		# can report its own -fuzztime deadline as a failure, with no
		# failing input: that ending, and only it, is no finding. A real
		# one writes its input to testdata/fuzz.
		if [ "$before" = "$after" ] && [ "$(tail -n 4 <<<"$out" | grep -c 'context deadline exceeded')" = 1 ] &&
			! grep -q -e 'panic:' -e 'Failing input written' <<<"$out"; then
			echo "fuzz.sh: $name ended on the fuzz coordinator's own deadline (golang/go#75804), no failing input: not a finding"
			continue
		fi
		exit 1
	fi
	echo "$out"
	# A target listed with the wrong package fuzzes nothing and passes.
	if grep -q 'no fuzz tests to fuzz' <<<"$out"; then
		echo "fuzz.sh: $name is not in $pkg" >&2
		exit 1
	fi
done
echo "== all ${#targets[@]} fuzz targets passed ($fuzztime each)"
