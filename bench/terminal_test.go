package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// BenchmarkExecRoundTrip compares a terminal_exec("true") call through a
// real bridge and daemon (direct exec: no shell in between) against
// spawning `true` directly from this process, alternating in one run.
// ratio = exec/spawn (target <= 1.5).
func BenchmarkExecRoundTrip(b *testing.B) {
	d := startDaemon(b)
	sess := connectMCP(b, d)
	ctx := context.Background()
	params := &mcp.CallToolParams{Name: "terminal_exec", Arguments: map[string]any{"cmd": "true"}}
	if _, err := sess.CallTool(ctx, params); err != nil {
		b.Fatal(err)
	}
	var execD, spawnD time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		res, err := sess.CallTool(ctx, params)
		execD += time.Since(t0)
		if err != nil || res.IsError {
			b.Fatalf("terminal_exec: %v %+v", err, res)
		}
		var env struct {
			ExitCode  *int   `json:"exit_code"`
			ShellKind string `json:"shell_kind"`
		}
		raw, _ := json.Marshal(res.StructuredContent)
		if err := json.Unmarshal(raw, &env); err != nil || env.ExitCode == nil || *env.ExitCode != 0 || env.ShellKind != "direct" {
			b.Fatalf("envelope %s", raw)
		}
		t0 = time.Now()
		if err := exec.Command("true").Run(); err != nil {
			b.Fatal(err)
		}
		spawnD += time.Since(t0)
	}
	b.StopTimer()
	per := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / float64(b.N) }
	b.ReportMetric(per(execD), "exec-ns/op")
	b.ReportMetric(per(spawnD), "spawn-ns/op")
	b.ReportMetric(per(execD)/per(spawnD), "ratio")
}

// BenchmarkToolsListSize reports the size of tools/list for all groups
// together (target <= 16 KiB: it is paid for in every agent turn) and for
// each group alone.
func BenchmarkToolsListSize(b *testing.B) {
	d := startDaemon(b)
	for _, g := range []string{"", "execution", "terminal", "search", "inbox", "meta"} {
		b.Run(fmt.Sprintf("groups=%s", g), func(b *testing.B) {
			sess := connectMCP(b, d, groupsArgs(g)...)
			var size int
			for i := 0; i < b.N; i++ {
				res, err := sess.ListTools(context.Background(), &mcp.ListToolsParams{})
				if err != nil {
					b.Fatal(err)
				}
				raw, _ := json.Marshal(res)
				size = len(raw)
			}
			b.ReportMetric(float64(size), "bytes")
		})
	}
}

func groupsArgs(g string) []string {
	if g == "" {
		return nil
	}
	return []string{"--groups", g}
}
