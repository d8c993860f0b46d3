package httpfront

import (
	"bytes"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/hivetools/hive/internal/paths"
)

// Options that would serve without the guard they need are refused, the
// error naming the flag and the rule.
func TestListenRefuses(t *testing.T) {
	for _, tt := range []struct {
		o    Options
		want string
	}{
		{Options{Addr: "127.0.0.1"}, `--http "127.0.0.1": want HOST:PORT`},
		{Options{Addr: "127.0.0.1:0", NoAuth: true, TokenFile: "/tmp/tok"}, "--http-no-auth and --http-token-file: give one or the other"},
		{Options{Addr: "0.0.0.0:0", NoAuth: true}, "--http-no-auth: allowed only with a loopback --http address"},
		{Options{Addr: "0.0.0.0:0"}, `--http "0.0.0.0:0": must be a loopback address`},
		{Options{Addr: "127.0.0.1:0", NoAuth: true, MaxSessions: -1}, "--http-max-sessions: must not be negative"},
		{Options{Addr: "127.0.0.1:0", NoAuth: true, WriteTimeout: -1}, "--http-write-timeout: must not be negative"},
	} {
		t.Run(tt.want, func(t *testing.T) {
			f, err := Listen(tt.o)
			if err == nil {
				f.Shutdown()
				t.Fatalf("Listen(%+v) succeeded", tt.o)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q, want %q", err, tt.want)
			}
		})
	}
}

// Every request passes the guard first: Host and Origin (DNS rebinding),
// the bearer token of the generated file, the query, the body's size.
func TestGuard(t *testing.T) {
	l := paths.Layout{Dir: t.TempDir()}
	f, err := Listen(Options{Addr: "127.0.0.1:0", Layout: l, AddCloser: func(func()) {}})
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- f.Serve() }()
	defer func() {
		f.Shutdown()
		if err := <-served; err != nil {
			t.Errorf("Serve: %v", err)
		}
	}()
	if f.Auth() != "token" || f.TokenPath() != l.HTTPToken() {
		t.Errorf("auth %q, token file %q; want token, %q", f.Auth(), f.TokenPath(), l.HTTPToken())
	}
	tok, err := os.ReadFile(l.HTTPToken())
	if err != nil {
		t.Fatal(err)
	}
	bearer := "Bearer " + strings.TrimSpace(string(tok))
	for _, tt := range []struct {
		name   string
		header map[string]string
		host   string
		query  string
		body   []byte
		code   int
	}{
		{"foreign Host", map[string]string{"Authorization": bearer}, "evil.example", "", nil, http.StatusForbidden},
		{"foreign Origin", map[string]string{"Authorization": bearer, "Origin": "http://evil.example"}, "", "", nil, http.StatusForbidden},
		{"no token", nil, "", "", nil, http.StatusUnauthorized},
		{"wrong token", map[string]string{"Authorization": "Bearer nope"}, "", "", nil, http.StatusUnauthorized},
		{"unknown group", map[string]string{"Authorization": bearer}, "", "?groups=nosuch", nil, http.StatusBadRequest},
		{"body too large", map[string]string{"Authorization": bearer}, "", "", bytes.Repeat([]byte("x"), maxHTTPBody+1), http.StatusRequestEntityTooLarge},
	} {
		t.Run(tt.name, func(t *testing.T) {
			req, err := http.NewRequest(http.MethodPost, "http://"+f.Addr()+"/mcp"+tt.query, bytes.NewReader(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			for k, v := range tt.header {
				req.Header.Set(k, v)
			}
			if tt.host != "" {
				req.Host = tt.host
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tt.code {
				t.Errorf("status %d (%s), want %d", resp.StatusCode, b, tt.code)
			}
		})
	}
	http.DefaultClient.CloseIdleConnections()
}
