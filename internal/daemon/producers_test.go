package daemon

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/hivetools/hive/internal/client"
	"github.com/hivetools/hive/internal/hivetest"
	"github.com/hivetools/hive/internal/inbox"
	"github.com/hivetools/hive/internal/paths"
	"github.com/hivetools/hive/internal/proto"
	"github.com/hivetools/hive/internal/sockapi"
)

// call sends one request with the client and fails the test on an error.
func call(t *testing.T, l paths.Layout, req proto.Request) proto.Response {
	t.Helper()
	resp, err := client.Call(l, req)
	if err != nil {
		t.Fatalf("%s: %v", req.Cmd, err)
	}
	return resp
}

// The producers' commands: wake, todo, clear_todo, todo_ls, inbox_ls,
// inbox_next, inbox_ack, turn and graceful_stop answer what they did, and
// bad input gets an error naming the field and the rule.
func TestProducerCommands(t *testing.T) {
	l := runDaemon(t, Config{})
	bad := []struct {
		req  proto.Request
		want string
	}{
		{proto.Request{Cmd: proto.CmdWake, From: "", Body: "x"}, `from "": must be 1-64 characters`},
		{proto.Request{Cmd: proto.CmdWake, From: "has space", Body: "x"}, `from "has space": must be 1-64 characters`},
		{proto.Request{Cmd: proto.CmdWake, From: strings.Repeat("a", 65), Body: "x"}, "must be 1-64 characters"},
		{proto.Request{Cmd: proto.CmdWake, From: "ci"}, "body: must not be empty"},
		{proto.Request{Cmd: proto.CmdWake, From: "ci", Body: strings.Repeat("x", inbox.MaxBody+1)}, "body: 1048577 bytes, at most 1048576"},
		{proto.Request{Cmd: proto.CmdClearTodo, Key: "k"}, "subsystem: must not be empty"},
		{proto.Request{Cmd: proto.CmdClearTodo, Subsystem: "s"}, "key: must not be empty"},
		{proto.Request{Cmd: proto.CmdInboxAck, ID: "x"}, `id "x": must be a message id`},
		{proto.Request{Cmd: proto.CmdInboxAck}, `id "": must be a message id`},
		{proto.Request{Cmd: proto.CmdInboxAck, ID: "999"}, "id 999: no message in flight has it"},
		{proto.Request{Cmd: proto.CmdInboxNext, TimeoutSecs: 1}, "timeout_secs: only with wait: true"},
		{proto.Request{Cmd: proto.CmdInboxNext, Wait: true, TimeoutSecs: -1}, "timeout_secs -1: must be 0..1e8"},
		{proto.Request{Cmd: proto.CmdTurn, State: "sleeping"}, `state "sleeping": must be idle, thinking or compacting`},
		{proto.Request{Cmd: proto.CmdTurn, State: "idle", ContextUsage: ptr(1.5)}, "context_usage 1.5: must be 0..1"},
	}
	for _, tt := range bad {
		t.Run(tt.req.Cmd+" "+tt.want, func(t *testing.T) {
			_, err := client.Call(l, tt.req)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want %q", err, tt.want)
			}
		})
	}

	// A wake with the largest body, escaped as badly as JSON can (every
	// byte as \u0001, 6 bytes each), fits the request line.
	big := strings.Repeat("\x01", inbox.MaxBody)
	if b, _ := json.Marshal(proto.Request{Cmd: proto.CmdWake, From: "ci", Body: big}); len(b) <= 6*inbox.MaxBody || len(b) > sockapi.MaxRequestLine {
		t.Fatalf("the worst wake line is %d bytes: the test does not test the limit (%d)", len(b), sockapi.MaxRequestLine)
	}
	w1 := call(t, l, proto.Request{Cmd: proto.CmdWake, From: "ci", Body: big})
	w2 := call(t, l, proto.Request{Cmd: proto.CmdWake, From: "chat:alice@example.org", Body: "hello\nthere"})
	if w1.MessageID < 1 || w2.MessageID != w1.MessageID+1 {
		t.Fatalf("message ids %d, %d", w1.MessageID, w2.MessageID)
	}

	up := call(t, l, proto.Request{Cmd: proto.CmdTodo, Subsystem: "ci", Key: "build-42", Summary: "build 42 failed"})
	ls := call(t, l, proto.Request{Cmd: proto.CmdTodoLs})
	if len(ls.Todos) != 1 || ls.Todos[0].ID != up.TodoID || ls.Todos[0].Summary != "build 42 failed" || ls.Todos[0].Updated.IsZero() {
		t.Fatalf("todo_ls: %+v", ls.Todos)
	}

	// inbox_next takes the oldest and marks it in flight; inbox_ls shows both.
	n := call(t, l, proto.Request{Cmd: proto.CmdInboxNext})
	if n.Message == nil || n.Message.ID != w1.MessageID || n.Message.From != "ci" || n.Message.Body != big {
		t.Fatalf("inbox_next: %+v", n.Message != nil)
	}
	il := call(t, l, proto.Request{Cmd: proto.CmdInboxLs})
	if il.Undelivered == nil || *il.Undelivered != 1 || len(il.Messages) != 2 ||
		!il.Messages[0].InFlight || il.Messages[0].Size != int64(inbox.MaxBody) ||
		il.Messages[1].InFlight || il.Messages[1].Preview != "hello there" || il.Messages[1].From != "chat:alice@example.org" {
		t.Fatalf("inbox_ls: %+v", il)
	}
	call(t, l, proto.Request{Cmd: proto.CmdInboxAck, ID: fmt.Sprint(w1.MessageID)})
	if _, err := client.Call(l, proto.Request{Cmd: proto.CmdInboxAck, ID: fmt.Sprint(w1.MessageID)}); err == nil || !strings.Contains(err.Error(), "acked already, or dropped") {
		t.Errorf("second ack: %v", err)
	}
	n = call(t, l, proto.Request{Cmd: proto.CmdInboxNext})
	if n.Message == nil || n.Message.ID != w2.MessageID || n.Message.Body != "hello\nthere" {
		t.Fatalf("second inbox_next: %+v", n.Message)
	}
	// No message left: the changed todo makes the loose-ends one (id 0).
	n = call(t, l, proto.Request{Cmd: proto.CmdInboxNext})
	if n.Message == nil || n.Message.ID != 0 || n.Message.From != "loose-ends" || n.Message.Body != "todo ci/build-42: build 42 failed" {
		t.Fatalf("loose-ends: %+v", n.Message)
	}
	if n = call(t, l, proto.Request{Cmd: proto.CmdInboxNext}); !n.Empty || n.Message != nil {
		t.Fatalf("empty inbox_next: %+v", n)
	}

	if c := call(t, l, proto.Request{Cmd: proto.CmdClearTodo, Subsystem: "ci", Key: "build-42"}); c.Cleared == nil || !*c.Cleared {
		t.Errorf("clear_todo: %+v", c.Cleared)
	}
	if c := call(t, l, proto.Request{Cmd: proto.CmdClearTodo, Subsystem: "ci", Key: "build-42"}); c.Cleared == nil || *c.Cleared {
		t.Errorf("second clear_todo: %+v", c.Cleared)
	}
	if ls := rawRequest(t, l, []byte(`{"cmd":"todo_ls"}`+"\n"), false); ls != `{"ok":true,"todos":[]}`+"\n" {
		t.Errorf("empty todo_ls: %s", ls)
	}

	// turn: idle consumes a pending compaction and says so, once.
	if r := call(t, l, proto.Request{Cmd: proto.CmdTurn, State: "thinking", ContextUsage: ptr(0.5)}); r.CompactPending == nil || *r.CompactPending {
		t.Errorf("thinking: %+v", r.CompactPending)
	}
	if err := compact(l); err == nil || !strings.Contains(err.Error(), "50%") {
		t.Fatalf("compact at 50%%: %v", err)
	}
	call(t, l, proto.Request{Cmd: proto.CmdTurn, State: "thinking", ContextUsage: ptr(0.9)})
	if err := compact(l); err != nil {
		t.Fatal(err)
	}
	if r := call(t, l, proto.Request{Cmd: proto.CmdTurn, State: "idle"}); r.CompactPending == nil || !*r.CompactPending {
		t.Errorf("idle after compact: %+v", r.CompactPending)
	}
	if r := call(t, l, proto.Request{Cmd: proto.CmdTurn, State: "idle"}); r.CompactPending == nil || *r.CompactPending {
		t.Errorf("idle again: %+v", r.CompactPending)
	}

	g := call(t, l, proto.Request{Cmd: proto.CmdGracefulStop})
	if g.Message == nil || g.Message.ID < 1 || g.Message.From != "graceful-stop" || !strings.Contains(g.Message.Body, "stopping") {
		t.Fatalf("graceful_stop: %+v", g.Message)
	}
	call(t, l, proto.Request{Cmd: proto.CmdInboxAck, ID: fmt.Sprint(g.Message.ID)})

	// The wire forms of the doc: a numeric id, and a string one.
	w := call(t, l, proto.Request{Cmd: proto.CmdWake, From: "ci", Body: "x"})
	call(t, l, proto.Request{Cmd: proto.CmdInboxNext})
	if a := rawRequest(t, l, []byte(fmt.Sprintf(`{"cmd":"inbox_ack","id":%d}`+"\n", w.MessageID)), false); a != `{"ok":true}`+"\n" {
		t.Errorf("inbox_ack with a numeric id: %s", a)
	}
	if a := rawRequest(t, l, []byte(`{"cmd":"inbox_ack","id":1.5}`+"\n"), false); !strings.Contains(a, `id \"1.5\": must be a message id`) {
		t.Errorf("inbox_ack with a fraction: %s", a)
	}
}

func ptr[T any](v T) *T { return &v }

// compact calls the MCP tool compact in a session on the socket.
func compact(l paths.Layout) error {
	conn, _, err := client.Open(l, proto.Request{Cmd: proto.CmdMCP})
	if err != nil {
		return err
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(20 * time.Second))
	for _, m := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"compact","arguments":{}}}`,
	} {
		if _, err := conn.Write([]byte(m + "\n")); err != nil {
			return err
		}
	}
	dec := json.NewDecoder(conn)
	for {
		var msg struct {
			ID     int `json:"id"`
			Result struct {
				IsError bool `json:"isError"`
				Content []struct {
					Text string `json:"text"`
				} `json:"content"`
			} `json:"result"`
		}
		if err := dec.Decode(&msg); err != nil {
			return err
		}
		if msg.ID == 2 && msg.Result.IsError {
			return fmt.Errorf("compact: %+v", msg.Result.Content)
		}
		if msg.ID == 2 {
			return nil
		}
	}
}

// A waiting inbox_next ends with a message, a changed todo, its timeout
// (longer than the daemon's request timeout: the answer still goes out),
// or the client's end of input.
func TestInboxNextWaits(t *testing.T) {
	l := runDaemon(t, Config{RequestTimeout: 200 * time.Millisecond})
	ctx := context.Background()

	// A message that comes after the request timeout.
	got := make(chan proto.Response, 1)
	go func() {
		resp, err := client.CallWait(ctx, l, proto.Request{Cmd: proto.CmdInboxNext, Wait: true})
		if err != nil {
			t.Error(err)
		}
		got <- resp
	}()
	waitWaiters(t, l, 1)
	w := call(t, l, proto.Request{Cmd: proto.CmdWake, From: "ci", Body: "late"})
	if r := <-got; r.Message == nil || r.Message.ID != w.MessageID || r.Message.Body != "late" {
		t.Fatalf("wait: %+v", r)
	}

	// A changed todo wakes it as loose-ends.
	go func() {
		resp, _ := client.CallWait(ctx, l, proto.Request{Cmd: proto.CmdInboxNext, Wait: true})
		got <- resp
	}()
	waitWaiters(t, l, 1)
	call(t, l, proto.Request{Cmd: proto.CmdTodo, Subsystem: "ci", Key: "b", Summary: "build passed"})
	if r := <-got; r.Message == nil || r.Message.From != "loose-ends" || r.Message.Body != "todo ci/b: build passed" {
		t.Fatalf("todo wait: %+v", r.Message)
	}

	// Its timeout, longer than the request timeout.
	start := time.Now()
	r, err := client.CallWait(ctx, l, proto.Request{Cmd: proto.CmdInboxNext, Wait: true, TimeoutSecs: 0.5})
	if err != nil || !r.Empty || time.Since(start) < 500*time.Millisecond {
		t.Fatalf("timeout: %+v %v after %v", r, err, time.Since(start))
	}

	// The client's end of input: the caller's ctx ends, the answer is empty.
	cctx, cancel := context.WithCancel(ctx)
	go func() {
		resp, err := client.CallWait(cctx, l, proto.Request{Cmd: proto.CmdInboxNext, Wait: true})
		if err != nil {
			t.Error(err)
		}
		got <- resp
	}()
	waitWaiters(t, l, 1)
	cancel()
	if r := <-got; !r.Empty {
		t.Fatalf("cancelled wait: %+v", r)
	}
	// Nothing was lost: a message after the cancel is there for the next.
	w = call(t, l, proto.Request{Cmd: proto.CmdWake, From: "ci", Body: "after"})
	if r := call(t, l, proto.Request{Cmd: proto.CmdInboxNext}); r.Message == nil || r.Message.ID != w.MessageID {
		t.Fatalf("after the cancel: %+v", r)
	}
}

// waitWaiters waits until n connections wait in inbox_next (stats).
func waitWaiters(t *testing.T, l paths.Layout, n int) {
	t.Helper()
	hivetest.Eventually(t, 10*time.Second, fmt.Sprintf("%d inbox_next waiters", n), func() error {
		if st := call(t, l, proto.Request{Cmd: proto.CmdStats}).Stats; st.InboxWaiters != n {
			return fmt.Errorf("%d inbox_next waiters, want %d", st.InboxWaiters, n)
		}
		return nil
	})
}

// A daemon that stops ends a waiting inbox_next with an error saying so.
func TestInboxNextDaemonStops(t *testing.T) {
	dir, err := os.MkdirTemp("", "hive-d-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	ready := make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, Config{StateDir: dir, Logger: slog.New(slog.DiscardHandler), Ready: func() { close(ready) }})
	}()
	<-ready
	l := paths.Layout{Dir: dir}
	got := make(chan error, 1)
	go func() {
		_, err := client.CallWait(context.Background(), l, proto.Request{Cmd: proto.CmdInboxNext, Wait: true})
		got <- err
	}()
	waitWaiters(t, l, 1)
	cancel()
	if err := <-got; err == nil || !strings.Contains(err.Error(), "the daemon is stopping") {
		t.Errorf("wait at the daemon's stop: %v", err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
