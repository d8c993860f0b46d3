package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hivetools/hive/internal/hivetest"
)

// rawMsg is one JSON-RPC message as a raw client reads it.
type rawMsg struct {
	ID     *int64          `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  json.RawMessage `json:"error"`
	at     time.Time
}

// channelParams are the params of notifications/claude/channel.
type channelParams struct {
	Content string            `json:"content"`
	Meta    map[string]string `json:"meta"`
}

// rawClient speaks newline-delimited JSON-RPC to a real `hive mcp` bridge
// and declares nothing: no capabilities, no subscriptions, no log level.
type rawClient struct {
	t       *testing.T
	in      io.WriteCloser
	mu      sync.Mutex
	msgs    []rawMsg
	changed chan struct{}
	nextID  int64
}

func rawConnect(t *testing.T, state string) *rawClient {
	t.Helper()
	cmd := hivetest.Command(t, state, "mcp")
	cmd.Dir = t.TempDir()
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &rawClient{t: t, in: in, changed: make(chan struct{}, 1)}
	read := make(chan struct{})
	go func() {
		defer close(read)
		sc := bufio.NewScanner(out)
		sc.Buffer(nil, 16<<20)
		for sc.Scan() {
			var m rawMsg
			if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
				t.Errorf("bad line from the bridge: %q", sc.Bytes())
				continue
			}
			m.at = time.Now()
			c.mu.Lock()
			c.msgs = append(c.msgs, m)
			c.mu.Unlock()
			select {
			case c.changed <- struct{}{}:
			default:
			}
		}
	}()
	t.Cleanup(func() {
		in.Close() // the bridge exits at the end of its input
		<-read
		cmd.Wait()
	})
	return c
}

func (c *rawClient) send(v any) {
	c.t.Helper()
	b, _ := json.Marshal(v)
	if _, err := c.in.Write(append(b, '\n')); err != nil {
		c.t.Fatal(err)
	}
}

// waitFor waits until cond holds over every message received so far.
func (c *rawClient) waitFor(what string, cond func([]rawMsg) bool) []rawMsg {
	c.t.Helper()
	deadline := time.After(15 * time.Second)
	for {
		c.mu.Lock()
		msgs := append([]rawMsg(nil), c.msgs...)
		c.mu.Unlock()
		if cond(msgs) {
			return msgs
		}
		select {
		case <-c.changed:
		case <-deadline:
			var b strings.Builder
			for _, m := range msgs {
				fmt.Fprintf(&b, "\n  %s %s", m.Method, m.Params)
			}
			c.t.Fatalf("timed out waiting for %s; got:%s", what, b.String())
		}
	}
}

// call sends a request and returns its result.
func (c *rawClient) call(method string, params any) json.RawMessage {
	c.t.Helper()
	c.nextID++
	id := c.nextID
	c.send(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	var res json.RawMessage
	c.waitFor("the answer to "+method, func(ms []rawMsg) bool {
		for _, m := range ms {
			if m.ID != nil && *m.ID == id && m.Method == "" {
				if m.Error != nil {
					c.t.Fatalf("%s: %s", method, m.Error)
				}
				res = m.Result
				return true
			}
		}
		return false
	})
	return res
}

// initialize does the handshake, declaring the claude/channel capability
// as Claude Code does and nothing else, and returns the result.
func (c *rawClient) initialize() json.RawMessage {
	c.t.Helper()
	res := c.call("initialize", map[string]any{"protocolVersion": "2025-06-18",
		"capabilities": map[string]any{"experimental": map[string]any{"claude/channel": map[string]any{}}},
		"clientInfo":   map[string]any{"name": "raw", "version": "1"}})
	c.send(map[string]any{"jsonrpc": "2.0", "method": "notifications/initialized"})
	return res
}

// channels are the channel notifications among msgs.
func channels(t *testing.T, msgs []rawMsg) []channelParams {
	var out []channelParams
	for _, m := range msgs {
		if m.Method != "notifications/claude/channel" {
			continue
		}
		var p channelParams
		if err := json.Unmarshal(m.Params, &p); err != nil {
			t.Fatalf("channel params %s: %v", m.Params, err)
		}
		out = append(out, p)
	}
	return out
}

// infoLogs are the data of the info log messages among msgs.
func infoLogs(msgs []rawMsg) []string {
	var out []string
	for _, m := range msgs {
		var p struct {
			Level string          `json:"level"`
			Data  json.RawMessage `json:"data"`
		}
		if m.Method == "notifications/message" && json.Unmarshal(m.Params, &p) == nil && p.Level == "info" {
			out = append(out, string(p.Data))
		}
	}
	return out
}

// wakeSocket puts a message in the inbox through the daemon's socket.
func wakeSocket(t *testing.T, state, from, body string) {
	t.Helper()
	c, err := net.Dial("unix", filepath.Join(state, "hive.sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	b, _ := json.Marshal(map[string]string{"cmd": "wake", "from": from, "body": body})
	c.Write(append(b, '\n'))
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil || !strings.Contains(line, `"ok":true`) {
		t.Fatalf("wake: %q %v", line, err)
	}
}

// A client that declared the claude/channel capability and nothing else
// (no subscription, no log level) is told at initialize how to use hive
// and that hive is a Claude Code channel, and is pushed a job's end and a
// new message, each as a channel
// notification (kind, id, exit / from in meta) and as an info log. A job
// whose end the agent saw inline is not pushed on the channel.
func TestChannelPushToRawClient(t *testing.T) {
	state := hivetest.StateDir(t)
	c := rawConnect(t, state)
	var init struct {
		Capabilities struct {
			Experimental map[string]json.RawMessage `json:"experimental"`
		} `json:"capabilities"`
		Instructions string `json:"instructions"`
	}
	if err := json.Unmarshal(c.initialize(), &init); err != nil {
		t.Fatal(err)
	}
	if string(init.Capabilities.Experimental["claude/channel"]) != "{}" {
		t.Errorf("experimental capabilities %v, want claude/channel: {}", init.Capabilities.Experimental)
	}
	for _, want := range []string{"semantic_status", "terminal_output_get", "terminal_job_logs", "loose end", "remind"} {
		if !strings.Contains(init.Instructions, want) {
			t.Errorf("instructions lack %q:\n%s", want, init.Instructions)
		}
	}

	gate := filepath.Join(t.TempDir(), "gate")
	var st struct {
		StructuredContent struct {
			ID     string `json:"id"`
			Status string `json:"status"`
		} `json:"structuredContent"`
	}
	json.Unmarshal(c.call("tools/call", map[string]any{"name": "run", "arguments": map[string]any{
		"cmd": fmt.Sprintf("while [ ! -e %s ]; do sleep 0.02; done; exit 3", gate), "wait_seconds": 0}}), &st)
	id := st.StructuredContent.ID
	if id == "" {
		t.Fatal("run gave no id")
	}
	os.WriteFile(gate, nil, 0o600)
	msgs := c.waitFor("the job's end on the channel and in the log", func(ms []rawMsg) bool {
		var onChannel, logged bool
		for _, p := range channels(t, ms) {
			onChannel = onChannel || p.Meta["id"] == id
		}
		for _, l := range infoLogs(ms) {
			logged = logged || strings.Contains(l, id) && strings.Contains(l, "done, exit 3")
		}
		return onChannel && logged
	})
	for _, p := range channels(t, msgs) {
		if p.Meta["id"] == id && (p.Meta["kind"] != "job" || p.Meta["exit"] != "3" || p.Meta["status"] != "done" ||
			!strings.Contains(p.Content, "task "+id+" done, exit 3")) {
			t.Errorf("job end on the channel: %+v", p)
		}
	}

	// A job observed inline: its end is the answer, not news.
	var inline struct {
		StructuredContent struct {
			ID     string `json:"id"`
			Status string `json:"status"`
		} `json:"structuredContent"`
	}
	json.Unmarshal(c.call("tools/call", map[string]any{"name": "run", "arguments": map[string]any{"cmd": "true"}}), &inline)
	if inline.StructuredContent.Status != "done" {
		t.Fatalf("inline run: %+v", inline)
	}

	if out, err := hivetest.Run(t, state, "wake", "--from", "ci", "build 7 broke"); err != nil {
		t.Fatalf("hive wake: %v %s", err, out)
	}
	msgs = c.waitFor("the message on the channel and in the log", func(ms []rawMsg) bool {
		var onChannel, logged bool
		for _, p := range channels(t, ms) {
			onChannel = onChannel || strings.Contains(p.Content, "build 7 broke")
		}
		for _, l := range infoLogs(ms) {
			logged = logged || strings.Contains(l, `"from":"ci"`) && strings.Contains(l, "build 7 broke")
		}
		return onChannel && logged
	})
	for _, p := range channels(t, msgs) {
		if p.Meta["id"] == inline.StructuredContent.ID || p.Meta["kind"] == "summary" {
			t.Errorf("pushed a job the agent saw end inline: %+v", p)
		}
		if strings.Contains(p.Content, "build 7 broke") && (p.Meta["kind"] != "message" || p.Meta["from"] != "ci" || p.Meta["id"] == "") {
			t.Errorf("message on the channel: %+v", p)
		}
	}
}

// A burst of 20 messages right after one was pushed becomes at most three
// channel notifications, at least a second apart, the later ones summaries
// naming their count; every message is accounted for.
func TestChannelCoalescesBursts(t *testing.T) {
	state := hivetest.StateDir(t)
	c := rawConnect(t, state)
	c.initialize()
	const n = 21
	wakeSocket(t, state, "bot", "ping 0")
	c.waitFor("the first message on the channel", func(ms []rawMsg) bool { return len(channels(t, ms)) == 1 })
	for i := 1; i < n; i++ {
		wakeSocket(t, state, "bot", "ping "+strconv.Itoa(i))
	}
	count := func(p channelParams) int {
		if p.Meta["kind"] == "summary" {
			k, _ := strconv.Atoi(p.Meta["count"])
			return k
		}
		return 1
	}
	msgs := c.waitFor("all the messages on the channel", func(ms []rawMsg) bool {
		total := 0
		for _, p := range channels(t, ms) {
			total += count(p)
		}
		return total >= n
	})
	var at []time.Time
	for _, m := range msgs {
		if m.Method == "notifications/claude/channel" {
			at = append(at, m.at)
		}
	}
	ps := channels(t, msgs)
	t.Logf("%d messages in %d channel notifications", n, len(ps))
	if len(ps) > 3 {
		t.Errorf("%d channel notifications for a burst of %d: %+v", len(ps), n, ps)
	}
	total := 0
	for i, p := range ps {
		total += count(p)
		if p.Meta["kind"] == "summary" && !strings.HasPrefix(p.Content, p.Meta["count"]+" events: "+p.Meta["count"]+" inbox messages from bot") {
			t.Errorf("summary does not name its count: %+v", p)
		}
		if i > 0 && at[i].Sub(at[i-1]) < 900*time.Millisecond {
			t.Errorf("notifications %d and %d %v apart, want at least 1 s", i-1, i, at[i].Sub(at[i-1]))
		}
	}
	if total != n {
		t.Errorf("the notifications account for %d messages, want %d: %+v", total, n, ps)
	}
}

// Over streamable HTTP, a client that declared the claude/channel
// capability and nothing else gets the channel notification and the info
// log on its standalone SSE stream (GET).
func TestChannelPushOverHTTP(t *testing.T) {
	state := hivetest.StateDir(t)
	addr := startHTTPDaemon(t, state, "127.0.0.1:0")
	url := "http://" + addr + "/mcp"
	hdr := auth(httpToken(t, state))
	a := do(t, "POST", url, hdr, strings.Replace(initBody, `"capabilities":{}`, `"capabilities":{"experimental":{"claude/channel":{}}}`, 1))
	sid := a.header.Get("Mcp-Session-Id")
	if a.status != http.StatusOK || sid == "" || !strings.Contains(a.body, `"experimental":{"claude/channel":{}}`) {
		t.Fatalf("initialize: %d %q %s", a.status, sid, a.body)
	}
	hdr["Mcp-Session-Id"] = sid
	if a := do(t, "POST", url, hdr, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); a.status != http.StatusAccepted {
		t.Fatalf("initialized: %d %s", a.status, a.body)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
	req.Header.Set("Accept", "text/event-stream")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET stream: %v %v", err, resp)
	}
	datas := make(chan string, 64)
	go func() {
		defer close(datas)
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				datas <- d
			}
		}
	}()
	if out, err := hivetest.Run(t, state, "wake", "--from", "ci", "over http"); err != nil {
		t.Fatalf("hive wake: %v %s", err, out)
	}
	var onChannel, logged bool
	deadline := time.After(15 * time.Second)
	for !onChannel || !logged {
		select {
		case d, ok := <-datas:
			if !ok {
				t.Fatal("the stream ended")
			}
			var m rawMsg
			json.Unmarshal([]byte(d), &m)
			switch m.Method {
			case "notifications/claude/channel":
				var p channelParams
				json.Unmarshal(m.Params, &p)
				if p.Meta["kind"] != "message" || p.Meta["from"] != "ci" || !strings.Contains(p.Content, "over http") {
					t.Errorf("channel notification %s", d)
				}
				onChannel = true
			case "notifications/message":
				logged = logged || strings.Contains(d, `"level":"info"`) && strings.Contains(d, "over http")
			case "notifications/progress":
				t.Errorf("the channel carrier reached the client: %s", d)
			}
		case <-deadline:
			t.Fatalf("no channel notification and log on the stream (channel %v, log %v)", onChannel, logged)
		}
	}
	cancel()
	for range datas {
	}
}
