package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hivetools/hive/internal/hivetest"
)

// A client that never calls logging/setLevel hears a background job's
// end all the same, whether it starts its session with initialize (up to
// protocol 2025-11-25) or with the stateless server/discover (2026-07-28,
// the go-sdk's own client since v1.8, which got no push at all).
func TestPushWithoutSetLevel(t *testing.T) {
	state := hivetest.StateDir(t)
	for _, version := range []string{"2025-06-18", ""} {
		name := version
		if name == "" {
			name = "the client's latest"
		}
		t.Run(name, func(t *testing.T) {
			logs := make(chan string, 64)
			c := mcp.NewClient(&mcp.Implementation{Name: "push", Version: "1"}, &mcp.ClientOptions{
				LoggingMessageHandler: func(_ context.Context, r *mcp.LoggingMessageRequest) {
					b, _ := json.Marshal(r.Params.Data)
					select {
					case logs <- string(b):
					default:
					}
				},
			})
			ctx := t.Context()
			cs, err := c.Connect(ctx, &mcp.CommandTransport{Command: hivetest.Command(t, state, "mcp")}, &mcp.ClientSessionOptions{ProtocolVersion: version})
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "run", Arguments: map[string]any{"cmd": "true", "wait_seconds": 0}})
			if err != nil || res.IsError {
				t.Fatalf("run: %v %+v", err, res)
			}
			b, _ := json.Marshal(res.StructuredContent)
			var st struct {
				ID string `json:"id"`
			}
			json.Unmarshal(b, &st)
			timeout := time.After(20 * time.Second)
			for {
				select {
				case l := <-logs:
					if strings.Contains(l, `"key":"`+st.ID+`"`) && strings.Contains(l, " done") {
						return
					}
				case <-timeout:
					t.Fatalf("no log message of job %s's end within 20 s (protocol %q)", st.ID, version)
				}
			}
		})
	}
}
