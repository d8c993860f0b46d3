package daemon

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hivetools/hive/internal/client"
	"github.com/hivetools/hive/internal/hivetest"
	"github.com/hivetools/hive/internal/paths"
	"github.com/hivetools/hive/internal/proto"
)

// A client that stops reading must not hold up other sessions'
// notifications, nor the daemon's shutdown.
func TestStalledClientDoesNotBlockOthers(t *testing.T) {
	dir, err := os.MkdirTemp("", "hive-d-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	l := paths.Layout{Dir: dir}
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, Config{StateDir: dir, Logger: slog.New(slog.DiscardHandler), Ready: func() { close(ready) }})
	}()
	select {
	case <-ready:
	case err := <-done:
		t.Fatal(err)
	}

	// The stalled session: initializes, asks for log messages, then reads nothing.
	stalled, _, err := client.Open(l, proto.Request{Cmd: proto.CmdMCP})
	if err != nil {
		t.Fatal(err)
	}
	defer stalled.Close()
	for _, m := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"stalled","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"logging/setLevel","params":{"level":"info"}}`,
	} {
		stalled.Write([]byte(m + "\n"))
	}

	// A healthy session subscribed to loose ends.
	hc, _, err := client.Open(l, proto.Request{Cmd: proto.CmdMCP})
	if err != nil {
		t.Fatal(err)
	}
	var updates atomic.Int32
	c := mcp.NewClient(&mcp.Implementation{Name: "healthy", Version: "1"}, &mcp.ClientOptions{
		ResourceUpdatedHandler: func(context.Context, *mcp.ResourceUpdatedNotificationRequest) { updates.Add(1) },
	})
	cs, err := c.Connect(ctx, &mcp.IOTransport{Reader: hc, Writer: hc}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: "hive://loose-ends"}); err != nil {
		t.Fatal(err)
	}

	// Enough changes to fill the stalled session's socket many times over.
	big := strings.Repeat("x", 4096)
	for i := 0; i < 400; i++ {
		if _, err := client.Call(l, proto.Request{Cmd: proto.CmdTodo, Subsystem: "test", Key: fmt.Sprint(i), Summary: big}); err != nil {
			t.Fatal(err)
		}
	}
	// The healthy session hears about the changes (a burst may be
	// coalesced, never silenced).
	if err := hivetest.Wait(10*time.Second, func() error {
		if n := updates.Load(); n < 100 {
			return fmt.Errorf("healthy session got %d notifications for 400 changes", n)
		}
		return nil
	}); err != nil {
		t.Error(err)
	}
	var le struct {
		Todos      []json.RawMessage `json:"todos"`
		TodosTotal int               `json:"todos_total"`
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "get_loose_ends"})
	if err != nil || res.IsError {
		t.Fatalf("get_loose_ends: %v %+v", err, res)
	}
	b, _ := json.Marshal(res.StructuredContent)
	json.Unmarshal(b, &le)
	if le.TodosTotal != 400 || len(le.Todos) != 50 {
		t.Errorf("%d todos of %d listed, want the first 50 of 400", len(le.Todos), le.TodosTotal)
	}
	cs.Close()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run: %v", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("daemon did not stop with a stalled client connected")
	}
}
