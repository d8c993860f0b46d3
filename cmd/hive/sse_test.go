package main

import (
	"net/http"
	"strings"
	"testing"

	"github.com/hivetools/hive/internal/hivetest"
)

// sseEvent is one event of a text/event-stream body.
type sseEvent struct{ name, id, retry, data string }

// sseEvents splits a text/event-stream body into its events (comments,
// lines starting with ':', are left out).
func sseEvents(body string) []sseEvent {
	var evs []sseEvent
	for _, block := range strings.Split(body, "\n\n") {
		var ev sseEvent
		seen := false
		for _, l := range strings.Split(block, "\n") {
			k, v, ok := strings.Cut(l, ":")
			if !ok || k == "" {
				continue
			}
			seen = true
			v = strings.TrimPrefix(v, " ")
			switch k {
			case "event":
				ev.name = v
			case "id":
				ev.id = v
			case "retry":
				ev.retry = v
			case "data":
				ev.data += v
			}
		}
		if seen {
			evs = append(evs, ev)
		}
	}
	return evs
}

// Over streamable HTTP (protocol 2025-11-25), a POST's SSE stream opens
// at once with a priming event (an id, empty data) that carries retry:,
// the wait before reconnecting; the id is real: a GET with it as
// Last-Event-ID replays what followed it (the answer).
func TestSSEPrimingEvent(t *testing.T) {
	state := hivetest.StateDir(t)
	addr := startHTTPDaemon(t, state, "127.0.0.1:0")
	url := "http://" + addr + "/mcp"
	hdr := auth(httpToken(t, state))
	a := do(t, "POST", url, hdr, strings.Replace(initBody, "2025-06-18", "2025-11-25", 1))
	sid := a.header.Get("Mcp-Session-Id")
	if a.status != http.StatusOK || sid == "" || !strings.Contains(a.body, `"protocolVersion":"2025-11-25"`) {
		t.Fatalf("initialize: %d %q %s", a.status, sid, a.body)
	}
	hdr["Mcp-Session-Id"] = sid
	hdr["Mcp-Protocol-Version"] = "2025-11-25"
	if a := do(t, "POST", url, hdr, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); a.status != http.StatusAccepted {
		t.Fatalf("initialized: %d %s", a.status, a.body)
	}
	a = do(t, "POST", url, hdr, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"run","arguments":{"cmd":"echo primed","wait_seconds":10}}}`)
	if a.status != http.StatusOK || !strings.HasPrefix(a.header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("tools/call: %d %s %s", a.status, a.header.Get("Content-Type"), a.body)
	}
	evs := sseEvents(a.body)
	if len(evs) < 2 {
		t.Fatalf("tools/call stream: %d events, want a priming event and the answer:\n%s", len(evs), a.body)
	}
	if p := evs[0]; p.id == "" || p.data != "" || p.retry != "1000" {
		t.Errorf("first event %+v, want an id, empty data and retry: 1000 (ms):\n%s", p, a.body)
	}
	last := evs[len(evs)-1]
	if last.id == "" || !strings.Contains(last.data, `"id":2`) || !strings.Contains(last.data, `primed`) {
		t.Errorf("last event %+v, want the answer, with an id", last)
	}
	hdr["Last-Event-ID"] = evs[0].id
	r := do(t, "GET", url, hdr, "")
	if r.status != http.StatusOK || !strings.Contains(r.body, `"id":2`) || !strings.Contains(r.body, "primed") {
		t.Errorf("GET with Last-Event-ID %s: %d %s, want the answer again", evs[0].id, r.status, r.body)
	}
}
