package bench

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hivetools/hive/internal/client"
	"github.com/hivetools/hive/internal/paths"
	"github.com/hivetools/hive/internal/proto"
)

// heldJobs is how many `sleep 600` jobs BenchmarkHeld1000Sleeps runs on
// each daemon.
const heldJobs = 1000

// BenchmarkHeld1000Sleeps measures what the holder of the jobs costs in
// memory (issue 12, point 6: 1000 concurrent sleep jobs at most 64 MiB of
// RSS beyond a daemon that runs its jobs itself). Each iteration starts two
// daemons on fresh state dirs, one after the other (the order alternates):
// `hive daemon --hold-jobs=false --max-running 1100` and `hive daemon
// --max-running 1100` (with its holder); on each it starts 1000 `sleep 600`
// jobs through the socket protocol (proto.CmdRun, 8 at a time) and checks
// that every one is running (its state, a live pid, the daemon's stats),
// then reads VmRSS (/proc/PID/status) of the daemon, and of the holder.
// The sleep processes are the same in both setups and not counted. Then
// it SIGTERMs the daemon (which stops its jobs, and its holder) and checks
// that the daemon exited cleanly, the holder is gone and no sleep is left.
//
// Metrics (MiB, means over the iterations):
//   - idle-daemon-only-MiB, idle-daemon+holder-MiB: before the jobs, and
//     the holder's part idle-holder-MiB;
//   - rss-daemon-only-MiB: the daemon running its 1000 jobs itself;
//   - rss-daemon+holder-MiB: daemon and holder, 1000 jobs held, and the
//     two parts rss-held-daemon-MiB and rss-holder-MiB;
//   - extra-MiB = rss-daemon+holder - rss-daemon-only. Target <= 64.
//
// One iteration takes about 20-40 s: use -benchtime=1x. The built-in ns/op
// is the whole iteration; ignore it.
func BenchmarkHeld1000Sleeps(b *testing.B) {
	var idleOnly, idleHeld, idleHolder, only, heldDaemon, holder int64 // KiB, summed
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		sides := []bool{false, true} // held?
		if i%2 == 1 {
			sides = []bool{true, false}
		}
		for _, held := range sides {
			args := []string{"--max-running", "1100"}
			if !held {
				args = append(args, "--hold-jobs=false")
			}
			r := measureSleeps(b, args, held)
			if held {
				idleHeld += r.idleDaemon + r.idleHolder
				idleHolder += r.idleHolder
				heldDaemon += r.daemon
				holder += r.holder
			} else {
				idleOnly += r.idleDaemon
				only += r.daemon
			}
		}
	}
	b.StopTimer()
	mib := func(kib int64) float64 { return float64(kib) / 1024 / float64(b.N) }
	b.ReportMetric(mib(idleOnly), "idle-daemon-only-MiB")
	b.ReportMetric(mib(idleHeld), "idle-daemon+holder-MiB")
	b.ReportMetric(mib(idleHolder), "idle-holder-MiB")
	b.ReportMetric(mib(only), "rss-daemon-only-MiB")
	b.ReportMetric(mib(heldDaemon+holder), "rss-daemon+holder-MiB")
	b.ReportMetric(mib(heldDaemon), "rss-held-daemon-MiB")
	b.ReportMetric(mib(holder), "rss-holder-MiB")
	b.ReportMetric(mib(heldDaemon+holder-only), "extra-MiB")
}

// sleepsRSS is what one side of BenchmarkHeld1000Sleeps read, in KiB.
type sleepsRSS struct {
	idleDaemon, idleHolder int64 // before the jobs
	daemon, holder         int64 // with 1000 jobs running
}

// measureSleeps starts a daemon with args, 1000 sleep jobs on it, reads
// the RSS figures and stops everything again. held says whether the daemon
// must have a holder of the jobs (it is an error if it has one or not
// against that).
func measureSleeps(b *testing.B, args []string, held bool) sleepsRSS {
	b.Helper()
	d := startDaemonArgs(b, nil, args)
	defer d.stop(b) // also on a failure; stop is idempotent
	if held != (d.holderPID > 0) {
		b.Fatalf("hive daemon %s: holder pid %d (want a holder: %v)", strings.Join(args, " "), d.holderPID, held)
	}
	holderFD := -1
	if held {
		// A pidfd names this holder process and no later one with its pid;
		// it becomes readable when the holder exits.
		fd, err := unix.PidfdOpen(d.holderPID, 0)
		if err != nil {
			b.Fatalf("pidfd_open holder %d: %v", d.holderPID, err)
		}
		holderFD = fd
		defer unix.Close(fd)
	}
	rss := func(pid int) int64 {
		kib, err := procStatusKiB(pid, "VmRSS")
		if err != nil {
			b.Fatal(err)
		}
		return kib
	}
	var r sleepsRSS
	r.idleDaemon = rss(d.Pid)
	if held {
		r.idleHolder = rss(d.holderPID)
	}

	jobs, err := startSleeps(d, heldJobs)
	if err != nil {
		b.Fatal(err)
	}
	l := paths.Layout{Dir: d.Dir}
	resp, err := client.Call(l, proto.Request{Cmd: proto.CmdStats})
	if err != nil {
		b.Fatalf("stats: %v", err)
	}
	if st := resp.Stats; st == nil || st.JobsRunning != heldJobs || st.Children < heldJobs {
		b.Fatalf("stats after %d sleep jobs: %+v, want %d running and as many children", heldJobs, resp.Stats, heldJobs)
	}
	r.daemon = rss(d.Pid)
	if held {
		r.holder = rss(d.holderPID)
	}

	d.stop(b)
	if held {
		fds := []unix.PollFd{{Fd: int32(holderFD), Events: unix.POLLIN}}
		n, err := unix.Poll(fds, 10_000)
		for errors.Is(err, unix.EINTR) {
			n, err = unix.Poll(fds, 10_000)
		}
		if err != nil || n == 0 {
			b.Fatalf("holder %d still running 10 s after its daemon ended (poll: %v)", d.holderPID, err)
		}
	}
	left := 0
	for _, j := range jobs {
		if start, err := procStart(j.pid); err == nil && start == j.start {
			left++
		}
	}
	if left > 0 {
		b.Fatalf("%d of %d sleep jobs still running after their daemon ended", left, len(jobs))
	}
	return r
}

// sleepJob is a started job's process: pid and start time (field 22 of
// /proc/PID/stat), which together name it even once the pid is reused.
type sleepJob struct {
	pid   int
	start uint64
}

// startSleeps starts n `sleep 600` jobs on d through the socket protocol,
// 8 requests at a time, and checks each is running with a live process.
func startSleeps(d *daemon, n int) ([]sleepJob, error) {
	l := paths.Layout{Dir: d.Dir}
	env := os.Environ()
	jobs := make([]sleepJob, n)
	errs := make([]error, n)
	next := make(chan int)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for i := range next {
				resp, err := client.Call(l, proto.Request{Cmd: proto.CmdRun, Argv: []string{"sleep 600"}, Cwd: d.Dir, Env: env})
				if err != nil {
					errs[i] = fmt.Errorf("run sleep 600 (job %d): %w", i, err)
					continue
				}
				j := resp.Job
				if j == nil || j.State != "running" || j.Pid <= 0 {
					errs[i] = fmt.Errorf("run sleep 600 (job %d): %+v, want running with a pid", i, j)
					continue
				}
				start, err := procStart(j.Pid)
				if err != nil {
					errs[i] = fmt.Errorf("job %s pid %d: %w", j.ID, j.Pid, err)
					continue
				}
				jobs[i] = sleepJob{j.Pid, start}
			}
		})
	}
	// Each call ends within client.ResponseTimeout: this does not hang.
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	failed := 0
	var first error
	for _, err := range errs {
		if err != nil {
			if first == nil {
				first = err
			}
			failed++
		}
	}
	if failed > 0 {
		return jobs, fmt.Errorf("%d of %d sleep jobs did not start; the first: %w", failed, n, first)
	}
	return jobs, nil
}

// procStart is a live process's start time in clock ticks since boot
// (field 22 of /proc/PID/stat). A zombie is not live: an error.
func procStart(pid int) (uint64, error) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+2 > len(s) {
		return 0, fmt.Errorf("/proc/%d/stat: malformed", pid)
	}
	f := strings.Fields(s[i+2:])
	// f[0] is field 3 (state); starttime is field 22.
	if len(f) < 20 {
		return 0, fmt.Errorf("/proc/%d/stat: short", pid)
	}
	if f[0] == "Z" || f[0] == "X" {
		return 0, fmt.Errorf("process %d has exited (state %s)", pid, f[0])
	}
	return strconv.ParseUint(f[19], 10, 64)
}

// BenchmarkHeldRoundTrip puts what the holder of the jobs adds to a round
// trip in one run: two daemons side by side, one with its holder (the
// default) and one with --hold-jobs=false, each with a raw client (JSON-RPC
// lines through a `hive mcp` bridge, no client library). Each iteration
// calls `run` {"cmd":"true","wait_seconds":5} on both (checked: done, exit
// 0), spawns `bash -c true`, calls terminal_exec {"cmd":"true"} on both
// (checked: exit 0, direct) and spawns `true`; which daemon goes first
// alternates.
//
// Metrics: held-run-ns/op, own-run-ns/op, bash-ns/op and
// held-run-ratio, own-run-ratio (each / bash; target <= 1.5);
// held-exec-ns/op, own-exec-ns/op, spawn-ns/op and held-exec-ratio,
// own-exec-ratio (each / spawn), held-exec/bash and own-exec/bash (each
// / bash: issue 12's baseline, target <= 1.5); run-held/own and
// exec-held/own: what the holder costs as a factor; held-daemon-cpu-us/op,
// holder-cpu-us/op and own-daemon-cpu-us/op: the CPU time (user+sys) each
// process spent per iteration (one run and one terminal_exec on each
// daemon). The built-in ns/op is the whole iteration; ignore it.
func BenchmarkHeldRoundTrip(b *testing.B) {
	held := startDaemonArgs(b, nil, nil)
	if held.holderPID == 0 {
		b.Fatal("hive daemon (defaults): no holder of the jobs in hive version --json")
	}
	own := startDaemonArgs(b, nil, []string{"--hold-jobs=false"})
	if own.holderPID != 0 {
		b.Fatalf("hive daemon --hold-jobs=false: holder pid %d, want none", own.holderPID)
	}
	sessions := [2]*rawSession{connectRaw(b, held), connectRaw(b, own)}
	const runParams = `{"name":"run","arguments":{"cmd":"true","wait_seconds":5}}`
	const execParams = `{"name":"terminal_exec","arguments":{"cmd":"true"}}`
	call := func(s *rawSession, params string) (structured json.RawMessage) {
		out, err := s.call("tools/call", params)
		if err != nil {
			b.Fatal(err)
		}
		var r struct {
			IsError           bool            `json:"isError"`
			StructuredContent json.RawMessage `json:"structuredContent"`
		}
		if err := json.Unmarshal(out, &r); err != nil || r.IsError {
			b.Fatalf("tools/call %s: %s", params, out)
		}
		return r.StructuredContent
	}
	checkRun := func(structured json.RawMessage) {
		var st taskStatus
		if err := json.Unmarshal(structured, &st); err != nil {
			b.Fatalf("run: %s: %v", structured, err)
		}
		if err := wantDone(st); err != nil {
			b.Fatal(err)
		}
	}
	checkExec := func(structured json.RawMessage) {
		var env struct {
			ExitCode  *int   `json:"exit_code"`
			ShellKind string `json:"shell_kind"`
		}
		if err := json.Unmarshal(structured, &env); err != nil || env.ExitCode == nil || *env.ExitCode != 0 || env.ShellKind != "direct" {
			b.Fatalf("terminal_exec: %s", structured)
		}
	}
	spawn := func(argv ...string) time.Duration {
		t0 := time.Now()
		if err := exec.Command(argv[0], argv[1:]...).Run(); err != nil {
			b.Fatalf("%s: %v", strings.Join(argv, " "), err)
		}
		return time.Since(t0)
	}
	// Warm up every path once.
	for _, s := range sessions {
		checkRun(call(s, runParams))
		checkExec(call(s, execParams))
	}
	spawn("bash", "-c", "true")
	spawn("true")

	cpu := func(pid int) time.Duration {
		t, err := procCPU(pid)
		if err != nil {
			b.Fatal(err)
		}
		return t
	}
	var runD, execD [2]time.Duration // [held, own]
	var bashD, spawnD time.Duration
	cpu0 := [3]time.Duration{cpu(held.Pid), cpu(held.holderPID), cpu(own.Pid)}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		order := [2]int{0, 1}
		if i%2 == 1 {
			order = [2]int{1, 0}
		}
		for _, k := range order {
			t0 := time.Now()
			st := call(sessions[k], runParams)
			runD[k] += time.Since(t0)
			checkRun(st)
		}
		bashD += spawn("bash", "-c", "true")
		for _, k := range order {
			t0 := time.Now()
			st := call(sessions[k], execParams)
			execD[k] += time.Since(t0)
			checkExec(st)
		}
		spawnD += spawn("true")
	}
	b.StopTimer()
	cpu1 := [3]time.Duration{cpu(held.Pid), cpu(held.holderPID), cpu(own.Pid)}
	per := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / float64(b.N) }
	b.ReportMetric(per(cpu1[0]-cpu0[0])/1e3, "held-daemon-cpu-us/op")
	b.ReportMetric(per(cpu1[1]-cpu0[1])/1e3, "holder-cpu-us/op")
	b.ReportMetric(per(cpu1[2]-cpu0[2])/1e3, "own-daemon-cpu-us/op")
	b.ReportMetric(per(runD[0]), "held-run-ns/op")
	b.ReportMetric(per(runD[1]), "own-run-ns/op")
	b.ReportMetric(per(bashD), "bash-ns/op")
	b.ReportMetric(per(runD[0])/per(bashD), "held-run-ratio")
	b.ReportMetric(per(runD[1])/per(bashD), "own-run-ratio")
	b.ReportMetric(per(execD[0]), "held-exec-ns/op")
	b.ReportMetric(per(execD[1]), "own-exec-ns/op")
	b.ReportMetric(per(spawnD), "spawn-ns/op")
	b.ReportMetric(per(execD[0])/per(spawnD), "held-exec-ratio")
	b.ReportMetric(per(execD[1])/per(spawnD), "own-exec-ratio")
	// Issue 12's baseline for both round trips is a bash -c true spawn.
	b.ReportMetric(per(execD[0])/per(bashD), "held-exec/bash")
	b.ReportMetric(per(execD[1])/per(bashD), "own-exec/bash")
	b.ReportMetric(per(runD[0])/per(runD[1]), "run-held/own")
	b.ReportMetric(per(execD[0])/per(execD[1]), "exec-held/own")
}
