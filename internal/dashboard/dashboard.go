// Package dashboard is the operator's dashboard: a page served at / by the
// daemon's HTTP front end (embedded, no build step), the JSON API under
// /api/ that the page and scripts use (docs/http-api.md), and the
// Server-Sent Events stream that keeps the page live.
//
// Authentication: a script sends the daemon's bearer token; a browser logs
// in once with a short-lived single-use code (hive dashboard prints the
// URL) and then holds an HttpOnly, SameSite=Strict session cookie. Every
// state-changing request with the cookie must be same-origin and carry
// the session's CSRF token.
package dashboard

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"html/template"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/hivetools/hive/internal/paths"
	"github.com/hivetools/hive/internal/service"
)

// Defaults of Options' zero values.
const (
	DefaultHeartbeat    = 15 * time.Second
	DefaultPoll         = 250 * time.Millisecond
	DefaultSessionLife  = 24 * time.Hour
	DefaultLoginCodeTTL = 2 * time.Minute
	defaultTimeout      = 30 * time.Second
)

// maxBody bounds a request body (a message is at most 1 MiB, JSON-escaped).
const maxBody = 8 << 20

// SessionCookie begins the session cookie's name, which ends with the
// port the daemon listens on (hive_session_8080): browsers do not keep
// cookies apart by port, so each daemon's dashboard has its own.
const SessionCookie = "hive_session"

// CookieName is the name of the session cookie of a dashboard served on
// port.
func CookieName(port string) string { return SessionCookie + "_" + port }

// cookieName is the session cookie's name for r: by the port of the
// connection's local address (the port the daemon listens on, whatever
// Host says).
func cookieName(r *http.Request) string {
	if a, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok {
		if _, port, err := net.SplitHostPort(a.String()); err == nil {
			return CookieName(port)
		}
	}
	return SessionCookie
}

// Options configures a Dashboard.
type Options struct {
	// Service is the engines it reads and acts on. Required.
	Service *service.Service
	// State answers GET /api/state. Required.
	State func(ctx context.Context) (any, error)
	// Bearer reports whether r carries the bearer token, and an error
	// while the token cannot be checked. If Bearer is nil, no
	// authentication is asked (--http-no-auth).
	Bearer func(r *http.Request) (bool, error)
	// Secret is the digest of the token in force; session cookies are
	// signed with a key derived from it, so rotating the token ends every
	// session. Required with Bearer.
	Secret func() ([sha256.Size]byte, error)
	// Logger, if nil, discards.
	Logger *slog.Logger
	// ReadTimeout and WriteTimeout bound a request's body and each write
	// of an answer (an event stream has one per write). If zero, 30 s.
	ReadTimeout, WriteTimeout time.Duration
	// Heartbeat is the time between an event stream's keep-alive
	// comments. If zero, DefaultHeartbeat.
	Heartbeat time.Duration
	// Poll is how often the watcher looks for changes. If zero, DefaultPoll.
	Poll time.Duration
	// SessionLife is how long a login lasts. If zero, DefaultSessionLife.
	SessionLife time.Duration
	// TakeoverLife is how long a PTY take-over lasts after the take-over
	// or its latest input. If zero, DefaultTakeoverLife.
	TakeoverLife time.Duration
	// LogoutsFile keeps the sessions logged out (revoked) until they
	// would have expired, so that a logout outlives a restart. If empty,
	// they are kept in memory only.
	LogoutsFile string
}

// Dashboard serves the page and its API. Safe for concurrent use.
type Dashboard struct {
	o     Options
	log   *slog.Logger
	mux   *http.ServeMux
	index *template.Template
	files fs.FS
	hub   *hub
	holds *holds // PTY take-overs
	usage sampler
	// anonKey signs the CSRF token when no authentication is asked.
	anonKey []byte

	ctx    context.Context // cancelled by Close: event streams end
	cancel context.CancelFunc
	wg     sync.WaitGroup // the watcher, the swarm's watches
	watch  sync.Once
	closed sync.Once
	swarmW swarmWatch

	mu      sync.Mutex
	codes   map[string]time.Time // login codes and their expiry
	revoked map[string]int64     // sessions logged out, and their expiry (Unix seconds)
}

//go:embed static
var static embed.FS

// New makes a Dashboard. It starts nothing: the watcher starts with the
// first event stream. Close stops it.
func New(o Options) *Dashboard {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.ReadTimeout <= 0 {
		o.ReadTimeout = defaultTimeout
	}
	if o.WriteTimeout <= 0 {
		o.WriteTimeout = defaultTimeout
	}
	if o.Heartbeat <= 0 {
		o.Heartbeat = DefaultHeartbeat
	}
	if o.Poll <= 0 {
		o.Poll = DefaultPoll
	}
	if o.SessionLife <= 0 {
		o.SessionLife = DefaultSessionLife
	}
	if o.TakeoverLife <= 0 {
		o.TakeoverLife = DefaultTakeoverLife
	}
	files, _ := fs.Sub(static, "static")
	d := &Dashboard{o: o, log: o.Logger, files: files, hub: newHub(), codes: map[string]time.Time{},
		anonKey: randomBytes(32), revoked: map[string]int64{}, holds: &holds{life: o.TakeoverLife, m: map[string]hold{}}}
	d.loadLogouts()
	d.index = template.Must(template.ParseFS(files, "index.html"))
	d.ctx, d.cancel = context.WithCancel(context.Background())
	d.routes()
	return d
}

// Close ends the event streams and stops the watcher; it returns once the
// watcher has ended. Later calls do nothing.
func (d *Dashboard) Close() {
	d.closed.Do(func() {
		d.cancel()
		d.watch.Do(func() {}) // no watcher starts after Close
		d.swarmW.mu.Lock()
		d.swarmW.closed = true // nor a swarm's watch
		d.swarmW.mu.Unlock()
	})
	d.wg.Wait()
}

func randomBytes(n int) []byte {
	b := make([]byte, n)
	rand.Read(b)
	return b
}

// LoginCode returns a new login code: it lets one browser log in (GET
// /login?code=CODE) within DefaultLoginCodeTTL, once.
func (d *Dashboard) LoginCode() string {
	code := hex.EncodeToString(randomBytes(16))
	now := time.Now()
	d.mu.Lock()
	defer d.mu.Unlock()
	for c, exp := range d.codes {
		if now.After(exp) {
			delete(d.codes, c)
		}
	}
	d.codes[code] = now.Add(DefaultLoginCodeTTL)
	return code
}

// takeCode consumes a login code; it reports whether it was good.
func (d *Dashboard) takeCode(code string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	exp, ok := d.codes[code]
	delete(d.codes, code)
	return ok && time.Now().Before(exp)
}

// who authenticated a request.
type who int

const (
	nobody who = iota
	byBearer
	byCookie
	anonymous // no authentication is asked
)

// key is the key that signs session cookies and CSRF tokens.
func (d *Dashboard) key() ([]byte, error) {
	if d.o.Bearer == nil {
		return d.anonKey, nil
	}
	sum, err := d.o.Secret()
	if err != nil {
		return nil, err
	}
	m := hmac.New(sha256.New, sum[:])
	m.Write([]byte("hive dashboard session v1"))
	return m.Sum(nil), nil
}

func sign(key []byte, parts ...[]byte) []byte {
	m := hmac.New(sha256.New, key)
	for _, p := range parts {
		m.Write(p)
		m.Write([]byte{0})
	}
	return m.Sum(nil)
}

var b64 = base64.RawURLEncoding

// newSession returns a session cookie's value: a random session id and
// its expiry, signed.
func (d *Dashboard) newSession(key []byte) (value string, exp time.Time) {
	exp = time.Now().Add(d.o.SessionLife)
	payload := make([]byte, 16+8)
	copy(payload, randomBytes(16))
	binary.BigEndian.PutUint64(payload[16:], uint64(exp.Unix()))
	return b64.EncodeToString(payload) + "." + b64.EncodeToString(sign(key, []byte("session"), payload)), exp
}

// session checks a session cookie's value and returns its id.
func session(key []byte, value string) (string, bool) {
	p, s, ok := strings.Cut(value, ".")
	if !ok {
		return "", false
	}
	payload, err1 := b64.DecodeString(p)
	mac, err2 := b64.DecodeString(s)
	if err1 != nil || err2 != nil || len(payload) != 24 || !hmac.Equal(mac, sign(key, []byte("session"), payload)) {
		return "", false
	}
	if time.Now().Unix() > int64(binary.BigEndian.Uint64(payload[16:])) {
		return "", false
	}
	return p, true
}

// csrf is the CSRF token of a session.
func csrf(key []byte, sid string) string {
	return b64.EncodeToString(sign(key, []byte("csrf"), []byte(sid)))
}

// auth says who sent r: the bearer token, a session cookie (with its
// id), or nobody. err: the token cannot be checked now.
func (d *Dashboard) auth(r *http.Request) (who, string, []byte, error) {
	key, err := d.key()
	if err != nil {
		return nobody, "", nil, err
	}
	if d.o.Bearer == nil {
		if sid, ok := d.cookie(r, key); ok {
			return byCookie, sid, key, nil
		}
		return anonymous, "anonymous", key, nil
	}
	if r.Header.Get("Authorization") != "" {
		ok, err := d.o.Bearer(r)
		if err != nil || !ok {
			return nobody, "", key, err
		}
		return byBearer, "", key, nil
	}
	if sid, ok := d.cookie(r, key); ok {
		return byCookie, sid, key, nil
	}
	return nobody, "", key, nil
}

// cookie checks r's session cookie: signed with key, not expired, not
// logged out. It returns the session's id.
func (d *Dashboard) cookie(r *http.Request, key []byte) (string, bool) {
	c, err := r.Cookie(cookieName(r))
	if err != nil {
		return "", false
	}
	sid, ok := session(key, c.Value)
	if !ok {
		return "", false
	}
	d.mu.Lock()
	_, out := d.revoked[sid]
	d.mu.Unlock()
	return sid, !out
}

// ServeHTTP answers the page, /login and /api/ (but /mcp, which the
// daemon serves). The Host and Origin checks against DNS rebinding are
// the daemon's, before this.
func (d *Dashboard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rc := http.NewResponseController(w)
	rc.SetReadDeadline(time.Now().Add(d.o.ReadTimeout))
	rc.SetWriteDeadline(time.Now().Add(d.o.WriteTimeout))
	h := w.Header()
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'")
	h.Set("Cache-Control", "no-store")
	if r.URL.Path == "/login" {
		d.login(w, r)
		return
	}
	who, sid, key, err := d.auth(r)
	if err != nil {
		d.log.Error("dashboard: cannot check the bearer token", "err", err)
		fail(w, http.StatusInternalServerError, "the daemon's bearer token file is unusable (see the daemon log); every request is refused")
		return
	}
	if who == nobody {
		w.Header().Set("WWW-Authenticate", "Bearer")
		fail(w, http.StatusUnauthorized, "log in: run `hive dashboard` for a login link, or send Authorization: Bearer TOKEN")
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		if msg := checkWrite(r, who, key, sid); msg != "" {
			d.log.Warn("dashboard: write refused", "method", r.Method, "path", r.URL.Path, "origin", r.Header.Get("Origin"), "reason", msg)
			w.Header().Set("Connection", "close")
			fail(w, http.StatusForbidden, msg)
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, maxBody)
	}
	ctx := context.WithValue(r.Context(), csrfKey{}, csrf(key, sid))
	if who == byCookie {
		ctx = context.WithValue(ctx, sessionKey{}, sid)
	}
	ctx = context.WithValue(ctx, holderKey{}, holderOf(who, sid))
	d.mux.ServeHTTP(w, r.WithContext(ctx))
}

type csrfKey struct{}

// sessionKey holds the session id of a request made with the cookie.
type sessionKey struct{}

// CSRFHeader carries the CSRF token of a state-changing request made with
// the session cookie.
const CSRFHeader = "X-Hive-CSRF"

// checkWrite checks a state-changing request: one with the bearer token
// passes; one a browser may have sent (a cookie, or an Origin without
// authentication) must be same-origin and carry the session's CSRF token.
// It returns why not, or "".
func checkWrite(r *http.Request, who who, key []byte, sid string) string {
	origin := r.Header.Get("Origin")
	switch who {
	case byBearer:
		return ""
	case anonymous:
		if origin == "" && r.Header.Get("Sec-Fetch-Site") == "" {
			return "" // not a browser
		}
	}
	if origin == "" {
		return "a state-changing request with the session cookie must send Origin"
	}
	if origin != "http://"+r.Host && origin != "https://"+r.Host {
		return "Origin " + origin + " is not this dashboard's (cross-origin requests are refused)"
	}
	got := r.Header.Get(CSRFHeader)
	if got == "" || !hmac.Equal([]byte(got), []byte(csrf(key, sid))) {
		return "missing or wrong " + CSRFHeader + " header (the page's CSRF token)"
	}
	return ""
}

// login takes a login code and sets the session cookie, then sends the
// browser to / so that no secret stays in its address bar or history.
func (d *Dashboard) login(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		w.Header().Set("Allow", http.MethodGet)
		fail(w, http.StatusMethodNotAllowed, "method "+r.Method+": /login answers GET only")
		return
	}
	if !d.takeCode(r.URL.Query().Get("code")) {
		fail(w, http.StatusUnauthorized, "this login link is used, expired or wrong: run `hive dashboard` for a new one")
		return
	}
	key, err := d.key()
	if err != nil {
		fail(w, http.StatusInternalServerError, "the daemon's bearer token file is unusable (see the daemon log)")
		return
	}
	value, exp := d.newSession(key)
	http.SetCookie(w, &http.Cookie{Name: cookieName(r), Value: value, Path: "/", Expires: exp,
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: overTLS(r)})
	d.log.Info("dashboard login", "remote", r.RemoteAddr, "expires", exp.Format(time.RFC3339))
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

func (d *Dashboard) page(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/" {
		fail(w, http.StatusNotFound, "no page "+r.URL.Path)
		return
	}
	tok, _ := r.Context().Value(csrfKey{}).(string)
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	d.index.Execute(w, map[string]string{"CSRF": tok})
}

// logout is POST /api/logout: it ends the session of the cookie it came
// with, for good (the session is revoked here, not only forgotten by the
// browser), and clears the cookie. Like every write with the cookie it
// must be same-origin and carry the CSRF token.
func (d *Dashboard) logout(w http.ResponseWriter, r *http.Request) {
	sid, _ := r.Context().Value(sessionKey{}).(string)
	if sid == "" {
		fail(w, http.StatusBadRequest, "no session to log out of: POST /api/logout with the session cookie (a bearer token cannot be logged out: change the token file)")
		return
	}
	d.revoke(sid)
	d.holds.releaseAll(holderOf(byCookie, sid).key)
	http.SetCookie(w, &http.Cookie{Name: cookieName(r), Value: "", Path: "/", MaxAge: -1,
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: overTLS(r)})
	d.log.Info("dashboard logout", "remote", r.RemoteAddr)
	answer(w, map[string]bool{"logged_out": true}, nil)
}

// sessionExpiry is the expiry (Unix seconds) a session id carries.
func sessionExpiry(sid string) (int64, bool) {
	payload, err := b64.DecodeString(sid)
	if err != nil || len(payload) != 24 {
		return 0, false
	}
	return int64(binary.BigEndian.Uint64(payload[16:])), true
}

// revoke logs a session out, and writes the sessions logged out that
// have not expired to LogoutsFile.
func (d *Dashboard) revoke(sid string) {
	exp, ok := sessionExpiry(sid)
	if !ok {
		return
	}
	now := time.Now().Unix()
	d.mu.Lock()
	defer d.mu.Unlock()
	d.revoked[sid] = exp
	var b strings.Builder
	for s, e := range d.revoked {
		if e < now {
			delete(d.revoked, s)
			continue
		}
		b.WriteString(s + "\n")
	}
	if d.o.LogoutsFile == "" {
		return
	}
	if err := paths.ReplaceFile(d.o.LogoutsFile, []byte(b.String())); err != nil {
		d.log.Error("dashboard: cannot keep a logout past a restart", "err", err)
	}
}

// loadLogouts reads LogoutsFile: one session id a line.
func (d *Dashboard) loadLogouts() {
	if d.o.LogoutsFile == "" {
		return
	}
	f, err := paths.OpenFile(d.o.LogoutsFile, os.O_RDONLY)
	if errors.Is(err, fs.ErrNotExist) {
		return
	}
	if err != nil {
		d.log.Error("dashboard: cannot read the sessions logged out", "err", err)
		return
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, 16<<20))
	if err != nil {
		d.log.Error("dashboard: cannot read the sessions logged out", "err", err)
		return
	}
	now := time.Now().Unix()
	for _, sid := range strings.Fields(string(b)) {
		if exp, ok := sessionExpiry(sid); ok && exp >= now {
			d.revoked[sid] = exp
		}
	}
}

// overTLS reports whether the browser sent r over TLS: to the daemon
// itself, or to a TLS proxy on this machine that says so
// (X-Forwarded-Proto: https from a loopback peer). The session cookie
// is then Secure: the browser never sends it over plain HTTP.
func overTLS(r *http.Request) bool {
	if r.TLS != nil {
		return true
	}
	if !strings.EqualFold(r.Header.Get("X-Forwarded-Proto"), "https") {
		return false
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	ip := net.ParseIP(host)
	return err == nil && ip != nil && ip.IsLoopback()
}
