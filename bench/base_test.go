package bench

import (
	"encoding/json"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/hivetools/hive/internal/hivetest"
)

// baseEnv names the environment variable with the path of another hive
// binary (a build of the base of a change) for BenchmarkVsBase.
const baseEnv = "HIVE_BENCH_BASE"

// BenchmarkVsBase puts a change against its base in one run, on the
// same machine at the same moments: two daemons side by side, one of
// the hive under test and one of the binary HIVE_BENCH_BASE names (the
// benchmark is skipped without it), each with its holder and a raw
// client through its own `hive mcp` bridge. Per iteration, on both (which
// goes first alternates): terminal_exec {"cmd":"true"} (checked: exit 0,
// direct), run {"cmd":"true","wait_seconds":5} (checked: done, exit 0)
// and a background start, run {"cmd":"true","wait_seconds":0} (checked: a
// job id, running or done); then `true` and `bash -c true` spawned from
// this process.
//
// On a machine shared with other work a mean moves with every slow
// iteration; medians of the iterations do not. Metrics, in µs, medians
// over the iterations: new-exec-p50-us, base-exec-p50-us, spawn-p50-us,
// new-run-p50-us, base-run-p50-us, bash-p50-us; and the medians of the
// iterations' own ratios: exec-new/base, run-new/base (below 1: the
// change is faster), exec-new/spawn, run-new/bash, exec-base/spawn,
// run-base/bash (issue 20's targets: exec/spawn <= 1.5, run/bash <= 1.15);
// new-start-p50-us, base-start-p50-us and start-new/base for the
// background start; new-daemon-cpu-us/op, new-holder-cpu-us/op,
// base-daemon-cpu-us/op, base-holder-cpu-us/op: the processor time
// (user+system) of each process per iteration (one terminal_exec, one run
// and one start on each side).
//
// HIVE_BENCH_HOGS=N runs N busy loops (`sh -c 'while :; do :; done'`)
// beside both for the whole benchmark: a change compared on a saturated
// machine (each hog is ended by its pid at the end).
func BenchmarkVsBase(b *testing.B) {
	baseBin := os.Getenv(baseEnv)
	if baseBin == "" {
		b.Skip(baseEnv + " is not set: no base binary to compare with")
	}
	// The base's commands: the hive under test's environment (HIVE_STATE_DIR
	// on top), another executable.
	baseCmd := func(dir string, args ...string) *exec.Cmd {
		cmd := exec.Command(baseBin, args...)
		cmd.Env = append(os.Environ(), "HIVE_STATE_DIR="+dir)
		return cmd
	}
	newD := startDaemonArgs(b, nil, nil)
	baseDir := hivetest.StateDir(b)
	baseD := hivetest.StartDaemonCmd(b, baseDir, baseCmd(baseDir, "daemon"))
	startHogs(b)
	pids := [4]int{newD.Pid, newD.holderPID, baseD.Pid, hivetest.HolderPid(baseDir)} // 0: no holder
	sides := [2]*rawSession{connectRaw(b, newD), connectRawCmd(b, baseCmd(baseDir, "mcp"))}
	const execParams = `{"name":"terminal_exec","arguments":{"cmd":"true"}}`
	const runParams = `{"name":"run","arguments":{"cmd":"true","wait_seconds":5}}`
	const startParams = `{"name":"run","arguments":{"cmd":"true","wait_seconds":0}}`
	call := func(k int, params string, run bool) time.Duration {
		return timedTrue(b, sides[k], k, params, run, run)
	}
	spawn := func(argv ...string) time.Duration { return timedSpawn(b, argv...) }
	for k := range sides { // warm every path up
		call(k, execParams, false)
		call(k, runParams, true)
		timedStart(b, sides[k], k, startParams)
	}
	var ex, rn, st [2][]float64
	var spawnD, bashD []float64
	us := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }
	cpu := func() (t [4]time.Duration) {
		for k, pid := range pids {
			if pid > 0 {
				var err error
				if t[k], err = procCPU(pid); err != nil {
					b.Fatal(err)
				}
			}
		}
		return t
	}
	cpu0 := cpu()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for j := range 2 {
			k := (i + j) % 2
			ex[k] = append(ex[k], us(call(k, execParams, false)))
			rn[k] = append(rn[k], us(call(k, runParams, true)))
			st[k] = append(st[k], us(timedStart(b, sides[k], k, startParams)))
		}
		spawnD = append(spawnD, us(spawn("true")))
		bashD = append(bashD, us(spawn("bash", "-c", "true")))
	}
	b.StopTimer()
	cpu1 := cpu()
	for k, name := range []string{"new-daemon", "new-holder", "base-daemon", "base-holder"} {
		b.ReportMetric(us(cpu1[k]-cpu0[k])/float64(b.N), name+"-cpu-us/op")
	}
	ratios := func(a, c []float64) []float64 {
		r := make([]float64, len(a))
		for i := range a {
			r[i] = a[i] / c[i]
		}
		return r
	}
	b.ReportMetric(medianOf(ex[0]), "new-exec-p50-us")
	b.ReportMetric(medianOf(ex[1]), "base-exec-p50-us")
	b.ReportMetric(medianOf(spawnD), "spawn-p50-us")
	b.ReportMetric(medianOf(rn[0]), "new-run-p50-us")
	b.ReportMetric(medianOf(rn[1]), "base-run-p50-us")
	b.ReportMetric(medianOf(bashD), "bash-p50-us")
	b.ReportMetric(medianOf(st[0]), "new-start-p50-us")
	b.ReportMetric(medianOf(st[1]), "base-start-p50-us")
	b.ReportMetric(medianOf(ratios(st[0], st[1])), "start-new/base")
	b.ReportMetric(medianOf(ratios(ex[0], ex[1])), "exec-new/base")
	b.ReportMetric(medianOf(ratios(rn[0], rn[1])), "run-new/base")
	b.ReportMetric(medianOf(ratios(ex[0], spawnD)), "exec-new/spawn")
	b.ReportMetric(medianOf(ratios(rn[0], bashD)), "run-new/bash")
	b.ReportMetric(medianOf(ratios(ex[1], spawnD)), "exec-base/spawn")
	b.ReportMetric(medianOf(ratios(rn[1], bashD)), "run-base/bash")
}

// medianOf is the middle value of xs (the mean of the two middle ones for
// an even count); 0 for none. xs is left as it was.
func medianOf(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// timedStart times a background start (run with wait_seconds 0) on s,
// checked: a job id, running or already done.
func timedStart(b *testing.B, s *rawSession, k int, params string) time.Duration {
	out, dt := timedCall(b, s, params)
	var r struct {
		IsError bool `json:"isError"`
		S       struct {
			ID     string `json:"id"`
			Status string `json:"status"`
		} `json:"structuredContent"`
	}
	if err := json.Unmarshal(out, &r); err != nil || r.IsError || r.S.ID == "" || (r.S.Status != "running" && r.S.Status != "done") {
		b.Fatalf("side %d, %s: %s", k, params, out)
	}
	return dt
}

// hogsEnv names the environment variable with how many busy loops
// BenchmarkVsBase runs beside the two daemons.
const hogsEnv = "HIVE_BENCH_HOGS"

// startHogs starts the busy loops HIVE_BENCH_HOGS asks for (none if it is
// unset); the benchmark's cleanup kills each by its pid and waits for it.
func startHogs(b *testing.B) {
	v := os.Getenv(hogsEnv)
	if v == "" {
		return
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 || n > 64 {
		b.Fatalf("%s=%q: must be a whole number from 0 to 64", hogsEnv, v)
	}
	for range n {
		cmd := exec.Command("sh", "-c", "while :; do :; done")
		if err := cmd.Start(); err != nil {
			b.Fatalf("start a busy loop: %v", err)
		}
		b.Cleanup(func() {
			cmd.Process.Kill()
			cmd.Wait()
		})
	}
}
