package service

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"time"

	"github.com/hivetools/hive/internal/errdefs"
	"github.com/hivetools/hive/internal/limits"
	"github.com/hivetools/hive/internal/pty"
	"github.com/hivetools/hive/internal/view"
)

// Errors of the PTY sessions, for errors.Is (each of an errdefs class).
var (
	// ErrPTYEnded: the session is no longer live (closed, or its daemon
	// stopped); its output can still be read (ReadPTY).
	ErrPTYEnded = pty.ErrEnded
	// ErrPTYExited: the session's process has exited.
	ErrPTYExited = pty.ErrExited
)

// PTYOpen is a new PTY session.
type PTYOpen struct {
	// Cmd is run by bash -c; empty: an interactive bash.
	Cmd string
	// Cwd is the working directory; empty: the daemon's.
	Cwd string
	// Env is the whole environment; nil: the daemon's.
	Env []string
	// Cols and Rows: zero is the default size (120x40).
	Cols, Rows int
	// Name is an optional handle, [a-z0-9-]{1,63}, unique among the open
	// sessions.
	Name string
	// Limits are the session's resource limits (pty.OpenOptions.Limits);
	// zero: the operator's defaults.
	Limits limits.Limits
}

// PTYOutput is output of a PTY session, from a read or a send.
type PTYOutput struct {
	// Data is the output, control sequences removed unless raw was asked.
	Data string
	// Offset is the stream offset of Data's first byte, Next the one to
	// read from next; Skipped counts asked-for bytes no longer kept.
	Offset, Next, Skipped int64
	// Matched: a send's WaitFor matched.
	Matched bool
	// Busy: a send's wait reached its limit (Limit) first.
	Busy  bool
	Limit time.Duration
	// Ended, on a read, says that the session is no longer live (an
	// error wrapping ErrPTYEnded): Data is from its output file.
	Ended error
	view.SessionState
}

func ptyOutput(r pty.ReadResult) PTYOutput {
	return PTYOutput{Data: r.Data, Offset: r.Offset, Next: r.Next, Skipped: r.Skipped, Matched: r.Matched,
		SessionState: r.SessionState}
}

// Screen is a PTY session's rendered screen.
type Screen struct {
	// Text holds the rows joined by \n, trailing blanks left out.
	Text string
	// CursorRow and CursorCol are 0-based.
	CursorRow, CursorCol int
	// AltScreen: a full-screen program (less, vim) uses the alternate
	// screen.
	AltScreen bool
}

// ReadyLimit bounds a send's default wait for the program to want input
// again.
const ReadyLimit = 10 * time.Second

// HasPTY reports whether the Service runs PTY sessions.
func (s *Service) HasPTY() bool { return s.PTY != nil }

// session is the live session ref names (an id or a name).
func (s *Service) session(ref string) (*pty.Session, error) {
	if s.PTY == nil {
		return nil, fmt.Errorf("pty session %q: %w", ref, pty.ErrNotFound)
	}
	return s.PTY.Get(ref)
}

// OpenPTY starts a PTY session. Bad options are errdefs.ErrInvalid, too
// many sessions errdefs.ErrLimit.
func (s *Service) OpenPTY(o PTYOpen) (view.Session, error) {
	if s.PTY == nil {
		return view.Session{}, pty.ErrUnsupported
	}
	if o.Cmd != "" {
		if _, _, err := s.checkJob(JobSpec{Cmd: o.Cmd, Dir: o.Cwd, Source: "terminal"}); err != nil {
			return view.Session{}, err
		}
	}
	sess, err := s.PTY.Open(pty.OpenOptions{Cmd: o.Cmd, Cwd: o.Cwd, Env: o.Env, Cols: o.Cols, Rows: o.Rows, Name: o.Name, Limits: o.Limits})
	if err != nil {
		return view.Session{}, err
	}
	return sess.Info().View(), nil
}

// PTYSession is the view of the live session ref names. One unknown is of class
// errdefs.ErrNotFound; one that ended wraps ErrPTYEnded.
func (s *Service) PTYSession(ref string) (view.Session, error) {
	sess, err := s.session(ref)
	if err != nil {
		return view.Session{}, err
	}
	return sess.Info().View(), nil
}

// PTYs lists the sessions; never nil.
func (s *Service) PTYs() []view.Session {
	out := []view.Session{}
	if s.PTY == nil {
		return out
	}
	for _, in := range s.PTY.List() {
		out = append(out, in.View())
	}
	return out
}

// PTYSend is input for a PTY session and how long the answer waits.
type PTYSend struct {
	Session string // an id or a name
	Input   string
	// Keys are key names (Enter, Tab, Up, C-c…) typed after Input.
	Keys []string
	// Operator says a person types it (the dashboard), not the agent:
	// the policy does not check it.
	Operator bool
	// Wait and WaitFor: with neither, the answer waits until the program
	// wants input again (at most ReadyLimit); with Wait 0 and no WaitFor
	// it does not wait (and has no output); otherwise until Wait passed
	// without output or WaitFor matched the output since the send (at
	// most 30 s with WaitFor, Wait + 10 s without).
	Wait    *time.Duration
	WaitFor *regexp.Regexp
}

// SendPTY types into a session and returns the output it waited for
// (PTYSend). Input and keys both empty, or an unknown key, is
// errdefs.ErrInvalid; input the policy refuses (checked as a command
// line, best effort: the program reading it may be anything) is
// errdefs.ErrPolicy, and nothing is written; ctx ends a wait with ctx's
// error.
func (s *Service) SendPTY(ctx context.Context, r PTYSend) (PTYOutput, error) {
	sess, err := s.session(r.Session)
	if err != nil {
		return PTYOutput{}, err
	}
	input := r.Input
	if len(r.Keys) > 0 {
		k, err := pty.KeySequence(r.Keys)
		if err != nil {
			return PTYOutput{}, err
		}
		input += k
	}
	if input == "" {
		return PTYOutput{}, errdefs.New(errdefs.ErrInvalid, "input: give input or keys")
	}
	if !r.Operator {
		if err := s.checkInput(r.Session, input); err != nil {
			return PTYOutput{}, err
		}
	}
	if r.Wait == nil && r.WaitFor == nil {
		wctx, cancel := context.WithTimeout(ctx, ReadyLimit)
		defer cancel()
		res, err := sess.SendReady(wctx, input)
		if err != nil && !errors.Is(err, context.DeadlineExceeded) {
			return PTYOutput{}, err
		}
		out := ptyOutput(res)
		out.Busy, out.Limit = err != nil, ReadyLimit
		return out, nil
	}
	if r.WaitFor == nil && *r.Wait == 0 { // Wait is set: both nil was the case above
		start := sess.Info().Bytes
		if err := sess.Send(input); err != nil {
			return PTYOutput{}, err
		}
		return PTYOutput{Offset: start, Next: start, SessionState: sess.Info().SessionState}, nil
	}
	limit := 30 * time.Second
	var wait time.Duration
	if r.Wait != nil {
		wait = *r.Wait
	}
	if r.WaitFor == nil {
		limit = wait + 10*time.Second
	}
	wctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	res, err := sess.SendWait(wctx, input, wait, r.WaitFor)
	if err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return PTYOutput{}, err
	}
	out := ptyOutput(res)
	out.Busy, out.Limit = err != nil, limit
	return out, nil
}

// ReadPTY reads a session's output from since (at most max bytes), its
// control sequences removed unless raw. A session that is no longer live
// is read from its output file, with Ended set.
func (s *Service) ReadPTY(ref string, since int64, raw bool, max int) (PTYOutput, error) {
	sess, err := s.session(ref)
	if errors.Is(err, pty.ErrEnded) {
		r, rerr := s.PTY.ReadEnded(ref, since, raw, max)
		if rerr != nil {
			return PTYOutput{}, fmt.Errorf("%w; reading its output: %w", err, rerr)
		}
		out := ptyOutput(r)
		out.Ended = err
		return out, nil
	}
	if err != nil {
		return PTYOutput{}, err
	}
	r, err := sess.Read(since, raw, max)
	if err != nil {
		return PTYOutput{}, err
	}
	return ptyOutput(r), nil
}

// PTYScreen is a live session's view and its rendered screen.
func (s *Service) PTYScreen(ref string) (view.Session, Screen, error) {
	sess, err := s.session(ref)
	if err != nil {
		return view.Session{}, Screen{}, err
	}
	info := sess.Info()
	sc := sess.Screen()
	return info.View(), Screen{Text: sc.Text, CursorRow: sc.CursorRow, CursorCol: sc.CursorCol, AltScreen: sc.AltScreen}, nil
}

// ResizePTY sets a session's size (1..1000 each).
func (s *Service) ResizePTY(ref string, cols, rows int) (view.Session, error) {
	sess, err := s.session(ref)
	if err != nil {
		return view.Session{}, err
	}
	if err := sess.Resize(cols, rows); err != nil {
		return view.Session{}, err
	}
	return sess.Info().View(), nil
}

// ClosePTY closes a session: SIGHUP, then SIGKILL to all it started.
func (s *Service) ClosePTY(ref string) (view.Session, error) {
	sess, err := s.session(ref)
	if err != nil {
		return view.Session{}, err
	}
	if err := sess.Close(); err != nil {
		return view.Session{}, err
	}
	return sess.Info().View(), nil
}
