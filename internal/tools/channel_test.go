package tools

import (
	"context"
	"encoding/json"
	"github.com/hivetools/hive/internal/service"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"

	"github.com/hivetools/hive/internal/inbox"
	"github.com/hivetools/hive/internal/paths"
	"github.com/hivetools/hive/internal/store"
)

func msgEvent(id, from string) channelEvent {
	return channelEvent{key: "message/" + id, kind: "message", id: id,
		params: ChannelParams{Content: "inbox message " + id, Meta: map[string]string{"kind": "message", "id": id, "from": from}}}
}

func jobEvent(id, exit string) channelEvent {
	return channelEvent{key: "todo/" + id, kind: "job", id: id, exit: exit,
		params: ChannelParams{Content: "task " + id + " done", Meta: map[string]string{"kind": "job", "id": id, "status": "done", "exit": exit}}}
}

// The coalescer: one event goes out as it is once settled; what comes
// within a second of the last notification waits for the second to pass
// and goes out as one summary; an event removed before it went out is not
// sent; a key is queued once until its loose end goes.
func TestCoalescer(t *testing.T) {
	t0 := time.Unix(1000, 0)
	var co coalescer
	due, queued := co.add(msgEvent("1", "ci"), t0)
	if !queued || !due.Equal(t0.Add(channelSettle)) {
		t.Fatalf("first event due %v (queued %v), want after the settle time", due, queued)
	}
	p, ok := co.take(due)
	if !ok || p.Meta["kind"] != "message" || p.Meta["id"] != "1" {
		t.Fatalf("one event: %+v %v", p, ok)
	}
	sent := due
	if _, ok := co.take(sent); ok {
		t.Fatal("take with nothing pending")
	}

	now := sent.Add(100 * time.Millisecond)
	due, _ = co.add(msgEvent("2", "ci"), now)
	if !due.Equal(sent.Add(channelGap)) {
		t.Errorf("due %v, want a second after the last (%v)", due, sent.Add(channelGap))
	}
	co.add(msgEvent("3", "bot"), now)
	co.add(jobEvent("ab12", "0"), now)
	co.add(jobEvent("cd34", "2"), now)
	if _, queued := co.add(jobEvent("cd34", "2"), now); queued {
		t.Error("the same job end queued twice")
	}
	co.remove("todo/ab12") // the agent read its end meanwhile
	p, _ = co.take(due)
	want := "3 events: 2 inbox messages from ci, bot (read_inbox takes them); 1 jobs ended: cd34 done exit 2; get_loose_ends lists them."
	if p.Content != want || p.Meta["kind"] != "summary" || p.Meta["count"] != "3" {
		t.Errorf("summary %+v\nwant content %q", p, want)
	}
	if _, queued := co.add(jobEvent("cd34", "2"), due); queued {
		t.Error("a job end pushed twice")
	}
	co.remove("todo/cd34") // its todo cleared: a later todo with the key is news again
	if _, queued := co.add(jobEvent("cd34", "2"), due); !queued {
		t.Error("a key not forgotten when its loose end went")
	}
}

// A summary of many jobs lists five and counts the rest.
func TestSummaryManyJobs(t *testing.T) {
	var evs []channelEvent
	for _, id := range []string{"a", "b", "c", "d", "e", "f", "g"} {
		evs = append(evs, jobEvent(id, "1"))
	}
	p := summarize(evs)
	if !strings.Contains(p.Content, "7 jobs ended: a done exit 1, b done exit 1, c done exit 1, d done exit 1, e done exit 1, 2 more") {
		t.Errorf("%q", p.Content)
	}
}

// The carrier the server sends becomes the channel notification; other
// messages pass as they are.
func TestUnwrapChannel(t *testing.T) {
	want := ChannelParams{Content: "task x done", Meta: map[string]string{"kind": "job", "id": "x", "exit": "0"}}
	carrier, err := json.Marshal(&mcp.ProgressNotificationParams{ProgressToken: channelToken, Meta: mcp.Meta{channelToken: want}})
	if err != nil {
		t.Fatal(err)
	}
	msg, ok := UnwrapChannel(&jsonrpc.Request{Method: "notifications/progress", Params: carrier})
	if !ok {
		t.Fatal("carrier not unwrapped")
	}
	r := msg.(*jsonrpc.Request)
	var got ChannelParams
	if err := json.Unmarshal(r.Params, &got); err != nil || r.Method != ChannelMethod || r.IsCall() ||
		got.Content != want.Content || len(got.Meta) != 3 || got.Meta["exit"] != "0" {
		t.Errorf("unwrapped %s %s", r.Method, r.Params)
	}
	id, err := jsonrpc.MakeID(float64(1))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []jsonrpc.Message{
		&jsonrpc.Request{Method: "notifications/progress", Params: json.RawMessage(`{"progressToken":"tok","progress":1}`)},
		&jsonrpc.Request{Method: "notifications/progress", Params: json.RawMessage(`{"progressToken":"other","progress":1,"message":"hive/claude-channel"}`)},
		&jsonrpc.Request{ID: id, Method: "notifications/progress", Params: carrier},
		&jsonrpc.Request{Method: "notifications/message", Params: carrier},
		&jsonrpc.Response{ID: id, Result: carrier},
	} {
		if out, ok := UnwrapChannel(m); ok || out != m {
			t.Errorf("%+v unwrapped", m)
		}
	}
}

// oldProtocol serves protocol versions before the sessionless 2026-07-28
// only: sessions that begin with initialize and have a log level (on
// 2026-07-28 the level comes with each request: see docs/push.md).
type oldProtocol struct{ mcp.Transport }

func (oldProtocol) SupportsProtocolVersion(v string) bool { return v < "2026-07-28" }

// A server pushes a new message to a client that set no level and
// declared the channel capability, as an info log and as the channel
// carrier (an in-memory transport does not unwrap it), and its
// notification goroutine ends with stop.
func TestServerPushesAndStops(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	l := paths.Layout{Dir: t.TempDir()}
	if err := l.MakeDirs(); err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(l.DB())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ib, err := inbox.New(inbox.Options{Store: st, Layout: l})
	if err != nil {
		t.Fatal(err)
	}
	defer ib.Close()
	srv, stop, err := NewServer(service.New(service.Service{Inbox: ib, Layout: l}), &Session{ID: "t"}, []string{GroupInbox})
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	got := make(chan string, 16)
	c := mcp.NewClient(&mcp.Implementation{Name: "t"}, &mcp.ClientOptions{
		Capabilities: &mcp.ClientCapabilities{Experimental: map[string]any{ChannelCapability: map[string]any{}}},
		LoggingMessageHandler: func(_ context.Context, r *mcp.LoggingMessageRequest) {
			b, _ := json.Marshal(r.Params)
			got <- "log " + string(b)
		},
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
			b, _ := json.Marshal(r.Params)
			got <- "progress " + string(b)
		},
	})
	ct, stt := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(t.Context(), oldProtocol{stt}, nil)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := c.Connect(t.Context(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	if in := cs.InitializeResult().Instructions; !strings.Contains(in, "read_inbox") || strings.Contains(in, "terminal_exec") {
		t.Errorf("instructions for the inbox group:\n%s", in)
	}
	if _, err := ib.Wake(t.Context(), "ci", "build 9 failed"); err != nil {
		t.Fatal(err)
	}
	var logged, carried bool
	deadline := time.After(10 * time.Second)
	for !logged || !carried {
		select {
		case s := <-got:
			logged = logged || strings.HasPrefix(s, "log ") && strings.Contains(s, `"level":"info"`) && strings.Contains(s, "build 9 failed")
			carried = carried || strings.HasPrefix(s, "progress ") && strings.Contains(s, `"progressToken":"hive/claude-channel"`) &&
				strings.Contains(s, `"meta":{"from":"ci","id":"1","kind":"message"}`)
		case <-deadline:
			t.Fatalf("log %v, carrier %v", logged, carried)
		}
	}
	cs.Close()
	ss.Wait()
	stop()
}
