package bench

import (
	"context"
	"encoding/json"
	"os/exec"
	"slices"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hivetools/hive/internal/hivetest"
)

// BenchmarkRunRoundTrip compares one `run` tool call of a trivial command
// (`true`, waited for inline) through a real `hive mcp` bridge and daemon
// against spawning `bash -c true` directly from this process. Each
// iteration does one of each; the two sides are timed separately.
//
// Metrics:
//   - run-ns/op: the run tool call; bash-ns/op: the baseline;
//     ratio = run/bash (target <= 1.5).
//
// Breakdown (diagnostics, not targets):
//   - ping-ns/op: an MCP ping through bridge and daemon, the transport floor;
//   - status-ns/op: a status call of the ended job (transport plus a tool
//     handler, no process);
//   - p50-accept-us, p50-spawn-us, p50-exit-us, p50-reply-us: medians, over
//     the last (up to 200) jobs, of the phases of a run call, from this
//     process's clock and the job's created/started/ended times that
//     `hive ps --all --json` reports: call sent → job created, created →
//     started (output files, pipes, fork/exec), started → ended (the process
//     itself, wait, group cleanup, drain, persist) and ended → answer
//     received.
//
// The built-in ns/op is the whole iteration (all calls plus checks); ignore it.
func BenchmarkRunRoundTrip(b *testing.B) {
	d := startDaemon(b)
	sess := connectMCP(b, d)
	ctx := context.Background()
	params := &mcp.CallToolParams{Name: "run", Arguments: map[string]any{"cmd": "true", "wait_seconds": 5}}

	// Warm up both paths once (first exec of bash, first store write).
	if _, err := sess.CallTool(ctx, params); err != nil {
		b.Fatal(err)
	}
	if err := exec.Command("bash", "-c", "true").Run(); err != nil {
		b.Fatal(err)
	}

	calls := make(map[string]runCall, b.N)
	var runD, bashD, statusD, pingD time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		res, err := sess.CallTool(ctx, params)
		t1 := time.Now()
		runD += t1.Sub(t0)
		if err != nil {
			b.Fatalf("call run: %v", err)
		}
		st, err := decodeStatus(res)
		if err != nil {
			b.Fatal(err)
		}
		if err := wantDone(st); err != nil {
			b.Fatal(err)
		}
		calls[st.ID] = runCall{t0, t1}

		t0 = time.Now()
		res, err = sess.CallTool(ctx, &mcp.CallToolParams{Name: "status", Arguments: map[string]any{"id": st.ID}})
		statusD += time.Since(t0)
		if err != nil {
			b.Fatalf("call status: %v", err)
		}
		if _, err := decodeStatus(res); err != nil {
			b.Fatal(err)
		}

		t0 = time.Now()
		err = sess.Ping(ctx, nil)
		pingD += time.Since(t0)
		if err != nil {
			b.Fatalf("ping: %v", err)
		}

		t0 = time.Now()
		err = exec.Command("bash", "-c", "true").Run()
		bashD += time.Since(t0)
		if err != nil {
			b.Fatalf("bash -c true: %v", err)
		}
	}
	b.StopTimer()
	per := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / float64(b.N) }
	b.ReportMetric(per(runD), "run-ns/op")
	b.ReportMetric(per(bashD), "bash-ns/op")
	b.ReportMetric(per(runD)/per(bashD), "ratio")
	b.ReportMetric(per(pingD), "ping-ns/op")
	b.ReportMetric(per(statusD), "status-ns/op")
	reportPhases(b, d, calls)
}

// runCall is when a run call was sent and when its answer arrived.
type runCall struct{ sent, answered time.Time }

// reportPhases reports the medians of the phases of the run calls whose
// jobs `hive ps --all --json` still lists.
func reportPhases(b *testing.B, d *daemon, calls map[string]runCall) {
	out, err := hivetest.Command(b, d.Dir, "ps", "--all", "--json").Output()
	if err != nil {
		b.Fatalf("hive ps --all --json: %v", err)
	}
	var jobs []struct {
		ID                      string
		Created, Started, Ended time.Time
	}
	if err := json.Unmarshal(out, &jobs); err != nil {
		b.Fatalf("hive ps --all --json: %v", err)
	}
	var accept, spawn, exit, reply []time.Duration
	for _, j := range jobs {
		c, ok := calls[j.ID]
		if !ok || j.Started.IsZero() || j.Ended.IsZero() {
			continue
		}
		accept = append(accept, j.Created.Sub(c.sent))
		spawn = append(spawn, j.Started.Sub(j.Created))
		exit = append(exit, j.Ended.Sub(j.Started))
		reply = append(reply, c.answered.Sub(j.Ended))
	}
	if len(accept) == 0 {
		return
	}
	median := func(x []time.Duration) float64 {
		slices.Sort(x)
		return float64(x[len(x)/2].Nanoseconds()) / 1e3
	}
	b.ReportMetric(median(accept), "p50-accept-us")
	b.ReportMetric(median(spawn), "p50-spawn-us")
	b.ReportMetric(median(exit), "p50-exit-us")
	b.ReportMetric(median(reply), "p50-reply-us")
}
