package daemon

import (
	"crypto/subtle"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hivetools/hive/internal/tools"
)

// maxHTTPBody bounds an MCP request body.
const maxHTTPBody = 4 << 20

// listenHTTP serves streamable HTTP MCP at /mcp. The address must be
// loopback unless a bearer token file is given. Host and Origin headers
// must name a loopback host (DNS rebinding).
func (d *daemon) listenHTTP(addr, tokenFile string) (*http.Server, net.Listener, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, nil, fmt.Errorf("--http %q: want HOST:PORT: %v", addr, err)
	}
	if !isLoopbackHost(host) && tokenFile == "" {
		return nil, nil, fmt.Errorf("--http %q: must be a loopback address (127.0.0.1, [::1], localhost) unless --http-token-file is set", addr)
	}
	var token string
	if tokenFile != "" {
		b, err := os.ReadFile(tokenFile)
		if err != nil {
			return nil, nil, fmt.Errorf("--http-token-file: %w", err)
		}
		token = strings.TrimSpace(string(b))
		if token == "" {
			return nil, nil, fmt.Errorf("--http-token-file %q: file is empty", tokenFile)
		}
	}
	cwd, _ := os.Getwd()
	var mu sync.Mutex
	servers := map[string]*mcp.Server{} // by group list; shared by the sessions that ask for it
	getServer := func(r *http.Request) *mcp.Server {
		groups, err := tools.ParseGroups(strings.Split(r.URL.Query().Get("groups"), ","))
		if err != nil {
			return nil
		}
		key := strings.Join(groups, ",")
		mu.Lock()
		defer mu.Unlock()
		if s, ok := servers[key]; ok {
			return s
		}
		s, stop, err := tools.NewServer(d.deps, &tools.Session{Cwd: cwd, ID: "http-" + key}, groups)
		if err != nil {
			return nil
		}
		d.addCloser(stop)
		servers[key] = s
		return s
	}
	h := mcp.NewStreamableHTTPHandler(getServer, &mcp.StreamableHTTPOptions{
		Logger:              d.log,
		MaxRequestBodyBytes: maxHTTPBody,
	})
	mux := http.NewServeMux()
	mux.Handle("/mcp", guard(h, token))
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, nil, fmt.Errorf("--http %q: %w", addr, err)
	}
	return &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}, ln, nil
}

func isLoopbackHost(h string) bool {
	h = strings.TrimSuffix(strings.TrimPrefix(h, "["), "]")
	if strings.EqualFold(h, "localhost") {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// guard checks Host, Origin and the bearer token, and bounds the body.
func guard(next http.Handler, token string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host := r.Host
		if h, _, err := net.SplitHostPort(host); err == nil {
			host = h
		}
		if token == "" && !isLoopbackHost(host) {
			http.Error(w, "Host header must name a loopback host", http.StatusForbidden)
			return
		}
		if o := r.Header.Get("Origin"); o != "" {
			u, err := url.Parse(o)
			if err != nil || !isLoopbackHost(u.Hostname()) {
				http.Error(w, "Origin not allowed", http.StatusForbidden)
				return
			}
		}
		if token != "" {
			got := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
			if subtle.ConstantTimeCompare([]byte(got), []byte(token)) != 1 {
				w.Header().Set("WWW-Authenticate", "Bearer")
				http.Error(w, "missing or wrong bearer token", http.StatusUnauthorized)
				return
			}
		}
		r.Body = http.MaxBytesReader(w, r.Body, maxHTTPBody)
		next.ServeHTTP(w, r)
	})
}
