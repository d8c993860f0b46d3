// Package httpfront is hive's HTTP front end: streamable HTTP MCP at
// /mcp and the dashboard at / and /api/ (internal/dashboard), behind one
// guard: the Host and Origin checks against DNS rebinding, the bearer
// token (rotated by rewriting its file), bounded request bodies, read and
// write deadlines, and caps on connections and MCP sessions. The tools
// it serves and the dashboard run on a *service.Service.
package httpfront

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hivetools/hive/internal/dashboard"
	"github.com/hivetools/hive/internal/paths"
	"github.com/hivetools/hive/internal/service"
	"github.com/hivetools/hive/internal/tools"
)

// maxHTTPBody bounds an MCP request body.
const maxHTTPBody = 4 << 20

// Defaults of the front end (the Options zero values).
const (
	DefaultMaxConns     = 256
	DefaultMaxSessions  = 512
	DefaultSessionIdle  = 30 * time.Minute
	DefaultReadTimeout  = 30 * time.Second
	DefaultWriteTimeout = 30 * time.Second
)

const (
	httpReadHeaderTimeout = 10 * time.Second
	httpIdleTimeout       = 120 * time.Second // a keep-alive connection between requests
	httpMaxHeaderBytes    = 64 << 10
)

// Options configures Listen. The errors name the daemon's flags the
// fields come from.
type Options struct {
	// Addr is HOST:PORT to listen on (--http). It must be loopback unless
	// TokenFile is set.
	Addr string
	// TokenFile holds the bearer token (--http-token-file). If empty, the
	// token is Layout's generated <state>/http-token (unless NoAuth).
	TokenFile string
	// NoAuth serves without a token (--http-no-auth); only with a
	// loopback Addr, and not with TokenFile.
	NoAuth bool
	// Bounds (zero: the Default* values; negative is an error):
	// connections and live MCP sessions at once, how long an idle session
	// lives, how long a request body may take to arrive, and how long one
	// write to a client may take.
	MaxConns     int
	MaxSessions  int
	SessionIdle  time.Duration
	ReadTimeout  time.Duration
	WriteTimeout time.Duration
	// TakeoverLife is how long a dashboard's PTY take-over lasts (see
	// dashboard.Options). If zero, dashboard.DefaultTakeoverLife.
	TakeoverLife time.Duration
	// Layout is the state dir: the generated token file and the
	// dashboard's logouts live in it.
	Layout paths.Layout
	// Service is what the MCP tools and the dashboard run on. Required.
	Service *service.Service
	// Started is when the daemon started (GET /api/state's uptime). If
	// zero, when Listen was called.
	Started time.Time
	// AddCloser is given the stop of each MCP server the front end makes
	// (one per group list, answer form and directory asked for), for the
	// daemon to run at its shutdown, before its engines stop (a server
	// made after that is stopped at once). Required.
	AddCloser func(func())
	// Logger: if nil, logs are discarded.
	Logger *slog.Logger
}

// Front is the streamable HTTP front end: MCP at /mcp behind a guard
// that checks Host, Origin and the bearer token, reads the body under a
// deadline, and caps connections and sessions; the dashboard at / and
// /api/. Make it with Listen, serve with Serve, stop with Shutdown; its
// other methods are safe for concurrent use.
type Front struct {
	log       *slog.Logger
	svc       *service.Service
	addCloser func(func())
	started   time.Time
	srv       *http.Server
	ln        *limitListener
	mcp       http.Handler
	sessions  *sessionTable
	dash      *dashboard.Dashboard // the page at / and /api/

	addr     string     // the address it listens on
	loopback bool       // it listens on loopback: Host must name a loopback host
	token    *tokenFile // nil: no authentication (--http-no-auth)
	cwd      string     // where HTTP sessions' commands run

	readTimeout, writeTimeout time.Duration

	// peerLogged is when a connection of another user was last refused
	// and logged (unix nanoseconds).
	peerLogged atomic.Int64

	mu      sync.Mutex
	servers map[string]*mcp.Server // by group list; shared by the sessions that ask for it
}

type serverKey struct{}

// Listen checks the options, sets up the bearer token (generating
// <state>/http-token when no file is given) and listens. The address must
// be loopback unless a token file is given; NoAuth is for loopback only.
func Listen(o Options) (*Front, error) {
	addr := o.Addr
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("--http %q: want HOST:PORT: %v", addr, err)
	}
	loopback := isLoopbackHost(host)
	switch {
	case o.NoAuth && o.TokenFile != "":
		return nil, errors.New("--http-no-auth and --http-token-file: give one or the other")
	case o.NoAuth && !loopback:
		return nil, fmt.Errorf("--http-no-auth: allowed only with a loopback --http address (127.0.0.1, [::1], localhost), not %q", addr)
	case !loopback && o.TokenFile == "":
		return nil, fmt.Errorf("--http %q: must be a loopback address (127.0.0.1, [::1], localhost) unless --http-token-file is set", addr)
	}
	for _, v := range []struct {
		flag string
		n    int64
	}{
		{"--http-max-conns", int64(o.MaxConns)}, {"--http-max-sessions", int64(o.MaxSessions)},
		{"--http-session-idle", int64(o.SessionIdle)}, {"--http-read-timeout", int64(o.ReadTimeout)},
		{"--http-write-timeout", int64(o.WriteTimeout)},
	} {
		if v.n < 0 {
			return nil, fmt.Errorf("%s: must not be negative (0: the default)", v.flag)
		}
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	f := &Front{
		log: log, svc: o.Service, addCloser: o.AddCloser, started: o.Started, loopback: loopback,
		readTimeout: orDefault(o.ReadTimeout, DefaultReadTimeout), writeTimeout: orDefault(o.WriteTimeout, DefaultWriteTimeout),
		sessions: &sessionTable{log: log, max: orDefault(o.MaxSessions, DefaultMaxSessions)},
		servers:  map[string]*mcp.Server{},
	}
	if f.started.IsZero() {
		f.started = time.Now()
	}
	f.cwd, _ = os.Getwd()
	if !o.NoAuth {
		if f.token, err = httpToken(o, log); err != nil {
			return nil, err
		}
	}
	f.mcp = mcp.NewStreamableHTTPHandler(func(r *http.Request) *mcp.Server {
		s, _ := r.Context().Value(serverKey{}).(*mcp.Server)
		return s
	}, &mcp.StreamableHTTPOptions{
		Logger:              log,
		MaxRequestBodyBytes: maxHTTPBody,
		SessionTimeout:      orDefault(o.SessionIdle, DefaultSessionIdle),
		// With an event store every SSE event has an id a client resumes
		// from (GET with Last-Event-ID after a dropped stream), and a POST
		// stream opens with the priming event of protocol 2025-11-25 (an
		// id, empty data), which channelWriter gives a retry: field. The
		// store keeps a session's events until it closes, 10 MiB at most
		// for all sessions (the oldest go first).
		EventStore: mcp.NewMemoryEventStore(nil),
	})
	mux := http.NewServeMux()
	mux.Handle("/mcp", f)
	mux.Handle("/", f.dashboard(o))
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--http %q: %w", addr, err)
	}
	f.addr = ln.Addr().String()
	// The address bound is what counts: "localhost" resolves through the
	// hosts file, which may not say 127.0.0.1.
	if a, ok := ln.Addr().(*net.TCPAddr); ok && !a.IP.IsLoopback() && (o.NoAuth || o.TokenFile == "") {
		ln.Close()
		what := "--http " + addr
		if o.NoAuth {
			what = "--http-no-auth"
		}
		return nil, fmt.Errorf("%s: %q was bound to %s, not a loopback address: give an explicit 127.0.0.1 or [::1]", what, addr, a.IP)
	}
	f.ln = newLimitListener(ln, orDefault(o.MaxConns, DefaultMaxConns))
	f.ln.admit = f.loopbackPeerAllowed
	f.srv = &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: httpReadHeaderTimeout,
		IdleTimeout:       httpIdleTimeout,
		MaxHeaderBytes:    httpMaxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	if f.token == nil {
		log.Warn("http without authentication (--http-no-auth): every local process can run commands through it", "http", f.addr)
	}
	return f, nil
}

// httpToken sets up the bearer token: the --http-token-file, else
// <state>/http-token, generated on first use. It logs which file holds it.
func httpToken(o Options, log *slog.Logger) (*tokenFile, error) {
	if p := o.TokenFile; p != "" {
		abs, err := filepath.Abs(p)
		if err != nil {
			return nil, fmt.Errorf("--http-token-file %q: %w", p, err)
		}
		t := &tokenFile{path: abs, name: "--http-token-file", log: log}
		if err := t.load(); err != nil {
			return nil, err
		}
		log.Info("http bearer token required", "token_file", abs)
		return t, nil
	}
	p := o.Layout.HTTPToken()
	created, err := generateToken(p)
	if err != nil {
		return nil, err
	}
	t := &tokenFile{path: p, name: "generated http token file", noFollow: true, log: log,
		fix: "; remove the file and hive generates a new token"}
	if err := t.load(); err != nil {
		return nil, err
	}
	log.Info("http bearer token required", "token_file", p, "generated", created)
	return t, nil
}

func orDefault[T int | time.Duration](v, def T) T {
	if v == 0 {
		return def
	}
	return v
}

// Serve serves until Shutdown, and returns nil then.
func (f *Front) Serve() error {
	if err := f.srv.Serve(f.ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// Shutdown refuses new sessions, closes the open ones, then stops the
// server: handlers get 2 s to end before their connections are cut. It
// returns once the goroutines the front end started have ended.
func (f *Front) Shutdown() {
	f.mu.Lock()
	var servers []*mcp.Server
	for _, s := range f.servers {
		servers = append(servers, s)
	}
	f.mu.Unlock()
	f.sessions.close(servers)
	f.dash.Close() // its event streams end now
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if f.srv.Shutdown(ctx) != nil {
		f.srv.Close() // streams still open: cut them
	}
}

// Addr is the address the front end listens on.
func (f *Front) Addr() string { return f.addr }

// Auth is "token" or "none" (NoAuth).
func (f *Front) Auth() string {
	if f.token == nil {
		return "none"
	}
	return "token"
}

// TokenPath is the token file ("" without authentication).
func (f *Front) TokenPath() string {
	if f.token == nil {
		return ""
	}
	return f.token.path
}

// Conns is the number of HTTP connections open.
func (f *Front) Conns() int { return f.ln.open() }

// Sessions is the number of live MCP sessions (and of initializes under
// way).
func (f *Front) Sessions() int { return f.sessions.count() }

// maxHTTPServers bounds the MCP servers the HTTP front end makes: one
// per group list, answer form and working directory asked for
// (?groups=, ?answers=, ?cwd=).
const maxHTTPServers = 64

// errTooManyServers is answered 503 past maxHTTPServers.
var errTooManyServers = fmt.Errorf("too many distinct ?groups=, ?answers= and ?cwd= combinations (at most %d per daemon)", maxHTTPServers)

// server is the MCP server of a group list, answer form and working
// directory ("": the daemon's), made on first use.
func (f *Front) server(groups []string, answers, cwd string) (*mcp.Server, error) {
	if cwd == "" {
		cwd = f.cwd
	}
	key := strings.Join(groups, ",") + ";" + answers + "\x00" + cwd
	f.mu.Lock()
	defer f.mu.Unlock()
	if s, ok := f.servers[key]; ok {
		return s, nil
	}
	if len(f.servers) >= maxHTTPServers {
		return nil, errTooManyServers
	}
	s, stop, err := tools.NewServer(f.svc, &tools.Session{Cwd: cwd, ID: "http", Answers: answers}, groups)
	if err != nil {
		return nil, err
	}
	f.addCloser(stop)
	f.servers[key] = s
	return s, nil
}

func isLoopbackHost(h string) bool {
	h = strings.TrimSuffix(strings.TrimPrefix(h, "["), "]")
	if strings.EqualFold(h, "localhost") {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// ServeHTTP is the guard in front of the SDK's handler. In order: Host
// (loopback when listening on loopback) and Origin (loopback) against DNS
// rebinding → 403; the bearer token → 401 (500 while the token file is
// unusable); ?groups= or ?answers= → 400; the body, read whole within the read timeout
// → 408, at most maxHTTPBody → 413; a new session past the cap → 503.
// Every write to the client then has its own write deadline.
func (f *Front) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rc := http.NewResponseController(w)
	rc.SetWriteDeadline(time.Now().Add(f.writeTimeout)) // for the error answers below
	// Until the body is read, the request has the read timeout: a request
	// refused below would otherwise leave net/http draining a body that
	// never comes, without a deadline, holding a connection for good. A
	// refused request also closes its connection, so nothing is drained.
	rc.SetReadDeadline(time.Now().Add(f.readTimeout))
	if !f.admit(w, r) {
		return
	}
	var groups []string
	if q := r.URL.Query().Get("groups"); q != "" {
		groups = strings.Split(q, ",")
	}
	groups, err := tools.ParseGroups(groups)
	if err != nil {
		refuse(w, "?"+err.Error(), http.StatusBadRequest)
		return
	}
	answers, err := tools.ParseAnswers(r.URL.Query().Get("answers"))
	if err != nil {
		refuse(w, "?"+err.Error(), http.StatusBadRequest)
		return
	}
	newSession := r.Method == http.MethodPost && r.Header.Get("Mcp-Session-Id") == ""
	var cwd string
	if newSession { // a session's directory is set when it starts
		if cwd, err = sessionCwd(r); err != nil {
			refuse(w, err.Error(), http.StatusBadRequest)
			return
		}
	}
	body, ok := f.readBody(w, r, rc)
	if !ok {
		return
	}
	if newSession && !initializes(body) {
		// The MCP spec's streamable HTTP: a server of sessions answers a
		// request without one, other than initialize, 400 (the SDK
		// would answer it in a session of its own that no one can use).
		refuse(w, "a request other than initialize needs the Mcp-Session-Id header of a session (initialize starts one)", http.StatusBadRequest)
		return
	}
	srv, err := f.server(groups, answers, cwd)
	if errors.Is(err, errTooManyServers) {
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	if newSession {
		if err := f.sessions.reserve(); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		defer func() { f.sessions.adopt(srv, w.Header().Get("Mcp-Session-Id"), groups) }()
	}
	r = r.WithContext(context.WithValue(r.Context(), serverKey{}, srv))
	f.mcp.ServeHTTP(channelWriter{newHTTPDeadlineWriter(w, f.writeTimeout)}, r)
	rc.SetWriteDeadline(time.Now().Add(f.writeTimeout)) // for what net/http writes after the handler
}

// CwdHeader sets an HTTP session's working directory, like ?cwd=.
const CwdHeader = "Hive-Cwd"

// sessionCwd is the working directory a new HTTP session asks for with
// ?cwd= or the Hive-Cwd header ("" for the daemon's): an absolute path of
// an existing directory.
func sessionCwd(r *http.Request) (string, error) {
	q, h := r.URL.Query().Get("cwd"), r.Header.Get(CwdHeader)
	switch {
	case q != "" && h != "" && q != h:
		return "", fmt.Errorf("?cwd=%q and %s: %q: give one, or the same directory", q, CwdHeader, h)
	case q == "":
		q = h
	}
	if q == "" {
		return "", nil
	}
	if strings.IndexByte(q, 0) >= 0 {
		return "", fmt.Errorf("?cwd=%q: must not contain a NUL byte", q)
	}
	if !filepath.IsAbs(q) {
		return "", fmt.Errorf("?cwd=%q: must be an absolute path", q)
	}
	fi, err := os.Stat(q)
	if err != nil {
		return "", fmt.Errorf("?cwd=%q: must be an existing directory: %v", q, err)
	}
	if !fi.IsDir() {
		return "", fmt.Errorf("?cwd=%q: must be a directory, not a file", q)
	}
	return filepath.Clean(q), nil
}

// refuse answers an error and closes the connection: nothing of a refused
// request's body is drained.
func refuse(w http.ResponseWriter, msg string, code int) {
	w.Header().Set("Connection", "close")
	http.Error(w, msg, code)
}

// admit checks what every request must pass, and answers it if it fails:
// Host (loopback when listening on loopback) and Origin (loopback)
// against DNS rebinding → 403; the bearer token → 401 (500 while the
// token file is unusable).
func (f *Front) admit(w http.ResponseWriter, r *http.Request) bool {
	if !f.admitHost(w, r) {
		return false
	}
	if f.token != nil {
		sum, err := f.token.current()
		if err != nil {
			refuse(w, "the daemon's bearer token file is unusable (see the daemon log); every request is refused", http.StatusInternalServerError)
			return false
		}
		if !authorized(r.Header.Values("Authorization"), sum) {
			w.Header().Set("WWW-Authenticate", "Bearer")
			refuse(w, "missing or wrong bearer token (want the header Authorization: Bearer TOKEN)", http.StatusUnauthorized)
			return false
		}
	}
	return true
}

// admitHost checks Host (loopback when listening on loopback) and Origin
// (loopback, or off loopback also the request's own http(s)://Host)
// against DNS rebinding, and answers 403 if they fail.
func (f *Front) admitHost(w http.ResponseWriter, r *http.Request) bool {
	host := r.Host
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	if f.loopback && !isLoopbackHost(host) {
		refuse(w, "Host header must name a loopback host", http.StatusForbidden)
		return false
	}
	if o := r.Header.Get("Origin"); o != "" {
		// Off loopback, the page's own origin (the Host it was asked for)
		// is allowed too: the dashboard served on a LAN address.
		if !f.loopback && (o == "http://"+r.Host || o == "https://"+r.Host) {
			return true
		}
		u, err := url.Parse(o)
		if err != nil || !isLoopbackHost(u.Hostname()) {
			refuse(w, "Origin not allowed", http.StatusForbidden)
			return false
		}
	}
	return true
}

// readBody reads the whole request body within the read timeout and puts
// it back as an in-memory body, so a slow client holds no handler past
// the timeout while long-lived responses (SSE streams) have no read
// deadline. It answers the errors itself and reports whether to go on.
func (f *Front) readBody(w http.ResponseWriter, r *http.Request, rc *http.ResponseController) ([]byte, bool) {
	tooLarge := func() ([]byte, bool) {
		w.Header().Set("Connection", "close")
		http.Error(w, fmt.Sprintf("request body larger than %d bytes", maxHTTPBody), http.StatusRequestEntityTooLarge)
		return nil, false
	}
	if r.ContentLength > maxHTTPBody {
		return tooLarge()
	}
	if r.Body == nil || r.Body == http.NoBody {
		rc.SetReadDeadline(time.Time{}) // a GET's stream lives on
		return nil, true
	}
	b, err := io.ReadAll(io.LimitReader(r.Body, maxHTTPBody+1))
	if err != nil {
		w.Header().Set("Connection", "close")
		var ne net.Error
		if errors.Is(err, os.ErrDeadlineExceeded) || errors.As(err, &ne) && ne.Timeout() {
			http.Error(w, fmt.Sprintf("request body not received within %v (--http-read-timeout)", f.readTimeout), http.StatusRequestTimeout)
		} else {
			http.Error(w, fmt.Sprintf("read request body: %v", err), http.StatusBadRequest)
		}
		return nil, false
	}
	if len(b) > maxHTTPBody {
		return tooLarge()
	}
	rc.SetReadDeadline(time.Time{})
	r.Body = io.NopCloser(bytes.NewReader(b))
	r.ContentLength = int64(len(b))
	return b, true
}

// initializes reports whether body, a POST's, holds an initialize
// request (alone, or in a batch): the one request that may come without
// a session. What is not JSON counts as one: the SDK answers it with
// the error it deserves.
func initializes(body []byte) bool {
	var one struct {
		Method string `json:"method"`
	}
	if err := json.Unmarshal(body, &one); err == nil {
		return one.Method == "initialize"
	}
	var batch []struct {
		Method string `json:"method"`
	}
	if err := json.Unmarshal(body, &batch); err == nil {
		for _, m := range batch {
			if m.Method == "initialize" {
				return true
			}
		}
		return false
	}
	return true
}

// errSessionsStopping refuses a session while the daemon stops.
var errSessionsStopping = errors.New("the daemon is stopping: no new MCP sessions")

// sessionTable counts the live HTTP MCP sessions against a cap and logs
// each one's open and close. A new session first reserves a place
// (reserve); once the SDK has answered its initialize, adopt either
// takes the place over for the session's life or gives it back. Safe
// for concurrent use.
type sessionTable struct {
	log *slog.Logger
	max int

	mu     sync.Mutex
	live   int  // open sessions plus reservations of initializes under way
	closed bool // close was called: no new sessions
	wg     sync.WaitGroup
}

// reserve takes a place for a new session, or says why there is none.
func (t *sessionTable) reserve() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return errSessionsStopping
	}
	if t.live >= t.max {
		return fmt.Errorf("too many live MCP sessions: %d, the --http-max-sessions limit; end idle sessions (DELETE /mcp) or raise the limit", t.max)
	}
	t.live++
	return nil
}

func (t *sessionTable) release() {
	t.mu.Lock()
	t.live--
	t.mu.Unlock()
}

// count is the number of live sessions (and reservations).
func (t *sessionTable) count() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.live
}

// adopt follows the session srv opened with transport id id (from the
// answer's Mcp-Session-Id) until it closes, holding its reserved place
// meanwhile. Without a session that was initialized (the SDK closed it,
// or none was made) the place is given back now.
func (t *sessionTable) adopt(srv *mcp.Server, id string, groups []string) {
	var ss *mcp.ServerSession
	if id != "" {
		for s := range srv.Sessions() {
			if s.ID() == id {
				ss = s
				break
			}
		}
	}
	if ss == nil || ss.InitializeParams() == nil {
		t.release()
		return
	}
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		ss.Close()
		t.release()
		return
	}
	t.wg.Add(1)
	t.mu.Unlock()
	name := tools.LogID("http", id)
	t.log.Info("mcp session open", "session", name, "transport", "http", "groups", groups)
	t0 := time.Now()
	go func() {
		defer t.wg.Done()
		ss.Wait()
		t.release()
		t.log.Info("mcp session closed", "session", name, "lived", time.Since(t0).Round(time.Millisecond))
	}()
}

// close refuses new sessions, closes the open sessions of servers and
// waits until each has ended.
func (t *sessionTable) close(servers []*mcp.Server) {
	t.mu.Lock()
	t.closed = true
	t.mu.Unlock()
	// Close waits for the session's calls under way: close them all at
	// once, so one slow call does not hold up the others.
	var wg sync.WaitGroup
	for _, s := range servers {
		for ss := range s.Sessions() {
			wg.Go(func() { ss.Close() })
		}
	}
	wg.Wait()
	t.wg.Wait()
}
