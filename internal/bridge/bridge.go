// Package bridge is the stdio front end: it forwards MCP between its
// stdin/stdout and the daemon's socket, and holds no tool logic.
package bridge

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sync/atomic"
	"time"

	"github.com/hivetools/hive/internal/client"
	"github.com/hivetools/hive/internal/paths"
	"github.com/hivetools/hive/internal/proto"
)

// Options configures a bridge.
type Options struct {
	Layout paths.Layout
	Groups []string
	// Answers is the form of tool answers (tools.ParseAnswers); "" is the
	// default, structured.
	Answers string
	// Exe is the hive binary to start a daemon with, if none answers.
	Exe string
	// StartWait bounds the wait for a started daemon. If zero, 2 s.
	StartWait time.Duration
	Stdin     io.Reader
	Stdout    io.Writer
	// Copy forces forwarding bytes even where stdin and stdout could be
	// handed to the daemon.
	Copy bool
}

// Run connects (starting the daemon if needed) and forwards until stdin
// ends or the daemon closes the connection. The bridge's working directory
// and environment become the session's. When it forwards bytes and the
// daemon ends first, Run sets a read deadline on Stdin, if it takes one,
// to end its read (see stopReading).
func Run(o Options) error {
	if o.StartWait == 0 {
		o.StartWait = 2 * time.Second
	}
	if err := client.Ensure(o.Layout, o.Exe, o.StartWait); err != nil {
		return err
	}
	cwd, err := os.Getwd()
	if err != nil {
		return fmt.Errorf("working directory: %w", err)
	}
	req := proto.Request{Cmd: proto.CmdMCP, Cwd: cwd, Env: os.Environ(), Groups: o.Groups, Answers: o.Answers}
	// Best: hand stdin and stdout to the daemon, which then reads and
	// writes the client's pipes itself; the bridge only waits, so the
	// bytes skip a process hop each way.
	in, inOK := o.Stdin.(*os.File)
	out, outOK := o.Stdout.(*os.File)
	if !o.Copy && inOK && outOK {
		c, err := client.OpenStdio(o.Layout, req, in, out)
		if err == nil {
			defer c.Close()
			// Until the daemon ends the session (or dies): it says why.
			return c.Goodbye(o.Layout)
		}
		if !errors.Is(err, client.ErrNoHandOff) {
			return fmt.Errorf("open mcp session: %w", err)
		}
	}
	c, _, err := client.Open(o.Layout, req)
	if err != nil {
		return fmt.Errorf("open mcp session: %w", err)
	}
	defer c.Close()
	var inputDone atomic.Bool
	reading := make(chan struct{})
	go func() {
		defer close(reading)
		io.Copy(c, o.Stdin)
		inputDone.Store(true)
		c.CloseWrite() // the client is done: the daemon ends the session
	}()
	// Daemon → client until the daemon closes.
	_, err = io.Copy(writerOnly{o.Stdout}, c)
	if inputDone.Load() {
		<-reading
		return nil // the client ended the session
	}
	// The stdin reader may be blocked in a read of stdin, or in a write
	// to a daemon that no longer reads: end both.
	c.SetWriteDeadline(time.Now())
	stopReading(o.Stdin, reading)
	var we *writeError
	if errors.As(err, &we) {
		return fmt.Errorf("forward to the client: %w", we.err)
	}
	// The daemon closed (or lost) the connection under a client that is
	// still there: it stopped or died. Which one, the socket tells.
	if _, cerr := client.Call(o.Layout, proto.Request{Cmd: proto.CmdVersion}); cerr == nil {
		return fmt.Errorf("the daemon ended the session (see %s for why)", o.Layout.Log())
	}
	return fmt.Errorf("the daemon stopped or died under the session (see %s)", o.Layout.Log())
}

// stopReading ends the read of stdin in flight after the daemon ended the
// session, and waits for its reader (done), where stdin takes a read
// deadline (a pipe or socket in non-blocking mode, as os.Pipe makes). A
// stdin that does not (a terminal, a process's usual blocking stdin)
// cannot be interrupted: its reader stays in Read until stdin has a line
// or ends, which for hive mcp is when its process exits, right after.
func stopReading(stdin io.Reader, done <-chan struct{}) {
	d, ok := stdin.(interface{ SetReadDeadline(time.Time) error })
	if !ok || d.SetReadDeadline(time.Now()) != nil {
		return
	}
	<-done
}

// writeError marks an error of the client's side (our stdout), to tell it
// from one of the daemon's connection.
type writeError struct{ err error }

func (e *writeError) Error() string { return e.err.Error() }

// writerOnly wraps the errors of w in writeError (and hides any ReadFrom
// of w, so io.Copy reports each side's errors as they are).
type writerOnly struct{ w io.Writer }

func (w writerOnly) Write(p []byte) (int, error) {
	n, err := w.w.Write(p)
	if err != nil {
		err = &writeError{err}
	}
	return n, err
}
