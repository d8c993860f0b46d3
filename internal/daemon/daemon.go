// Package daemon is hive's composition root: it opens the store, starts the
// job engine, the inbox and the other engines, and serves them on the state
// directory's unix socket (and optionally streamable HTTP).
package daemon

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hivetools/hive/internal/client"
	"github.com/hivetools/hive/internal/handles"
	"github.com/hivetools/hive/internal/inbox"
	"github.com/hivetools/hive/internal/job"
	"github.com/hivetools/hive/internal/paths"
	"github.com/hivetools/hive/internal/proto"
	"github.com/hivetools/hive/internal/pty"
	"github.com/hivetools/hive/internal/store"
	"github.com/hivetools/hive/internal/tools"
)

// ErrRunning means another daemon serves the state directory.
var ErrRunning = errors.New("a hive daemon is already running")

// Config configures a daemon. Zero values mean the defaults.
type Config struct {
	StateDir   string
	HTTPAddr   string // "" disables HTTP
	TokenFile  string // bearer token for HTTP; "" means none
	MaxRunning int
	Grace      time.Duration
	FileCap    int64
	// Retain is how long ended jobs (records and output files) are kept.
	// If zero, 7 days; negative keeps them forever.
	Retain time.Duration
	// HandleTTL and HandleCap configure terminal_exec output handles
	// (zero: 5 minutes, 64 MiB).
	HandleTTL time.Duration
	HandleCap int64
	Version   string
	Logger    *slog.Logger
	// ShutdownTimeout bounds how long Run waits for jobs to stop at the
	// end before SIGKILLing their groups. If zero, Grace + 5 s.
	ShutdownTimeout time.Duration
	// Ready, if set, is called once the socket listens.
	Ready func()
	// Shell is the argv prefix that runs a job's command line, for
	// tests; nil means [bash -c].
	Shell []string
}

type daemon struct {
	cfg    Config
	layout paths.Layout
	log    *slog.Logger
	st     *store.Store
	inbox  *inbox.Inbox
	jobs   *job.Manager
	deps   *tools.Deps
	extra  []func() // closers of extra engines, run at shutdown

	connMu sync.Mutex
	conns  map[net.Conn]struct{}
	wg     sync.WaitGroup
}

// Run serves until ctx is cancelled, then stops jobs, closes the store and
// removes the socket. It returns only after every goroutine it started has
// ended. Cancellation is the normal way to stop and returns nil.
func Run(ctx context.Context, cfg Config) error {
	l := paths.Layout{Dir: cfg.StateDir}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	if err := os.MkdirAll(l.Dir, 0o700); err != nil {
		return fmt.Errorf("create state dir %q: %w", l.Dir, err)
	}
	// Dial first: a live daemon means "already running".
	if resp, err := client.Call(l, proto.Request{Cmd: proto.CmdVersion}); err == nil {
		return fmt.Errorf("%w for %s (pid %d)", ErrRunning, l.Dir, resp.PID)
	}
	unlock, err := lockFile(l.Lock())
	if err != nil {
		return fmt.Errorf("%w for %s: %v", ErrRunning, l.Dir, err)
	}
	defer unlock()
	ln, err := listenUnix(l.Socket())
	if err != nil {
		return err
	}
	d := &daemon{cfg: cfg, layout: l, log: cfg.Logger, conns: map[net.Conn]struct{}{}}
	if err := d.open(); err != nil {
		ln.Close()
		os.Remove(l.Socket())
		return err
	}
	var httpSrv *http.Server
	var httpLn net.Listener
	if cfg.HTTPAddr != "" {
		httpSrv, httpLn, err = d.listenHTTP(cfg.HTTPAddr, cfg.TokenFile)
		if err != nil {
			ln.Close()
			os.Remove(l.Socket())
			d.close()
			return err
		}
		d.wg.Add(1)
		go func() {
			defer d.wg.Done()
			if err := httpSrv.Serve(httpLn); err != nil && !errors.Is(err, http.ErrServerClosed) {
				d.log.Error("http serve", "err", err)
			}
		}()
	}
	d.log.Info("hive daemon listening", "socket", l.Socket(), "http", cfg.HTTPAddr, "pid", os.Getpid(), "version", cfg.Version)
	if cfg.Ready != nil {
		cfg.Ready()
	}
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		d.prune(ctx)
	}()
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		<-ctx.Done()
		ln.Close()
		if httpSrv != nil {
			sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			if httpSrv.Shutdown(sctx) != nil {
				httpSrv.Close() // streams still open: cut them
			}
			cancel()
		}
	}()
	for {
		c, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			d.log.Error("accept", "err", err)
			time.Sleep(50 * time.Millisecond)
			continue
		}
		d.track(c, true)
		d.wg.Add(1)
		go func() {
			defer d.wg.Done()
			defer d.track(c, false)
			defer c.Close()
			d.serveConn(ctx, c)
		}()
	}
	d.log.Info("hive daemon stopping")
	os.Remove(l.Socket())
	// Stop jobs first so their last loose ends are recorded, then close
	// the sessions.
	d.close()
	d.connMu.Lock()
	for c := range d.conns {
		c.Close()
	}
	d.connMu.Unlock()
	d.wg.Wait()
	d.st.Close()
	return nil
}

// prune removes ended jobs older than the retention, now and every hour,
// until ctx ends.
func (d *daemon) prune(ctx context.Context) {
	keep := d.cfg.Retain
	if keep == 0 {
		keep = 7 * 24 * time.Hour
	}
	if keep < 0 {
		return
	}
	tick := time.NewTicker(time.Hour)
	defer tick.Stop()
	for {
		if n, err := d.jobs.Prune(ctx, time.Now().Add(-keep)); err != nil {
			d.log.Error("prune old jobs", "err", err)
		} else if n > 0 {
			d.log.Info("pruned old jobs", "count", n, "older_than", keep)
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

func (d *daemon) addCloser(f func()) {
	d.connMu.Lock()
	defer d.connMu.Unlock()
	d.extra = append(d.extra, f)
}

func (d *daemon) track(c net.Conn, add bool) {
	d.connMu.Lock()
	defer d.connMu.Unlock()
	if add {
		d.conns[c] = struct{}{}
	} else {
		delete(d.conns, c)
	}
}

func (d *daemon) open() error {
	l := d.layout
	st, err := store.Open(l.DB())
	if err != nil {
		return err
	}
	d.st = st
	d.inbox = inbox.New(st)
	d.jobs, err = job.New(job.Options{
		Dir: l.Tasks(), Store: st, MaxRunning: d.cfg.MaxRunning, Grace: d.cfg.Grace,
		FileCap: d.cfg.FileCap, Logger: d.log, Owner: l.Dir, Shell: d.cfg.Shell,
		OnChange: func(in job.Info) {
			if _, err := d.inbox.UpsertTodo(context.Background(), tools.TodoSubsystem, in.ID, tools.TodoSummary(in)); err != nil {
				d.log.Error("upsert job todo", "job", in.ID, "err", err)
			}
		},
	})
	if err != nil {
		d.inbox.Close()
		st.Close()
		return err
	}
	ptys := pty.NewManager(pty.Options{Dir: l.PTY()})
	d.extra = append(d.extra, func() { ptys.Close() })
	d.deps = &tools.Deps{Jobs: d.jobs, Inbox: d.inbox, Layout: l, Logger: d.log, Version: d.cfg.Version,
		PTY: ptys, Handles: handles.New(&handles.Options{TTL: d.cfg.HandleTTL, Cap: d.cfg.HandleCap})}
	return nil
}

// close stops the engines (not the store).
func (d *daemon) close() {
	timeout := d.cfg.ShutdownTimeout
	if timeout == 0 {
		g := d.cfg.Grace
		if g == 0 {
			g = 10 * time.Second
		}
		timeout = g + 5*time.Second
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	d.connMu.Lock()
	closers := d.extra
	d.connMu.Unlock()
	for _, c := range closers {
		c()
	}
	d.jobs.Close(ctx)
	d.inbox.Close()
}

// maxRequestLine bounds the first line of a connection.
const maxRequestLine = 1 << 20

func readLine(br *bufio.Reader) ([]byte, error) {
	var line []byte
	for {
		frag, err := br.ReadSlice('\n')
		line = append(line, frag...)
		if len(line) > maxRequestLine {
			return nil, fmt.Errorf("request line longer than %d bytes", maxRequestLine)
		}
		if err == nil {
			return line, nil
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			return nil, err
		}
	}
}

func writeResp(w io.Writer, r proto.Response) error {
	b, _ := json.Marshal(r)
	_, err := w.Write(append(b, '\n'))
	return err
}

func (d *daemon) serveConn(ctx context.Context, c net.Conn) {
	line, br, fds, err := readHello(c)
	if err != nil {
		return
	}
	var req proto.Request
	if err := json.Unmarshal(line, &req); err != nil {
		closeFDs(fds)
		writeResp(c, proto.Response{Error: fmt.Sprintf("request: not JSON: %v", err)})
		return
	}
	if req.Cmd != proto.CmdMCP || !req.Stdio {
		closeFDs(fds)
		fds = nil
	}
	switch req.Cmd {
	case proto.CmdMCP:
		d.serveMCP(ctx, c, br, req, fds)
	case proto.CmdLogs:
		d.serveLogs(ctx, c, req)
	default:
		writeResp(c, d.handle(ctx, req))
	}
}

// writeTimeout bounds one write to an MCP client: a client that reads
// nothing for this long loses its session instead of holding a goroutine.
const writeTimeout = 30 * time.Second

// deadlineWriter sets a write deadline before every write.
type deadlineWriter struct {
	w interface {
		io.WriteCloser
		SetWriteDeadline(time.Time) error
	}
}

func (d deadlineWriter) Write(p []byte) (int, error) {
	d.w.SetWriteDeadline(time.Now().Add(writeTimeout))
	return d.w.Write(p)
}

func (d deadlineWriter) Close() error { return d.w.Close() }

// rwc joins the buffered reader of a connection with the connection.
type rwc struct {
	*bufio.Reader
	c net.Conn
}

func (r rwc) Close() error { return r.c.Close() }

// serveMCP serves one MCP session. With fds (a bridge's stdin and
// stdout, handed over with the request) the session runs on them directly
// and the connection only tells whether the bridge is still there: no
// bytes are copied through the bridge. Without, MCP runs over the
// connection itself.
func (d *daemon) serveMCP(ctx context.Context, c net.Conn, br *bufio.Reader, req proto.Request, fds []int) {
	sess := &tools.Session{Cwd: req.Cwd, Env: req.Env, ID: fmt.Sprintf("unix-%p", c)}
	srv, stop, err := tools.NewServer(d.deps, sess, req.Groups)
	if err != nil {
		closeFDs(fds)
		writeResp(c, proto.Response{Error: err.Error()})
		return
	}
	defer stop()
	var t mcp.Transport = &lineTransport{r: rwc{br, c}, w: deadlineWriter{c}}
	var stdin, stdout *os.File
	if req.Stdio {
		if stdin, stdout, err = stdioFiles(fds); err != nil {
			writeResp(c, proto.Response{Error: err.Error()})
			return
		}
		defer stdin.Close()
		defer stdout.Close()
		t = &lineTransport{r: stdin, w: deadlineWriter{stdout}}
	}
	if err := writeResp(c, proto.Response{OK: true, Version: d.cfg.Version, PID: os.Getpid(), Stdio: req.Stdio}); err != nil {
		return
	}
	ss, err := srv.Connect(ctx, t, nil)
	if err != nil {
		d.log.Error("mcp connect", "err", err)
		return
	}
	d.log.Info("mcp session open", "session", sess.ID, "cwd", sess.Cwd, "groups", req.Groups, "stdio", req.Stdio)
	if req.Stdio {
		// The bridge holds the connection open while it lives; when it
		// goes, so does the session. When the session ends first, closing
		// the connection tells the bridge to exit.
		gone := make(chan struct{})
		go func() {
			io.Copy(io.Discard, br)
			ss.Close()
			close(gone)
		}()
		ss.Wait()
		c.Close()
		<-gone
	} else {
		ss.Wait()
	}
	d.log.Info("mcp session closed", "session", sess.ID)
}
