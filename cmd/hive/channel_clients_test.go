package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hivetools/hive/internal/hivetest"
)

// tapTransport records every notification its client reads, as it came
// off the wire (the go-sdk client drops methods it does not know, such
// as notifications/claude/channel).
type tapTransport struct {
	mcp.Transport
	tap *tap
}

type tap struct {
	mu    sync.Mutex
	notes []*jsonrpc.Request
}

func (t tapTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return tapConn{c, t.tap}, nil
}

type tapConn struct {
	mcp.Connection
	tap *tap
}

func (c tapConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	m, err := c.Connection.Read(ctx)
	if r, ok := m.(*jsonrpc.Request); ok && !r.IsCall() {
		c.tap.mu.Lock()
		c.tap.notes = append(c.tap.notes, r)
		c.tap.mu.Unlock()
	}
	return m, err
}

// seen returns the notifications read so far.
func (t *tap) seen() []*jsonrpc.Request {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]*jsonrpc.Request(nil), t.notes...)
}

// notifications/claude/channel goes only to a client that declared the
// experimental claude/channel capability (Claude Code does); others get
// the standard notifications alone, on either protocol: initialize
// (2025-06-18) or the stateless one (2026-07-28, the go-sdk client's
// latest), whose capabilities come in each request's _meta. Job a ends at
// once and job b a second later: a's channel event is due 150 ms after its
// end, so where it is sent it comes before b's end.
func TestChannelOnlyToDeclaringClients(t *testing.T) {
	state := hivetest.StateDir(t)
	for _, version := range []string{"2025-06-18", ""} {
		for _, declares := range []bool{true, false} {
			name := fmt.Sprintf("protocol %q, declares claude/channel %v", version, declares)
			t.Run(name, func(t *testing.T) {
				opts := &mcp.ClientOptions{}
				if declares {
					opts.Capabilities = &mcp.ClientCapabilities{Experimental: map[string]any{"claude/channel": map[string]any{}}}
				}
				c := mcp.NewClient(&mcp.Implementation{Name: "channel-test", Version: "1"}, opts)
				tp := &tap{}
				cs, err := c.Connect(t.Context(), tapTransport{&mcp.CommandTransport{Command: hivetest.Command(t, state, "mcp")}, tp},
					&mcp.ClientSessionOptions{ProtocolVersion: version})
				if err != nil {
					t.Fatal(err)
				}
				defer cs.Close()
				run := func(cmd string) string {
					res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "run", Arguments: map[string]any{"cmd": cmd, "wait_seconds": 0}})
					if err != nil || res.IsError {
						t.Fatalf("run %q: %v %+v", cmd, err, res)
					}
					b, _ := json.Marshal(res.StructuredContent)
					var st struct {
						ID string `json:"id"`
					}
					json.Unmarshal(b, &st)
					return st.ID
				}
				a, b := run("true"), run("sleep 1")
				ended := func(ns []*jsonrpc.Request, id string) int {
					for i, n := range ns {
						if n.Method == "notifications/message" && strings.Contains(string(n.Params), `"key":"`+id+`"`) &&
							strings.Contains(string(n.Params), " done") {
							return i
						}
					}
					return -1
				}
				var ns []*jsonrpc.Request
				hivetest.Eventually(t, 20*time.Second, "job "+b+"'s end logged", func() error {
					if ns = tp.seen(); ended(ns, b) < 0 {
						return fmt.Errorf("%d notifications", len(ns))
					}
					return nil
				})
				var channel []string
				for _, n := range ns[:ended(ns, b)] {
					switch n.Method {
					case "notifications/claude/channel":
						channel = append(channel, string(n.Params))
					case "notifications/progress":
						t.Errorf("the channel carrier reached the client: %s", n.Params)
					}
				}
				if ended(ns, a) < 0 {
					t.Errorf("job %s's end not logged", a)
				}
				switch {
				case declares && (len(channel) != 1 || !strings.Contains(channel[0], `"id":"`+a+`"`)):
					t.Errorf("channel notifications before job %s ended: %q, want job %s's end", b, channel, a)
				case !declares && len(channel) > 0:
					t.Errorf("channel notifications to a client that did not declare claude/channel: %q", channel)
				}
			})
		}
	}
}
