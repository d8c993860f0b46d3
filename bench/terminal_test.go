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
// The call is made by two clients, each iteration doing one of each plus
// one spawn:
//   - sdk: the go-sdk MCP client, what a Go agent uses; its own decoding
//     and goroutine handoffs are part of its time;
//   - raw: JSON-RPC lines written to the bridge and the answer line read,
//     no client library: hive's own round trip (bridge, daemon, tool,
//     process).
//
// ratio = sdk-exec/spawn, raw-ratio = raw-exec/spawn (target <= 1.5).
func BenchmarkExecRoundTrip(b *testing.B) {
	d := startDaemon(b)
	sess := connectMCP(b, d)
	raw := connectRaw(b, d)
	ctx := context.Background()
	params := &mcp.CallToolParams{Name: "terminal_exec", Arguments: map[string]any{"cmd": "true"}}
	const rawParams = `{"name":"terminal_exec","arguments":{"cmd":"true"}}`
	check := func(structured any) {
		var env struct {
			ExitCode  *int   `json:"exit_code"`
			ShellKind string `json:"shell_kind"`
		}
		data, _ := json.Marshal(structured)
		if err := json.Unmarshal(data, &env); err != nil || env.ExitCode == nil || *env.ExitCode != 0 || env.ShellKind != "direct" {
			b.Fatalf("envelope %s", data)
		}
	}
	// Warm up every path once.
	if _, err := sess.CallTool(ctx, params); err != nil {
		b.Fatal(err)
	}
	if _, err := raw.call("tools/call", rawParams); err != nil {
		b.Fatal(err)
	}
	if err := exec.Command("true").Run(); err != nil {
		b.Fatal(err)
	}
	var sdkD, rawD, spawnD time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		res, err := sess.CallTool(ctx, params)
		sdkD += time.Since(t0)
		if err != nil || res.IsError {
			b.Fatalf("terminal_exec: %v %+v", err, res)
		}
		check(res.StructuredContent)

		t0 = time.Now()
		out, err := raw.call("tools/call", rawParams)
		rawD += time.Since(t0)
		if err != nil {
			b.Fatal(err)
		}
		var r struct {
			IsError           bool            `json:"isError"`
			StructuredContent json.RawMessage `json:"structuredContent"`
		}
		if err := json.Unmarshal(out, &r); err != nil || r.IsError {
			b.Fatalf("terminal_exec (raw): %s", out)
		}
		check(r.StructuredContent)

		t0 = time.Now()
		if err := exec.Command("true").Run(); err != nil {
			b.Fatal(err)
		}
		spawnD += time.Since(t0)
	}
	b.StopTimer()
	per := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / float64(b.N) }
	b.ReportMetric(per(sdkD), "sdk-exec-ns/op")
	b.ReportMetric(per(rawD), "raw-exec-ns/op")
	b.ReportMetric(per(spawnD), "spawn-ns/op")
	b.ReportMetric(per(sdkD)/per(spawnD), "ratio")
	b.ReportMetric(per(rawD)/per(spawnD), "raw-ratio")
}

// BenchmarkToolsListSize reports the size of tools/list, of the server's
// instructions (JSON-encoded, as sent at initialize) and of the two
// together for all groups (target <= 16 000 bytes: they are paid for in
// every agent turn), for each group alone, and for all groups in the text
// form of answers (--answers text: no output schemas).
func BenchmarkToolsListSize(b *testing.B) {
	d := startDaemon(b)
	for _, g := range []string{"", "execution", "terminal", "search", "inbox", "meta", "swarm", "answers=text"} {
		name, args := fmt.Sprintf("groups=%s", g), groupsArgs(g)
		if g == "answers=text" { // all groups, the text form: no output schemas
			name, args = g, []string{"--answers", "text"}
		}
		b.Run(name, func(b *testing.B) {
			sess := connectMCP(b, d, args...)
			instr, _ := json.Marshal(sess.InitializeResult().Instructions)
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
			b.ReportMetric(float64(len(instr)), "instructions-bytes")
			b.ReportMetric(float64(size+len(instr)), "total-bytes")
		})
	}
}

func groupsArgs(g string) []string {
	if g == "" {
		return nil
	}
	return []string{"--groups", g}
}
