package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// startHTTPDaemon starts `hive daemon --http ADDR` and waits until it answers.
func startHTTPDaemon(t *testing.T, state, addr string, extra ...string) {
	t.Helper()
	startDaemon(t, state, append([]string{"--http", addr}, extra...)...)
	deadline := time.Now().Add(10 * time.Second)
	for {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("http endpoint did not come up")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

const initBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`

func post(t *testing.T, url string, hdr map[string]string) int {
	t.Helper()
	req, _ := http.NewRequest("POST", url, strings.NewReader(initBody))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range hdr {
		if k == "Host" {
			req.Host = v
		} else {
			req.Header.Set(k, v)
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func TestHTTPTransport(t *testing.T) {
	state := stateDir(t)
	addr := freePort(t)
	startHTTPDaemon(t, state, addr)
	url := "http://" + addr + "/mcp"
	c := mcp.NewClient(&mcp.Implementation{Name: "http-e2e", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "run", Arguments: map[string]any{"cmd": "echo over-http"}})
	if err != nil || res.IsError {
		t.Fatalf("run over http: %v %+v", err, res)
	}
	if sc := res.StructuredContent.(map[string]any); sc["stdout_tail"] != "over-http\n" {
		t.Errorf("structured %v", sc)
	}
	tests := []struct {
		name string
		hdr  map[string]string
		want int
	}{
		{"loopback origin", map[string]string{"Origin": "http://localhost:3000"}, http.StatusOK},
		{"foreign origin", map[string]string{"Origin": "http://evil.example"}, http.StatusForbidden},
		{"rebinding host", map[string]string{"Host": "evil.example:80"}, http.StatusForbidden},
	}
	for _, tt := range tests {
		if got := post(t, url, tt.hdr); got != tt.want {
			t.Errorf("%s: status %d, want %d", tt.name, got, tt.want)
		}
	}
}

func TestHTTPBearerToken(t *testing.T) {
	state := stateDir(t)
	addr := freePort(t)
	tok := filepath.Join(t.TempDir(), "token")
	os.WriteFile(tok, []byte("s3cret\n"), 0o600)
	startHTTPDaemon(t, state, addr, "--http-token-file", tok)
	url := "http://" + addr + "/mcp"
	if got := post(t, url, nil); got != http.StatusUnauthorized {
		t.Errorf("no token: %d", got)
	}
	if got := post(t, url, map[string]string{"Authorization": "Bearer wrong"}); got != http.StatusUnauthorized {
		t.Errorf("wrong token: %d", got)
	}
	if got := post(t, url, map[string]string{"Authorization": "Bearer s3cret"}); got != http.StatusOK {
		t.Errorf("right token: %d", got)
	}
}

func TestHTTPRefusesNonLoopbackWithoutToken(t *testing.T) {
	state := stateDir(t)
	out, err := hive(t, state, "daemon", "--http", fmt.Sprintf("0.0.0.0:%d", 0))
	if err == nil || !strings.Contains(out, "loopback") {
		t.Errorf("non-loopback without token: %v %q", err, out)
	}
}
