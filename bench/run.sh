#!/usr/bin/env bash
# run.sh — build and run hive's job-engine benchmarks, then print the key
# numbers. Usage: bench/run.sh   (from anywhere)
#
#   RT_BENCHTIME   -benchtime of BenchmarkRunRoundTrip and
#                  BenchmarkExecRoundTrip              (default 3s)
#   RT_COUNT       -count of both, and of
#                  BenchmarkHeldRoundTrip (same -benchtime) (default 3)
#   CAP_BENCHTIME  -benchtime of BenchmarkCapture1G    (default 2x; each
#                  iteration writes 2 GiB, the run needs 4 GiB free)
#   CAP_COUNT      -count of BenchmarkCapture1G        (default 1)
#   PTY_BENCHTIME  -benchtime of the PTY benchmarks    (default 50x)
#   HELD_BENCHTIME -benchtime of BenchmarkHeld1000Sleeps (default 1x; each
#                  iteration runs 2 × 1000 sleep jobs, ~10-40 s)
#   HIVE_BENCH_DAEMON_ARGS  flags added to every benchmark daemon (not the
#                  two of BenchmarkHeld1000Sleeps), e.g. --hold-jobs=false
#   OUT            where the raw `go test` output goes (default: a temp file)
set -euo pipefail
cd "$(dirname "$0")/.."

rt_time=${RT_BENCHTIME:-3s}
rt_count=${RT_COUNT:-3}
cap_time=${CAP_BENCHTIME:-2x}
cap_count=${CAP_COUNT:-1}
out=${OUT:-$(mktemp -t hive-bench.XXXXXX)}

echo "# $(nproc) cores, $(uname -sr), $(go version | cut -d' ' -f3), load: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# daemon flags: ${HIVE_BENCH_DAEMON_ARGS:-(defaults)}"
go vet ./bench/
go test -run '^$' -bench '^Benchmark(Run|Exec)RoundTrip$' -benchtime="$rt_time" -count="$rt_count" \
	-timeout 30m ./bench/ | tee "$out"
go test -run '^$' -bench '^BenchmarkFloorRoundTrip$' -benchtime="$rt_time" -count="$rt_count" \
	-timeout 30m ./bench/ | tee -a "$out"
go test -run '^$' -bench '^BenchmarkHeldRoundTrip$' -benchtime="$rt_time" -count="$rt_count" \
	-timeout 30m ./bench/ | tee -a "$out"
go test -run '^$' -bench '^BenchmarkToolsListSize$' -benchtime=20x ./bench/ | tee -a "$out"
go test -run '^$' -bench '^BenchmarkAnswerBytes$' -benchtime=2x ./bench/ | tee -a "$out"
go test -run '^$' -bench '^BenchmarkPTY(REPLRoundTrip|Close)$' -benchtime="${PTY_BENCHTIME:-50x}" ./bench/ | tee -a "$out"
go test -run '^$' -bench '^BenchmarkPTYFlood$' -benchtime=5x ./bench/ | tee -a "$out"
go test -run '^$' -bench '^BenchmarkCapture1G$' -benchtime="$cap_time" -count="$cap_count" \
	-timeout 60m ./bench/ | tee -a "$out"
go test -run '^$' -bench '^BenchmarkHeld1000Sleeps$' -benchtime="${HELD_BENCHTIME:-1x}" \
	-timeout 30m ./bench/ | tee -a "$out"

# Key numbers: one line per benchmark run, metrics by unit.
echo
echo "== summary (raw output: $out)"
awk '
/^Benchmark/ {
	delete m
	for (i = 3; i < NF; i += 2) m[$(i+1)] = $i
	if ($1 ~ /RunRoundTrip/) {
		printf "RunRoundTrip  run %.2f ms  bash %.2f ms  ratio %.2f (target <= 1.5)\n", m["run-ns/op"]/1e6, m["bash-ns/op"]/1e6, m["ratio"]
		printf "              ping %.2f ms  status %.2f ms  | run phases (p50): accept %.2f  spawn %.2f  exit %.2f  reply %.2f ms\n",
			m["ping-ns/op"]/1e6, m["status-ns/op"]/1e6, m["p50-accept-us"]/1e3, m["p50-spawn-us"]/1e3, m["p50-exit-us"]/1e3, m["p50-reply-us"]/1e3
		rt += m["ratio"]; nrt++
	} else if ($1 ~ /ExecRoundTrip/) {
		printf "ExecRoundTrip raw client %.2f ms  go-sdk client %.2f ms  spawn %.2f ms  raw-ratio %.2f  sdk ratio %.2f (target <= 1.5)\n",
			m["raw-exec-ns/op"]/1e6, m["sdk-exec-ns/op"]/1e6, m["spawn-ns/op"]/1e6, m["raw-ratio"], m["ratio"]
	} else if ($1 ~ /AnswerBytes/) {
		printf "%-36s exec %d B (%.3f x 256 KiB; target <= 1.2 + 2 KB)  page-ratio %.3f (<= 1.2)  rg-ratio %.3f (<= 1.2, %d matches)  glob-ratio %.3f\n",
			$1, m["exec-B"], m["exec-vs-inline"], m["page-ratio"], m["rg-ratio"], m["rg-matches"], m["glob-ratio"]
	} else if ($1 ~ /ToolsListSize/) {
		printf "%-45s tools/list %d bytes  instructions %d bytes  together %d bytes (target <= 18000)\n", $1, m["bytes"], m["instructions-bytes"], m["total-bytes"]
	} else if ($1 ~ /FloorRoundTrip/) {
		printf "FloorRoundTrip exec: hive %.2f ms  floor %.2f ms  fsync floor %.2f ms  spawn %.2f ms  hive/floor %.2f  hive/spawn %.2f  floor/spawn %.2f\n",
			m["hive-exec-ns/op"]/1e6, m["floor-exec-ns/op"]/1e6, m["fsync-exec-ns/op"]/1e6, m["spawn-ns/op"]/1e6, m["exec-hive/floor"], m["exec-hive/spawn"], m["exec-floor/spawn"]
		printf "               run:  hive %.2f ms  floor %.2f ms  fsync floor %.2f ms  bash %.2f ms  hive/floor %.2f  hive/bash %.2f  floor/bash %.2f\n",
			m["hive-run-ns/op"]/1e6, m["floor-run-ns/op"]/1e6, m["fsync-run-ns/op"]/1e6, m["bash-ns/op"]/1e6, m["run-hive/floor"], m["run-hive/bash"], m["run-floor/bash"]
	} else if ($1 ~ /PTYFlood/) {
		printf "PTYFlood      hive %.0f ms  screen %.0f ms  raw %.0f ms  ratio %.2f  daemon CPU %.0f ms  holder CPU %.0f ms\n", m["hive-ms/op"], m["screen-ms/op"], m["raw-ms/op"], m["ratio"], m["daemon-cpu-ms/op"], m["holder-cpu-ms/op"]
	} else if ($1 ~ /PTYREPLRoundTrip/) {
		printf "PTYREPL       default p50 %.1f ms (target <= 60)  wait_for p50 %.2f ms  raw %.2f ms  exec p50 %.2f ms  wait_for/exec %.2f\n", m["p50-default-ms"], m["p50-wait_for-ms"], m["raw-ms/op"], m["p50-exec-ms"], m["wait_for/exec"]
	} else if ($1 ~ /PTYClose/) {
		printf "PTYClose      shell %.1f ms (target <= 50)  worst %.1f ms  python %.1f ms  raw hangup %.1f ms\n", m["close-ms/op"], m["max-close-ms"], m["py-close-ms/op"], m["raw-close-ms/op"]
	} else if ($1 ~ /Capture1G/) {
		printf "Capture1G     hive %.0f MB/s  bash %.0f MB/s  throughput-ratio %.2f (target >= 0.8)  daemon peak RSS %.1f MiB (target < 100)  daemon CPU %.2f s/GiB\n",
			m["hive-MB/s"], m["bash-MB/s"], m["throughput-ratio"], m["daemon-peak-rss-MiB"], m["daemon-cpu-s/GiB"]
		if ("holder-peak-rss-MiB" in m)
			printf "              holder peak RSS %.1f MiB  holder CPU %.2f s/GiB\n", m["holder-peak-rss-MiB"], m["holder-cpu-s/GiB"]
	} else if ($1 ~ /HeldRoundTrip/) {
		printf "HeldRoundTrip run: holder %.2f ms  own %.2f ms  bash %.2f ms  ratios %.2f / %.2f (target <= 1.5)  holder/own %.2f\n",
			m["held-run-ns/op"]/1e6, m["own-run-ns/op"]/1e6, m["bash-ns/op"]/1e6, m["held-run-ratio"], m["own-run-ratio"], m["run-held/own"]
		printf "              exec: holder %.2f ms  own %.2f ms  spawn %.2f ms  ratios %.2f / %.2f (target <= 1.5)  holder/own %.2f\n",
			m["held-exec-ns/op"]/1e6, m["own-exec-ns/op"]/1e6, m["spawn-ns/op"]/1e6, m["held-exec-ratio"], m["own-exec-ratio"], m["exec-held/own"]
		printf "              CPU per run+exec: daemon %.0f + holder %.0f us  own daemon %.0f us\n",
			m["held-daemon-cpu-us/op"], m["holder-cpu-us/op"], m["own-daemon-cpu-us/op"]
	} else if ($1 ~ /Held1000Sleeps/) {
		printf "Held1000      1000 sleep jobs: daemon only %.1f MiB (idle %.1f)  daemon+holder %.1f MiB (idle %.1f, holder %.1f; daemon %.1f + holder %.1f)  extra %.1f MiB (target <= 64)\n",
			m["rss-daemon-only-MiB"], m["idle-daemon-only-MiB"], m["rss-daemon+holder-MiB"], m["idle-daemon+holder-MiB"], m["idle-holder-MiB"],
			m["rss-held-daemon-MiB"], m["rss-holder-MiB"], m["extra-MiB"]
	}
}
/SKIP|skip/ { print }
END { if (nrt > 1) printf "RunRoundTrip  mean ratio over %d runs: %.2f\n", nrt, rt/nrt }
' "$out"
