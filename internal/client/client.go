// Package client talks to a hive daemon over its unix socket. The CLI and
// the stdio bridge use it; neither holds any job logic.
package client

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/hivetools/hive/internal/paths"
	"github.com/hivetools/hive/internal/proc"
	"github.com/hivetools/hive/internal/proto"
)

// ErrNoDaemon means nothing answered on the socket.
var ErrNoDaemon = errors.New("no hive daemon is running")

// Conn is one request's connection to the daemon.
type Conn struct {
	net.Conn
	r *bufio.Reader
}

// Read reads what follows the response line (MCP or log bytes).
func (c *Conn) Read(p []byte) (int, error) { return c.r.Read(p) }

// CloseWrite half-closes the connection.
func (c *Conn) CloseWrite() error {
	if uc, ok := c.Conn.(*net.UnixConn); ok {
		return uc.CloseWrite()
	}
	return nil
}

// Dial connects to the daemon of the state directory. Nothing is sent
// to a socket that may not be the daemon's: the state dir must pass
// paths.Secure, hive.sock must be a socket (not a symlink) owned by the
// effective uid, and the process listening on it must run as the
// effective uid (where the platform tells, see PeerOf). Those refusals
// wrap paths.ErrInsecure; a missing dir or socket, or one nobody answers
// on, is ErrNoDaemon.
func Dial(l paths.Layout) (net.Conn, error) {
	if err := l.Check(); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, noDaemon(l, err)
		}
		return nil, err
	}
	if err := checkSocket(l); err != nil {
		return nil, err
	}
	c, err := net.DialTimeout("unix", l.Socket(), 2*time.Second)
	if err != nil {
		return nil, noDaemon(l, err)
	}
	if err := checkPeer(l, c); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// noDaemon is ErrNoDaemon for l, on one line an operator reads: a missing
// state dir or socket, or a socket nobody listens on (a daemon that
// died), says so in words; another dial error is told as it is.
func noDaemon(l paths.Layout, err error) error {
	why := err.Error()
	switch {
	case errors.Is(err, fs.ErrNotExist):
		why = "no socket " + l.Socket()
	case errors.Is(err, syscall.ECONNREFUSED):
		why = "nothing listens on " + l.Socket()
	}
	return fmt.Errorf("%w (%s): hive daemon starts one, as does hive run or hive mcp", ErrNoDaemon, why)
}

// checkPeer refuses a connection whose listener runs as another uid.
func checkPeer(l paths.Layout, c net.Conn) error {
	p, err := PeerOf(c)
	if errors.Is(err, ErrNoPeerCred) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("socket %q: %w", l.Socket(), err)
	}
	if euid := os.Geteuid(); p.UID != euid {
		by := fmt.Sprintf("uid %d", p.UID)
		if p.PID > 0 {
			by += fmt.Sprintf(" (pid %d)", p.PID)
		}
		return &paths.InsecureError{What: "socket", Path: l.Socket(),
			Problem: fmt.Sprintf("served by a process of %s, not by you (uid %d): refusing to talk to it", by, euid),
			Fix:     "stop that process and remove the socket"}
	}
	return nil
}

// Open sends req on a new connection and reads the response. On a
// response that is not OK it closes the connection and returns the
// daemon's error.
func Open(l paths.Layout, req proto.Request) (*Conn, proto.Response, error) {
	nc, err := Dial(l)
	if err != nil {
		return nil, proto.Response{}, err
	}
	c := &Conn{Conn: nc, r: newReader(nc)}
	b, _ := json.Marshal(req)
	// A daemon that accepted but does not answer (stuck, or not yet
	// serving) must not hang the caller.
	nc.SetDeadline(time.Now().Add(ResponseTimeout))
	if _, err := nc.Write(append(b, '\n')); err != nil {
		nc.Close()
		return nil, proto.Response{}, fmt.Errorf("send %s request: %w", req.Cmd, err)
	}
	resp, err := c.readResponse(req.Cmd)
	if err != nil {
		nc.Close()
		return nil, resp, err
	}
	nc.SetDeadline(time.Time{}) // what follows (MCP, logs) has no deadline of its own
	return c, resp, nil
}

// ResponseTimeout bounds the wait for the daemon's answer line (Open,
// Call). A request whose answer waits for an event goes through CallWait.
const ResponseTimeout = 30 * time.Second

func newReader(nc net.Conn) *bufio.Reader { return bufio.NewReaderSize(nc, 64<<10) }

// readResponse reads the daemon's response line; a response that is not
// OK becomes its error.
func (c *Conn) readResponse(cmd string) (proto.Response, error) {
	line, err := c.r.ReadBytes('\n')
	if err != nil {
		return proto.Response{}, fmt.Errorf("read %s response: %w", cmd, err)
	}
	var resp proto.Response
	if err := json.Unmarshal(line, &resp); err != nil {
		return proto.Response{}, fmt.Errorf("decode %s response: %w", cmd, err)
	}
	if !resp.OK {
		return resp, resp.Err()
	}
	return resp, nil
}

// Call sends one request and returns the response.
func Call(l paths.Layout, req proto.Request) (proto.Response, error) {
	c, resp, err := Open(l, req)
	if err != nil {
		return resp, err
	}
	c.Close()
	return resp, nil
}

// CallWait sends one request whose answer may take as long as the request
// says (inbox_next with wait: up to its timeout, or without limit): no
// deadline applies to the answer while ctx lives. When ctx ends first,
// CallWait half-closes the connection, which ends the daemon's wait, and
// still reads the answer (within ResponseTimeout): what the daemon took
// for the caller at that moment (a message) is returned, not lost.
// A daemon that goes away meanwhile is an error.
func CallWait(ctx context.Context, l paths.Layout, req proto.Request) (proto.Response, error) {
	nc, err := Dial(l)
	if err != nil {
		return proto.Response{}, err
	}
	defer nc.Close()
	c := &Conn{Conn: nc, r: newReader(nc)}
	b, err := json.Marshal(req)
	if err != nil {
		return proto.Response{}, fmt.Errorf("encode %s request: %w", req.Cmd, err)
	}
	nc.SetWriteDeadline(time.Now().Add(ResponseTimeout))
	if _, err := nc.Write(append(b, '\n')); err != nil {
		return proto.Response{}, fmt.Errorf("send %s request: %w", req.Cmd, err)
	}
	answered := make(chan struct{})
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		select {
		case <-ctx.Done():
			c.CloseWrite()
			nc.SetReadDeadline(time.Now().Add(ResponseTimeout))
		case <-answered:
		}
	}()
	resp, err := c.readResponse(req.Cmd)
	close(answered)
	<-ended
	return resp, err
}

// Ensure returns once a daemon answers on the socket, starting one if none
// does: `exe daemon --state-dir DIR` detached in its own session, with its
// output going to the state dir's daemon.log. It waits up to wait.
//
// A daemon that answers but runs another build than the caller's (see
// SetCaller) is told about on the caller's stderr, and replaced when idle.
//
// The state dir is made (0700) if missing and must pass paths.Secure, and
// a socket that is not the daemon's (see Dial) is an error, not a reason
// to start one: those errors wrap paths.ErrInsecure.
func Ensure(l paths.Layout, exe string, wait time.Duration) error {
	if err := l.Create(); err != nil {
		return err
	}
	resp, err := Call(l, proto.Request{Cmd: proto.CmdVersion})
	if err == nil {
		checkBuild(l, exe, wait, resp)
		return nil
	}
	if errors.Is(err, paths.ErrInsecure) {
		return err
	}
	return Start(l, exe, []string{"daemon", "--state-dir", l.Dir}, "", wait)
}

// Start starts `exe args...` (a daemon of l) detached in its own session,
// in dir (if not ""), with its output going to the state dir's daemon.log,
// and returns once a daemon answers on the socket (maybe another that won
// a start race), or fails after wait. A goroutine of Start waits for the
// started process (it reaps it when it exits): it ends when that process
// does, not when Start returns.
func Start(l paths.Layout, exe string, args []string, dir string, wait time.Duration) error {
	if err := l.Create(); err != nil {
		return err
	}
	logf, err := paths.OpenFile(l.Log(), os.O_CREATE|os.O_APPEND|os.O_WRONLY)
	if err != nil {
		return fmt.Errorf("open daemon log: %w", err)
	}
	defer logf.Close()
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		return err
	}
	defer devnull.Close()
	cmd := exec.Command(exe, args...)
	cmd.Dir = dir
	cmd.Env = daemonEnv(os.Environ())
	cmd.Stdin, cmd.Stdout, cmd.Stderr = devnull, logf, logf
	cmd.SysProcAttr = detached()
	if err := proc.StartDaemon(cmd); err != nil { // with its timer slack: it need not execute itself again
		return fmt.Errorf("start daemon: %w", err)
	}
	exited := make(chan error, 1)
	// The daemon is detached: this goroutine only reaps it if it dies
	// early (another daemon won the race, or it failed to start).
	go func() { exited <- cmd.Wait() }()
	deadline := time.Now().Add(wait)
	for {
		if _, err := Call(l, proto.Request{Cmd: proto.CmdVersion}); err == nil {
			return nil
		}
		select {
		case err := <-exited:
			// It may have lost a start race to another daemon: that one
			// answers within moments. Otherwise it failed.
			lost := time.Now().Add(300 * time.Millisecond)
			for time.Now().Before(lost) {
				if _, cerr := Call(l, proto.Request{Cmd: proto.CmdVersion}); cerr == nil {
					return nil
				}
				time.Sleep(10 * time.Millisecond)
			}
			return fmt.Errorf("daemon exited (%v)%s; see %s", err, lastWord(l.Log()), l.Log())
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("daemon did not answer on %s within %v; see %s", l.Socket(), wait, l.Log())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// lastWord is the daemon log's last line, as ": LINE", or "" (what a
// daemon that failed to start said last: a bad hive.toml, a busy port).
func lastWord(log string) string {
	f, err := paths.OpenFile(log, os.O_RDONLY)
	if err != nil {
		return ""
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return ""
	}
	off := max(fi.Size()-2048, 0)
	b := make([]byte, fi.Size()-off)
	n, _ := f.ReadAt(b, off)
	lines := strings.Split(strings.TrimSpace(string(b[:n])), "\n")
	if last := strings.TrimSpace(lines[len(lines)-1]); last != "" {
		return ": " + last
	}
	return ""
}

// Goodbye waits for the end of a stdio MCP session (see OpenStdio) and
// returns why it ended: nil when the daemon says the client closed its
// input, the daemon's reason otherwise, or an error saying the daemon
// went away without a word (it died).
func (c *Conn) Goodbye(l paths.Layout) error {
	line, err := c.r.ReadBytes('\n')
	if len(line) == 0 {
		if err == nil || errors.Is(err, io.EOF) {
			return fmt.Errorf("the daemon closed the session without saying why: it may have died (see %s)", l.Log())
		}
		return fmt.Errorf("the session's connection to the daemon failed: %w", err)
	}
	var resp proto.Response
	if err := json.Unmarshal(line, &resp); err != nil {
		return fmt.Errorf("the daemon ended the session with an unreadable line %q", line)
	}
	if !resp.OK {
		return resp.Err()
	}
	return nil
}

// Copy copies the rest of the connection to w.
func (c *Conn) Copy(w io.Writer) error {
	_, err := io.Copy(w, c.r)
	return err
}

// jobMarks are the variables by which a daemon knows its jobs' processes
// (and their escapes) as its own.
var jobMarks = []string{"HIVE_JOB_ID=", "HIVE_JOB_OWNER=", "HIVE_PTY_ID=", "HIVE_HOLDER="}

// daemonEnv is env without the job marks: a daemon a job's command starts
// for another state dir (HIVE_STATE_DIR=/x hive run …) is detached, not
// part of that job, and must not end with it.
func daemonEnv(env []string) []string {
	out := make([]string, 0, len(env))
	for _, kv := range env {
		marked := false
		for _, m := range jobMarks {
			marked = marked || strings.HasPrefix(kv, m)
		}
		if !marked {
			out = append(out, kv)
		}
	}
	return out
}
