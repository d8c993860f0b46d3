#!/usr/bin/env bash
# Runs hive's Windows-only tests under wine (Debian's wine64, wine 8), for
# what cannot run on Linux: the job objects (internal/job/proc_windows_test.go).
# Not part of .ci/run: it needs `apt-get install wine64 gcc-mingw-w64-x86-64`
# (about 3 minutes). What it does not prove: wine is not Windows (its job
# objects, consoles and file system differ: every test that uses t.TempDir
# fails its cleanup there with "unlinkat …: Invalid function", and bash is
# missing), so only the tests named below are run and counted.
#
# Go 1.26's runtime needs ProcessPrng (bcryptprimitives.dll, Windows 10+),
# which wine 8 lacks: prng.c is a shim over RtlGenRandom, built with mingw.
set -euo pipefail
cd "$(dirname "$0")/../.."
work=$(mktemp -d)
trap 'wineserver -k 2>/dev/null || true; rm -rf "$work"' EXIT
export WINEPREFIX="$work/prefix" WINEDEBUG=-all
wine=$(command -v wine64 || echo /usr/lib/wine/wine64)
x86_64-w64-mingw32-gcc -shared -O2 -o "$work/bcryptprimitives.dll" reliability/wine/prng.c -ladvapi32
"$wine" wineboot -i >/dev/null 2>&1
cp "$work/bcryptprimitives.dll" "$WINEPREFIX/drive_c/windows/system32/"
fail=0
run() { # package, test pattern
	GOOS=windows GOARCH=amd64 go test -c -o "$work/t.exe" "./$1"
	if ! (cd "$1" && timeout 300 "$wine" "$work/t.exe" -test.run "$2" -test.v); then
		fail=1
	fi
}
run internal/job 'TestStopEndsTheProcessTree|TestLeftoversOfTheTreeAreEnded'
exit $fail
