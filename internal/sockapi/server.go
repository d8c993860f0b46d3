// Package sockapi is the daemon's unix-socket server
// (docs/socket-protocol.md): it accepts connections, reads each one's
// first line, a JSON request, and serves it. One-shot commands are
// answered from a *service.Service; the streaming ones are served on the
// connection (logs, wait, a waiting inbox_next, stop's second answer);
// an mcp connection becomes an MCP session (internal/mcpline,
// internal/tools), on the connection or on a bridge's stdin and stdout
// handed over with the request. What is about the daemon itself
// (version, stats, the dashboard's URL, stopping) it asks of a Daemon.
package sockapi

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hivetools/hive/internal/errdefs"
	"github.com/hivetools/hive/internal/lineio"
	"github.com/hivetools/hive/internal/mcpline"
	"github.com/hivetools/hive/internal/proto"
	"github.com/hivetools/hive/internal/service"
)

// Daemon is what the server asks of the process it serves in: the
// answers that are about the daemon, not its engines. Its methods are
// called from the connections' goroutines, concurrently.
type Daemon interface {
	// Version answers a version request; wantSum asks for the digest of
	// the daemon's executable too.
	Version(wantSum bool) proto.Response
	// Stats answers a stats request (the server's own figures, such as
	// InboxWaiters, are the daemon's to ask for).
	Stats() *proto.Stats
	// DashboardURL is a one-time login URL of the dashboard, or why there
	// is none.
	DashboardURL() (string, error)
	// Stop is a stop request the server found well formed. It returns
	// nil when the daemon is to stop as r says: the server then answers
	// OK and Serve returns. Otherwise it says why not; a *BusyError
	// (r.IfIdle of a busy daemon) is answered with its activity.
	Stop(r StopRequest) error
}

// StopRequest is what a stop request asks for.
type StopRequest struct {
	// Grace is how long the jobs get to stop; zero means the daemon's.
	Grace time.Duration
	// IfIdle: only if the daemon is idle.
	IfIdle bool
	// KeepJobs leaves the jobs to the holder (hive restart).
	KeepJobs bool
}

// BusyError refuses a stop request for an idle daemon: the daemon is
// busy with Activity. It is of class errdefs.ErrConflict.
type BusyError struct{ Activity proto.Activity }

func (e *BusyError) Error() string { return "the daemon is busy: " + e.Activity.String() }

// Is makes a BusyError errdefs.ErrConflict.
func (e *BusyError) Is(target error) bool { return target == errdefs.ErrConflict }

// Options configures a Server.
type Options struct {
	// Service answers the requests. Required.
	Service *service.Service
	// Daemon answers what is about the daemon. Required.
	Daemon Daemon
	// RequestTimeout bounds the wait for a connection's first line (a
	// client idle longer gets an error answer) and the write of a
	// one-line answer. If zero, DefaultRequestTimeout.
	RequestTimeout time.Duration
	// MaxLine bounds one inbound JSON-RPC line of an MCP session. If
	// zero, mcpline.DefaultMaxLine.
	MaxLine int
	// Logger: if nil, logs are discarded.
	Logger *slog.Logger
}

// DefaultRequestTimeout bounds the wait for a connection's first line,
// and the write of a one-line answer, unless Options.RequestTimeout says
// otherwise.
const DefaultRequestTimeout = 10 * time.Second

// MaxRequestLine bounds the first line of a connection: a wake with the
// largest body (inbox.MaxBody, 1 MiB) fits however JSON escapes it (at
// most 6 bytes a byte, as \u0001).
const MaxRequestLine = 8 << 20

// errRequestTooLong is a first line over MaxRequestLine.
var errRequestTooLong = fmt.Errorf("request line longer than %d bytes", MaxRequestLine)

// Server serves the daemon's socket. Make it with New, run Serve, then
// Close, then AnswerStopped.
type Server struct {
	svc            *service.Service
	d              Daemon
	log            *slog.Logger
	requestTimeout time.Duration
	maxLine        int

	mu    sync.Mutex
	conns map[net.Conn]struct{} // the connections being served
	// stopWaiters are the connections of stop requests, answered once
	// the daemon has stopped (AnswerStopped).
	stopWaiters []net.Conn

	wg     sync.WaitGroup // every goroutine Serve starts
	connWG sync.WaitGroup // the goroutines serving connections
	// stopping is closed by Close: MCP sessions then end, saying so.
	stopping chan struct{}
	// waiters counts the connections waiting in inbox_next.
	waiters atomic.Int64
	// mcpSessions counts the MCP sessions on the socket (and stdio).
	mcpSessions atomic.Int64
	// mcpSeq numbers them: the logs and the activity name a session
	// unix-1, unix-2, ...
	mcpSeq atomic.Int64
	// noDirect (tests) leaves every tools/call of the sessions opened
	// from now on to the go-sdk (see mcpline.Transport.Direct).
	noDirect atomic.Bool
	// onMCP (tests), if set, hears of each MCP session's transport.
	onMCP atomic.Pointer[func(*mcpline.Transport)]
}

// New returns a server of o.
func New(o Options) *Server {
	s := &Server{svc: o.Service, d: o.Daemon, log: o.Logger, requestTimeout: o.RequestTimeout, maxLine: o.MaxLine,
		conns: map[net.Conn]struct{}{}, stopping: make(chan struct{})}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.requestTimeout <= 0 {
		s.requestTimeout = DefaultRequestTimeout
	}
	return s
}

// Serve accepts connections on ln and serves each until ctx ends or a
// stop request is accepted; then it closes ln and returns nil. The
// connections it accepted are served on, with a context that has ended
// (a wait answers that the daemon is stopping), until Close.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		<-ctx.Done()
		ln.Close()
	}()
	for {
		c, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			s.log.Error("accept", "err", err)
			time.Sleep(50 * time.Millisecond)
			continue
		}
		if !s.peerAllowed(c) {
			c.Close()
			continue
		}
		s.track(c, true)
		s.wg.Add(1)
		s.connWG.Add(1)
		go func() {
			defer s.wg.Done()
			defer s.connWG.Done()
			defer s.track(c, false)
			if !s.serveConn(ctx, c, stop) {
				c.Close()
			}
		}()
	}
}

// Close ends the service of the connections once the daemon's engines
// have stopped: MCP sessions end, telling their bridges that the daemon
// is stopping; connections still open after a moment (a one-shot request
// stuck in a write, a client that does not go) are closed. It returns
// once every goroutine Serve started has ended. Call it after Serve has
// returned.
func (s *Server) Close() {
	close(s.stopping)
	conns := make(chan struct{})
	go func() { s.connWG.Wait(); close(conns) }()
	select {
	case <-conns:
	case <-time.After(2 * time.Second):
	}
	s.mu.Lock()
	for c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
	<-conns
}

// MCPSessions is the number of MCP sessions being served.
func (s *Server) MCPSessions() int { return int(s.mcpSessions.Load()) }

// InboxWaiters is the number of connections waiting in inbox_next.
func (s *Server) InboxWaiters() int { return int(s.waiters.Load()) }

func (s *Server) track(c net.Conn, add bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if add {
		s.conns[c] = struct{}{}
	} else {
		delete(s.conns, c)
	}
}

// readRequest reads a connection's first line: at most MaxRequestLine
// bytes, or, at the end of input, a last line without a newline. It is
// valid until the next read from br.
func readRequest(br *bufio.Reader) ([]byte, error) {
	line, err := lineio.Read(br, MaxRequestLine)
	var tooLong *lineio.TooLongError
	switch {
	case errors.As(err, &tooLong):
		return nil, errRequestTooLong
	case errors.Is(err, io.EOF) && len(bytes.TrimSpace(line)) > 0:
		return line, nil // a last line without a newline: the client half-closed
	case err != nil:
		return nil, err
	}
	return line, nil
}

func writeResp(w io.Writer, r proto.Response) error {
	b, _ := json.Marshal(r)
	_, err := w.Write(append(b, '\n'))
	return err
}

// serveConn serves one socket connection: its first line (within
// requestTimeout) says what it is for. Every first line is answered, a
// bad one with an error saying what is wrong. It reports whether it kept
// the connection (a stop request's, answered again by AnswerStopped);
// otherwise the caller closes it. stop ends Serve (an accepted stop
// request).
func (s *Server) serveConn(ctx context.Context, c net.Conn, stop func()) (kept bool) {
	requestTimeout := s.requestTimeout
	c.SetDeadline(time.Now().Add(requestTimeout))
	line, br, fds, err := readHello(c)
	if err != nil {
		c.SetWriteDeadline(time.Now().Add(requestTimeout))
		var ne net.Error
		switch {
		case errors.Is(err, errRequestTooLong):
			writeResp(c, proto.Fail(err))
		case errors.As(err, &ne) && ne.Timeout():
			writeResp(c, proto.Fail(errdefs.Newf(errdefs.ErrInvalid, "request: no complete line within %v", requestTimeout)))
		}
		return
	}
	c.SetReadDeadline(time.Time{}) // mcp and logs connections live on
	var req proto.Request
	if err := json.Unmarshal(line, &req); err != nil {
		closeFDs(fds)
		writeResp(c, proto.Fail(errdefs.Newf(errdefs.ErrInvalid, "request: not JSON: %v", err)))
		return
	}
	if req.Cmd != proto.CmdMCP || !req.Stdio {
		closeFDs(fds)
		fds = nil
	}
	switch req.Cmd {
	case proto.CmdMCP:
		c.SetWriteDeadline(time.Time{}) // the session sets its own
		s.serveMCP(ctx, c, br, req, fds)
	case proto.CmdLogs:
		c.SetWriteDeadline(time.Time{})
		s.serveLogs(ctx, c, req)
	case proto.CmdWait:
		c.SetDeadline(time.Time{}) // the wait has no limit; the answer gets the write deadline
		s.serveWait(ctx, c, br, req, requestTimeout)
	case proto.CmdStop:
		c.SetWriteDeadline(time.Now().Add(requestTimeout))
		return s.serveStop(c, req, stop)
	case proto.CmdInboxNext:
		if req.Wait {
			s.serveInboxNext(ctx, c, br, req, requestTimeout)
			return
		}
		fallthrough
	default:
		resp := s.handle(ctx, req)
		c.SetWriteDeadline(time.Now().Add(requestTimeout))
		writeResp(c, resp)
	}
	return false
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
