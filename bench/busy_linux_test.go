package bench

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/hivetools/hive/internal/client"
	"github.com/hivetools/hive/internal/hivetest"
	"github.com/hivetools/hive/internal/paths"
	"github.com/hivetools/hive/internal/proto"
)

// busyJobs is how many printing jobs BenchmarkPsUnderBusyJobs runs.
const busyJobs = 100

// BenchmarkPsUnderBusyJobs measures how long `hive ps` takes while the
// daemon's jobs keep every CPU busy, with keeping on (the daemon starts
// its jobs itself, at most max(4, 2 × CPUs) at once, the rest through the
// holder's spawn) against keeping off (every job the holder's). A job the
// daemon starts is in the daemon's session; where the scheduler shares
// the CPU by session (autogroup) the daemon gets only its part of its
// session's share. Unbounded, keeping made ps 49× slower here (2.0 s
// against 41 ms; 2x, 2026-12-02); bounded, 2.9× (86 against 29 ms).
//
// Each iteration starts two daemons in turn (the order alternates), each
// in a session of its own (setsid, as the CLI starts one), starts
// busyJobs jobs that print numbers as fast as they can (a short pause
// every 50 lines), checks they all run, takes 15 ps requests over the
// socket protocol, and ends them. Metrics: ps-ms-kept and ps-ms-held
// (medians over all iterations), and ps-kept/held, their ratio.
//
// One iteration takes about 20-40 s: use -benchtime=2x or so.
func BenchmarkPsUnderBusyJobs(b *testing.B) {
	var kept, held []float64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		sides := []bool{true, false}
		if i%2 == 1 {
			sides = []bool{false, true}
		}
		for _, keep := range sides {
			ms := psUnderBusyJobs(b, keep)
			if keep {
				kept = append(kept, ms...)
			} else {
				held = append(held, ms...)
			}
		}
	}
	b.StopTimer()
	k, h := medianOf(kept), medianOf(held)
	b.ReportMetric(k, "ps-ms-kept")
	b.ReportMetric(h, "ps-ms-held")
	b.ReportMetric(k/h, "ps-kept/held")
}

// psUnderBusyJobs runs one side of BenchmarkPsUnderBusyJobs and returns
// its ps times in milliseconds.
func psUnderBusyJobs(b *testing.B, keep bool) []float64 {
	b.Helper()
	dir := hivetest.StateDir(b)
	cmd := hivetest.Command(b, dir, "daemon", "--max-running", fmt.Sprint(busyJobs+50))
	keeping := "off"
	if keep {
		keeping = "on"
	}
	env := append(slices.Clone(cmd.Env), "HIVE_HOLDER_KEEP="+keeping)
	setsid, err := exec.LookPath("setsid")
	if err != nil {
		b.Skip("no setsid here")
	}
	cmd = exec.Command(setsid, cmd.Args...)
	cmd.Env = env
	d := &daemon{Daemon: hivetest.StartDaemonCmd(b, dir, cmd)}
	defer d.stop(b)

	stop := filepath.Join(b.TempDir(), "stop")
	defer os.WriteFile(stop, nil, 0o600) // the jobs end on their own
	printer := fmt.Sprintf(`i=0; while [ ! -e %s ]; do i=$((i+1)); echo $i; if [ $((i %% 50)) = 0 ]; then sleep 0.02; fi; done`, stop)
	l := paths.Layout{Dir: d.Dir}
	for i := range busyJobs {
		resp, err := client.Call(l, proto.Request{Cmd: proto.CmdRun, Argv: []string{printer}, Cwd: d.Dir, Env: os.Environ()})
		if err != nil || resp.Job == nil || resp.Job.State != "running" {
			b.Fatalf("start printer %d: %+v %v", i, resp.Job, err)
		}
	}
	var ms []float64
	for range 15 {
		t0 := time.Now()
		resp, err := client.Call(l, proto.Request{Cmd: proto.CmdPs})
		if err != nil {
			b.Fatalf("ps: %v", err)
		}
		ms = append(ms, float64(time.Since(t0).Microseconds())/1000)
		running := 0
		for _, j := range resp.Jobs {
			if j.State == "running" {
				running++
			}
		}
		if running != busyJobs {
			b.Fatalf("ps under %d printers (keeping %v): %d running", busyJobs, keep, running)
		}
	}
	return ms
}
