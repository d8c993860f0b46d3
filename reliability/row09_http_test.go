package reliability

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hivetools/hive/internal/hivetest"
	"github.com/hivetools/hive/internal/proto"
)

// Row 9: the streamable HTTP front end holds against a hostile or clumsy
// local client: only loopback Host and Origin and the right bearer token
// get through; abandoned sessions expire and their memory comes back;
// slow bodies neither starve the unix socket nor the daemon's fds;
// oversized bodies are refused; a request without a session (other than
// initialize) is refused.
func TestRow09HTTP(t *testing.T) {
	t.Run("matrix", row09Matrix)
	t.Run("abandoned sessions", row09Abandoned)
	t.Run("slow bodies", row09SlowBodies)
	t.Run("oversized bodies", row09Oversized)
	t.Run("no session id", row09NoSessionID)
}

// (e) On a server of sessions, a request without Mcp-Session-Id that is
// not an initialize is answered 400 Bad Request (the MCP spec's streamable
// HTTP transport), and starts no session; one with an unknown id 404.
func row09NoSessionID(t *testing.T) {
	h := startHTTP(t)
	base := h.baseline(t)
	refused := 0
	for _, body := range []string{
		`{"jsonrpc":"2.0","id":2,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"status","arguments":{}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`[{"jsonrpc":"2.0","id":4,"method":"ping"}]`,
	} {
		code, hdr, answer, err := h.send("POST", h.auth(), strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if code != http.StatusBadRequest || hdr.Get("Mcp-Session-Id") != "" || !strings.Contains(answer, "Mcp-Session-Id") {
			t.Errorf("%s without a session id: %d %q (session %q), want 400 naming the header", body, code, answer, hdr.Get("Mcp-Session-Id"))
			continue
		}
		refused++
	}
	hdr := h.auth()
	hdr["Mcp-Session-Id"] = "no-such-session"
	if code, _, answer, err := h.send("POST", hdr, strings.NewReader(`{"jsonrpc":"2.0","id":5,"method":"ping"}`)); err != nil || code != http.StatusNotFound {
		t.Errorf("a ping with an unknown session id: %d %q %v, want 404", code, answer, err)
	}
	if st := h.Stats(); st.HTTPSessions != 0 {
		t.Errorf("%d sessions live after requests without an id", st.HTTPSessions)
	}
	figure(t, 9, "requests without Mcp-Session-Id other than initialize: %d of 4 answered 400 naming the header; an unknown id 404", refused)
	h.client.CloseIdleConnections()
	h.CheckBaseline(base)
}

// httpDaemon is a daemon serving HTTP on a port of its choosing.
type httpDaemon struct {
	*daemon
	url    string // of /mcp
	addr   string
	token  string
	client *http.Client
}

// startHTTP starts `hive daemon --http 127.0.0.1:0 ARGS` and reads the
// address and the token from its version answer.
func startHTTP(t *testing.T, args ...string) *httpDaemon {
	t.Helper()
	d := startDaemon(t, newStateDir(t), append([]string{"--http", "127.0.0.1:0"}, args...)...)
	resp, err := d.Call(proto.Request{Cmd: proto.CmdVersion})
	if err != nil || resp.HTTPAddr == "" || resp.HTTPAuth != "token" {
		t.Fatalf("version: %+v %v", resp, err)
	}
	b, err := os.ReadFile(resp.HTTPTokenFile)
	if err != nil {
		t.Fatal(err)
	}
	tr := &http.Transport{MaxIdleConnsPerHost: 16}
	t.Cleanup(tr.CloseIdleConnections)
	return &httpDaemon{daemon: d, url: "http://" + resp.HTTPAddr + "/mcp", addr: resp.HTTPAddr,
		token: strings.TrimSpace(string(b)), client: &http.Client{Transport: tr, Timeout: 30 * time.Second}}
}

const row09Init = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"row9","version":"1"}}}`

// send sends method to /mcp with the headers ("Host" sets the Host;
// "" values are left out) and returns the answer's status, headers and
// body. A transport error is err.
func (h *httpDaemon) send(method string, hdr map[string]string, body io.Reader) (int, http.Header, string, error) {
	req, err := http.NewRequest(method, h.url, body)
	if err != nil {
		return 0, nil, "", err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range hdr {
		switch {
		case v == "":
		case k == "Host":
			req.Host = v
		default:
			req.Header.Set(k, v)
		}
	}
	resp, err := h.client.Do(req)
	if err != nil {
		return 0, nil, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b), err
}

func (h *httpDaemon) auth() map[string]string {
	return map[string]string{"Authorization": "Bearer " + h.token}
}

// initialize opens a session and returns its id.
func (h *httpDaemon) initialize(t *testing.T) string {
	t.Helper()
	code, hdr, body, err := h.send("POST", h.auth(), strings.NewReader(row09Init))
	if err != nil || code != http.StatusOK || hdr.Get("Mcp-Session-Id") == "" {
		t.Fatalf("initialize: %d %q %v", code, body, err)
	}
	return hdr.Get("Mcp-Session-Id")
}

// end ends a session with DELETE.
func (h *httpDaemon) end(t *testing.T, id string) {
	t.Helper()
	hdr := h.auth()
	hdr["Mcp-Session-Id"] = id
	if code, _, body, err := h.send("DELETE", hdr, nil); err != nil || code != http.StatusNoContent {
		t.Fatalf("DELETE session: %d %q %v", code, body, err)
	}
}

// baseline opens and ends one session (so the server of the default
// groups exists), drops the client's idle connections and returns the
// settled figures.
func (h *httpDaemon) baseline(t *testing.T) proto.Stats {
	t.Helper()
	h.end(t, h.initialize(t))
	h.client.CloseIdleConnections()
	h.waitStats(t, "no live session", func(st proto.Stats) bool { return st.HTTPSessions == 0 })
	return h.Settled()
}

// waitStats polls the daemon's figures until cond holds (30 s at most).
func (h *httpDaemon) waitStats(t *testing.T, what string, cond func(proto.Stats) bool) proto.Stats {
	t.Helper()
	var st proto.Stats
	hivetest.Eventually(t, 30*time.Second, what, func() error {
		if st = h.Stats(); !cond(st) {
			return fmt.Errorf("%+v", st)
		}
		return nil
	})
	return st
}

// (a) Every Host × Origin × Authorization combination gets the status it
// must: a foreign Host or Origin 403 (before the token is looked at),
// then no, a wrong or a raw token 401, the right one 200.
func row09Matrix(t *testing.T) {
	h := startHTTP(t)
	base := h.baseline(t)
	hosts := []struct{ name, v string }{{"loopback", h.addr}, {"foreign", "evil.example:80"}}
	origins := []struct{ name, v string }{{"none", ""}, {"loopback", "http://localhost:3000"}, {"foreign", "http://evil.example"}}
	tokens := []struct {
		name, v string
		ok      bool
	}{
		{"none", "", false}, {"wrong", "Bearer " + strings.Repeat("0", len(h.token)), false},
		{"raw", h.token, false}, {"bearer", "bearer " + h.token, true}, {"right", "Bearer " + h.token, true},
	}
	tally := map[int]int{}
	for _, host := range hosts {
		for _, origin := range origins {
			for _, tok := range tokens {
				want := http.StatusUnauthorized
				switch {
				case host.name == "foreign" || origin.name == "foreign":
					want = http.StatusForbidden
				case tok.ok:
					want = http.StatusOK
				}
				code, hdr, body, err := h.send("POST", map[string]string{"Host": host.v, "Origin": origin.v, "Authorization": tok.v}, strings.NewReader(row09Init))
				if err != nil {
					t.Fatal(err)
				}
				tally[code]++
				if code != want {
					t.Errorf("Host %s, Origin %s, token %s: %d %q, want %d", host.name, origin.name, tok.name, code, body, want)
				}
				if code == http.StatusUnauthorized && hdr.Get("WWW-Authenticate") != "Bearer" {
					t.Errorf("Host %s, Origin %s, token %s: 401 without WWW-Authenticate: Bearer", host.name, origin.name, tok.name)
				}
				if code == http.StatusOK {
					h.end(t, hdr.Get("Mcp-Session-Id"))
				}
			}
		}
	}
	figure(t, 9, "Host×Origin×token matrix: %d cells, %d × 200, %d × 401, %d × 403, each as expected: %v",
		len(hosts)*len(origins)*len(tokens), tally[200], tally[401], tally[403], !t.Failed())
	h.client.CloseIdleConnections()
	h.CheckBaseline(base)
}

// (b) Sessions that initialize and are never used again expire after
// --http-session-idle; at most --http-max-sessions live at once (more get
// 503); once they expired the daemon's memory is back under a bound.
func row09Abandoned(t *testing.T) {
	n, maxSessions := count(300, 20000), count(32, 512)
	const idle = 2 * time.Second
	h := startHTTP(t, "--http-session-idle", idle.String(), "--http-max-sessions", fmt.Sprint(maxSessions))
	base := h.baseline(t)

	var peakLive atomic.Int64
	var peakRSS atomic.Int64
	stop := make(chan struct{})
	var mon sync.WaitGroup
	mon.Go(func() { // samples the figures while the sessions pile up
		for {
			if resp, err := h.Call(proto.Request{Cmd: proto.CmdStats}); err == nil && resp.Stats != nil {
				peakLive.Store(max(peakLive.Load(), int64(resp.Stats.HTTPSessions)))
				peakRSS.Store(max(peakRSS.Load(), resp.Stats.RSS))
			}
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	})
	var created, refused atomic.Int64
	var firstID atomic.Value
	var mu sync.Mutex
	var bad []string
	next := make(chan struct{})
	var workers sync.WaitGroup
	t0 := time.Now()
	for range 8 {
		workers.Go(func() {
			for range next {
				code, hdr, body, err := h.send("POST", h.auth(), strings.NewReader(row09Init))
				switch {
				case err == nil && code == http.StatusOK:
					created.Add(1)
					firstID.CompareAndSwap(nil, hdr.Get("Mcp-Session-Id"))
				case err == nil && code == http.StatusServiceUnavailable && strings.Contains(body, "--http-max-sessions"):
					refused.Add(1)
				default:
					mu.Lock()
					bad = append(bad, fmt.Sprintf("%d %q %v", code, body, err))
					mu.Unlock()
				}
			}
		})
	}
	for range n {
		next <- struct{}{}
	}
	close(next)
	workers.Wait()
	burst := time.Since(t0)
	if len(bad) > 0 {
		t.Errorf("%d initializes got neither 200 nor a 503 naming --http-max-sessions; first: %s", len(bad), bad[0])
	}
	st := h.waitStats(t, "every abandoned session to expire", func(st proto.Stats) bool { return st.HTTPSessions == 0 })
	drained := time.Since(t0)
	close(stop)
	mon.Wait()
	h.client.CloseIdleConnections()

	// The expired session is gone for the client too, and its place free.
	hdr := h.auth()
	hdr["Mcp-Session-Id"] = firstID.Load().(string)
	if code, _, body, err := h.send("POST", hdr, strings.NewReader(`{"jsonrpc":"2.0","id":2,"method":"ping"}`)); err != nil || code != http.StatusNotFound {
		t.Errorf("request on an expired session: %d %q %v, want 404", code, body, err)
	}
	h.end(t, h.initialize(t))
	h.client.CloseIdleConnections()

	const slack = 64 << 20
	figure(t, 9, "abandoned sessions ×%d in %v: %d created, %d refused (503), peak %d live (cap %d), all expired %v after the start (idle %v); RSS %d MiB → peak %d MiB → %d MiB after (bound %d MiB)",
		n, burst.Round(time.Millisecond), created.Load(), refused.Load(), peakLive.Load(), maxSessions,
		drained.Round(time.Millisecond), idle, base.RSS>>20, peakRSS.Load()>>20, st.RSS>>20, (base.RSS+slack)>>20)
	if peakLive.Load() > int64(maxSessions) {
		t.Errorf("%d sessions lived at once, over --http-max-sessions %d", peakLive.Load(), maxSessions)
	}
	if created.Load() < int64(maxSessions) {
		t.Errorf("only %d sessions created, want at least the cap %d", created.Load(), maxSessions)
	}
	if st.RSS > base.RSS+slack && !raceBuild {
		t.Errorf("RSS %d MiB after the sessions expired, over the bound of the baseline %d MiB + %d MiB", st.RSS>>20, base.RSS>>20, slack>>20)
	}
	h.CheckBaseline(base)
}

// (c) Connections that send headers and a few body bytes, then nothing:
// the daemon holds at most --http-max-conns of them (the rest wait in the
// kernel's backlog), its fds stay under the cap plus a margin, and the
// unix socket answers all along.
func row09SlowBodies(t *testing.T) {
	n, maxConns := count(300, 5000), count(64, 256)
	h := startHTTP(t, "--http-max-conns", fmt.Sprint(maxConns))
	base := h.baseline(t)

	conns := make([]net.Conn, n)
	var failed atomic.Int64
	var dials sync.WaitGroup
	req := fmt.Sprintf("POST /mcp HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: %d\r\n\r\n{\"jsonrpc\"",
		h.addr, h.token, len(row09Init))
	sem := make(chan struct{}, 64)
	for i := range n {
		sem <- struct{}{}
		dials.Go(func() {
			defer func() { <-sem }()
			c, err := net.DialTimeout("tcp", h.addr, 5*time.Second)
			if err != nil { // the kernel's backlog is full (only at the full count)
				failed.Add(1)
				return
			}
			if _, err := io.WriteString(c, req); err != nil {
				c.Close()
				failed.Add(1)
				return
			}
			conns[i] = c
		})
	}
	dials.Wait()
	defer func() {
		for _, c := range conns {
			if c != nil {
				c.Close()
			}
		}
	}()
	held := h.waitStats(t, "the connection cap to fill", func(st proto.Stats) bool { return st.HTTPConns == maxConns })

	var slowest time.Duration
	for range 20 {
		t0 := time.Now()
		if _, err := h.Call(proto.Request{Cmd: proto.CmdVersion}); err != nil {
			t.Fatalf("version over the socket while HTTP is saturated: %v", err)
		}
		slowest = max(slowest, time.Since(t0))
	}
	st := h.Stats()
	margin := 32
	figure(t, 9, "slow bodies ×%d (%d not queued by the kernel): daemon holds %d connections (cap %d), %d fds (baseline %d, bound %d), socket version slowest of 20 %v",
		n, failed.Load(), held.HTTPConns, maxConns, st.FDs, base.FDs, base.FDs+maxConns+margin, slowest.Round(time.Microsecond))
	if slowest > time.Second {
		t.Errorf("the unix socket took %v to answer version while HTTP was saturated", slowest)
	}
	if st.FDs > base.FDs+maxConns+margin {
		t.Errorf("%d fds open with HTTP saturated, over the baseline %d + cap %d + %d", st.FDs, base.FDs, maxConns, margin)
	}
	if st.HTTPConns > maxConns {
		t.Errorf("%d HTTP connections open, over --http-max-conns %d", st.HTTPConns, maxConns)
	}

	// Once the slow clients go, HTTP serves again.
	for i, c := range conns {
		if c != nil {
			c.Close()
			conns[i] = nil
		}
	}
	hivetest.Eventually(t, 30*time.Second, "HTTP to serve again after the slow clients left", func() error {
		code, hdr, _, err := h.send("POST", h.auth(), strings.NewReader(row09Init))
		if err != nil || code != http.StatusOK {
			return fmt.Errorf("%d %v", code, err)
		}
		h.end(t, hdr.Get("Mcp-Session-Id"))
		return nil
	})
	h.client.CloseIdleConnections()
	h.CheckBaseline(base)
}

// (d) A body over 4 MiB gets 413, whether its Content-Length says so or
// it arrives chunked, and the daemon serves on.
func row09Oversized(t *testing.T) {
	h := startHTTP(t)
	base := h.baseline(t)
	const limit = 4 << 20

	// Content-Length over the limit: refused before any body byte is read.
	c, err := net.Dial("tcp", h.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	t0 := time.Now()
	fmt.Fprintf(c, "POST /mcp HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: %d\r\n\r\n",
		h.addr, h.token, limit+1)
	c.SetReadDeadline(time.Now().Add(20 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("Content-Length %d: no answer: %v", limit+1, err)
	}
	resp.Body.Close()
	byLength := time.Since(t0)
	c.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("Content-Length %d: %d, want 413", limit+1, resp.StatusCode)
	}

	// Chunked (no length): refused once the limit is passed.
	big := io.MultiReader(strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":"`), strings.NewReader(strings.Repeat("x", limit)))
	code, _, body, err := h.send("POST", h.auth(), big)
	if err != nil || code != http.StatusRequestEntityTooLarge {
		t.Errorf("chunked body over %d bytes: %d %q %v, want 413", limit, code, body, err)
	}

	// The daemon serves on.
	h.end(t, h.initialize(t))
	figure(t, 9, "oversized bodies: Content-Length 4 MiB+1 → %d in %v (body never sent), chunked 4 MiB+ → %d; then initialize → 200",
		resp.StatusCode, byLength.Round(time.Microsecond), code)
	h.client.CloseIdleConnections()
	h.CheckBaseline(base)
}
