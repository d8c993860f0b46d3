package sockapi

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"time"

	"github.com/hivetools/hive/internal/errdefs"
	"github.com/hivetools/hive/internal/ident"
	"github.com/hivetools/hive/internal/output"
	"github.com/hivetools/hive/internal/paths"
	"github.com/hivetools/hive/internal/proto"
	"github.com/hivetools/hive/internal/service"
	"github.com/hivetools/hive/internal/view"
)

// handle answers a one-shot request.
func (s *Server) handle(ctx context.Context, req proto.Request) proto.Response {
	fail := proto.Fail
	switch req.Cmd {
	case proto.CmdVersion:
		return s.d.Version(req.WantSum)
	case proto.CmdDashboard:
		u, err := s.d.DashboardURL()
		if err != nil {
			return proto.Fail(err)
		}
		return proto.Response{OK: true, URL: u}
	case proto.CmdStats:
		return proto.Response{OK: true, PID: os.Getpid(), Stats: s.d.Stats()}
	case proto.CmdPs:
		var states []string
		if !req.All && len(req.States) == 0 {
			states = []string{"pending", "running"}
		}
		for _, st := range req.States {
			if !service.ValidJobState(st) {
				return fail(errdefs.Newf(errdefs.ErrInvalid, "states: %q: must be pending, running, done, timed_out, killed, interrupted or failed", st))
			}
			states = append(states, st)
		}
		if req.Name != "" {
			if err := ident.CheckName("name", req.Name); err != nil {
				return fail(err)
			}
		}
		if req.Last < 0 {
			return fail(errdefs.Newf(errdefs.ErrInvalid, "last %d: must be >= 0 (0: all)", req.Last))
		}
		var jobs []view.Job
		var err error
		if req.Status != "" {
			if !service.ValidJobStatus(req.Status) {
				return fail(errdefs.Newf(errdefs.ErrInvalid, "status %q: must be ok or error (error: every job that did not succeed)", req.Status))
			}
			jobs, err = s.svc.JobPage(ctx, service.JobQuery{Name: req.Name, States: req.States, Status: req.Status})
		} else {
			jobs, err = s.svc.ListJobs(ctx, 0, req.Name, states...)
		}
		if err != nil {
			return fail(err)
		}
		total := len(jobs)
		if req.Last > 0 && req.Last < total {
			jobs = jobs[:req.Last] // newest first
		}
		for i := range jobs { // only those listed: it reads a running job's cgroup or /proc
			jobs[i] = s.svc.WithLiveUsage(jobs[i]) // a running job's so far
		}
		return proto.Response{OK: true, Jobs: jobs, Total: total}
	case proto.CmdRun:
		if len(req.Argv) == 0 {
			return fail(errdefs.New(errdefs.ErrInvalid, "argv: must not be empty"))
		}
		for i, a := range req.Argv {
			if err := service.CheckNUL(fmt.Sprintf("argv[%d]", i), a); err != nil {
				return fail(err)
			}
		}
		if req.TimeoutSecs < 0 || req.TimeoutSecs > 1e8 || req.TimeoutSecs != req.TimeoutSecs {
			return fail(errdefs.Newf(errdefs.ErrInvalid, "timeout_secs %v: must be 0..1e8", req.TimeoutSecs))
		}
		spec := service.JobSpec{Cmd: shellJoin(req.Argv), Dir: req.Cwd, Env: req.Env, Name: req.Name, Source: "cli",
			Timeout: time.Duration(req.TimeoutSecs * float64(time.Second)), Quiet: !req.Notify}
		if req.Limits != nil {
			spec.Limits = *req.Limits
		}
		if len(req.Argv) == 1 {
			spec.Cmd = req.Argv[0] // one argument: a bash command line
		}
		w, err := s.svc.RunJob(spec)
		if err != nil {
			return fail(err)
		}
		return proto.Response{OK: true, Job: &w}
	case proto.CmdKill:
		w, err := s.svc.KillJob(req.ID, req.Force)
		if errors.Is(err, service.ErrJobEnded) {
			return proto.Response{OK: true, Job: &w, AlreadyEnded: true}
		}
		if err != nil {
			return fail(err)
		}
		return proto.Response{OK: true, Job: &w}
	case proto.CmdRm:
		if req.ID == "" {
			return fail(errdefs.New(errdefs.ErrInvalid, "id: must not be empty"))
		}
		w, err := s.svc.RemoveJob(ctx, req.ID)
		if err != nil {
			return fail(err)
		}
		return proto.Response{OK: true, Job: &w}
	case proto.CmdWait:
		// A wait that must wait is served by serveWait; this answers an
		// ended job (or an error) at once.
		fallthrough
	case proto.CmdStatus:
		w, err := s.svc.Job(ctx, req.ID)
		if err != nil {
			return fail(err)
		}
		return proto.Response{OK: true, Job: &w}
	case proto.CmdTodo:
		t, err := s.svc.UpsertTodo(ctx, req.Subsystem, req.Key, req.Summary)
		if err != nil {
			return fail(err)
		}
		return proto.Response{OK: true, TodoID: t.ID}
	case proto.CmdClearTodo:
		if err := checkTodoKey(req); err != nil {
			return fail(err)
		}
		cleared, err := s.svc.ClearTodo(ctx, req.Subsystem, req.Key)
		if err != nil {
			return fail(err)
		}
		return proto.Response{OK: true, Cleared: &cleared}
	case proto.CmdTodoLs:
		todos, err := s.svc.Todos(ctx)
		if err != nil {
			return fail(err)
		}
		return proto.Response{OK: true, Todos: todos}
	case proto.CmdWake:
		if req.To != "" {
			if req.From != "" {
				return fail(errdefs.Newf(errdefs.ErrInvalid, "from %q: a message to another agent (to) is from this agent; give no from", req.From))
			}
			seq, err := s.svc.SendTo(ctx, req.To, req.Body)
			if err != nil {
				return fail(err)
			}
			return proto.Response{OK: true, SentSeq: seq}
		}
		m, err := s.svc.Send(ctx, req.From, req.Body)
		if err != nil {
			return fail(err)
		}
		return proto.Response{OK: true, MessageID: m.ID}
	case proto.CmdInboxLs:
		ms, err := s.svc.Messages(ctx, proto.MaxListed)
		if err != nil {
			return fail(err)
		}
		n, err := s.svc.Undelivered(ctx)
		if err != nil {
			return fail(err)
		}
		return proto.Response{OK: true, Messages: ms, Undelivered: &n}
	case proto.CmdInboxAck:
		id, err := strconv.ParseInt(req.ID, 10, 64)
		if err != nil || id < 1 {
			return fail(errdefs.Newf(errdefs.ErrInvalid, "id %q: must be a message id (an integer >= 1, from inbox_next)", req.ID))
		}
		if err := s.svc.AckMessage(ctx, id); err != nil {
			return fail(err)
		}
		return proto.Response{OK: true}
	case proto.CmdInboxRequeue:
		n, err := s.svc.Requeue(ctx)
		if err != nil {
			return fail(err)
		}
		return proto.Response{OK: true, Requeued: &n}
	case proto.CmdGracefulStop:
		m, err := s.svc.GracefulStop(ctx)
		if err != nil {
			return fail(err)
		}
		return proto.Response{OK: true, Message: &proto.Message{ID: m.ID, From: m.From, At: m.At.Unix(), Body: m.Body}}
	case proto.CmdTurn:
		pending, err := s.svc.SetTurn(ctx, req.State, req.ContextUsage)
		if err != nil {
			return fail(err)
		}
		return proto.Response{OK: true, CompactPending: &pending}
	case proto.CmdInboxNext:
		// A waiting one is served by serveInboxNext, which watches the
		// connection; this one does not wait.
		return s.inboxNext(ctx, req)
	case "":
		return fail(errdefs.New(errdefs.ErrInvalid, "cmd: must not be empty"))
	}
	return fail(errdefs.Newf(errdefs.ErrInvalid, "cmd %q: unknown command", req.Cmd))
}

// checkTodoKey checks the subsystem and key of a todo request.
func checkTodoKey(req proto.Request) error {
	if req.Subsystem == "" {
		return errdefs.New(errdefs.ErrInvalid, "subsystem: must not be empty")
	}
	if req.Key == "" {
		return errdefs.New(errdefs.ErrInvalid, "key: must not be empty")
	}
	return nil
}

// checkNext checks an inbox_next request's wait and timeout.
func checkNext(req proto.Request) (time.Duration, error) {
	t := req.TimeoutSecs
	if t < 0 || t > 1e8 || t != t {
		return 0, errdefs.Newf(errdefs.ErrInvalid, "timeout_secs %v: must be 0..1e8 (0: no limit)", t)
	}
	if t > 0 && !req.Wait {
		return 0, errors.New("timeout_secs: only with wait: true")
	}
	return time.Duration(t * float64(time.Second)), nil
}

// inboxNext pops the oldest message (Inbox.Next) and answers it. ctx ends
// a wait: the caller tells the daemon's stop (the daemon's ctx is done)
// from the client's end of input (it is not).
func (s *Server) inboxNext(ctx context.Context, req proto.Request) proto.Response {
	return s.inboxNextUntil(ctx, ctx, req)
}

// inboxNextUntil is inboxNext whose wait also ends with wait (a context
// derived from daemonCtx that ends when the client's input does): that
// end is answered as empty.
func (s *Server) inboxNextUntil(daemonCtx, wait context.Context, req proto.Request) proto.Response {
	timeout, err := checkNext(req)
	if err != nil {
		return proto.Fail(err)
	}
	m, ok, err := s.svc.NextMessage(wait, req.Wait, timeout)
	switch {
	case err != nil && daemonCtx.Err() != nil:
		return proto.Fail(errdefs.New(errdefs.ErrUnavailable, "inbox_next: the daemon is stopping"))
	case err != nil && wait.Err() != nil:
		return proto.Response{OK: true, Empty: true} // the client's input ended the wait
	case err != nil:
		return proto.Fail(fmt.Errorf("inbox_next: %w", err))
	case !ok:
		return proto.Response{OK: true, Empty: true}
	}
	return proto.Response{OK: true, Message: &proto.Message{ID: m.ID, From: m.From, At: m.At.Unix(), Body: m.Body}}
}

// serveInboxNext serves an inbox_next that waits. The wait ends when a
// message (or a changed todo) comes, at the timeout, when the daemon
// stops, or when the client's input ends (it closed or half-closed the
// connection): then the answer is empty, or the message Next took at that
// moment, so a client that half-closes and reads the answer loses
// nothing. The answer line has the usual write deadline.
func (s *Server) serveInboxNext(ctx context.Context, c net.Conn, br io.Reader, req proto.Request, writeTimeout time.Duration) {
	s.waiters.Add(1)
	defer s.waiters.Add(-1)
	wait, cancel := context.WithCancel(ctx)
	defer cancel()
	gone := make(chan struct{})
	go func() {
		io.Copy(io.Discard, br) // ends at EOF, an error, or the Close below
		cancel()
		close(gone)
	}()
	resp := s.inboxNextUntil(ctx, wait, req)
	c.SetWriteDeadline(time.Now().Add(writeTimeout))
	writeResp(c, resp)
	c.Close()
	<-gone
}

// serveLogs writes a job's output: both streams merged in arrival order
// (see output.Interleave), or the one asked for; from the last req.Tail
// lines; with Follow until the job ends. Bytes are read by ranges from
// the live streams or, for a job this daemon no longer holds, from its
// files.
func (s *Server) serveLogs(ctx context.Context, c net.Conn, req proto.Request) {
	opts := output.MergeOptions{Stdout: req.Stdout, Stderr: req.Stderr, Timestamps: req.Timestamps, Tail: req.Tail}
	switch {
	case req.Stdout && req.Stderr:
		opts.Stdout, opts.Stderr = false, false // both: merged
	case req.Tail < 0:
		writeResp(c, proto.Fail(errdefs.Newf(errdefs.ErrInvalid, "tail %d: must be >= 0 (0: all)", req.Tail)))
		return
	case req.Offset < 0:
		writeResp(c, proto.Fail(errdefs.Newf(errdefs.ErrInvalid, "offset %d: must be >= 0", req.Offset)))
		return
	case req.Offset > 0 && req.Stdout == req.Stderr:
		writeResp(c, proto.Fail(errdefs.New(errdefs.ErrInvalid, "offset: only with stdout or stderr (an offset is within one stream)")))
		return
	case req.Offset > 0 && req.Tail > 0:
		writeResp(c, proto.Fail(errdefs.New(errdefs.ErrInvalid, "offset: not with tail")))
		return
	}
	in, err := s.svc.Job(ctx, req.ID)
	if err != nil {
		writeResp(c, proto.Fail(err))
		return
	}
	if writeResp(c, proto.Response{OK: true, Job: &in}) != nil {
		return
	}
	var out, errs *output.Stream
	var index *output.Interleave
	if j, err := s.svc.LiveJob(in.ID); err == nil {
		if req.Follow {
			select {
			case <-j.Started():
			case <-ctx.Done():
				return
			}
		}
		out, errs, index = j.Stdout(), j.Stderr(), j.Index()
	}
	var src output.Source
	var snapshot func() output.Snapshot
	if out != nil && errs != nil {
		src = output.Streams{out, errs}
		snapshot = func() output.Snapshot {
			if index != nil {
				return index.Snapshot()
			}
			// No index here: a held job's holder writes the index file
			// (none, or a missing file: no order known). The ends first.
			a, b := out.Stats(), errs.Stats()
			return output.LiveFileSnapshot(in.IndexPath, [2]int64{a.Total, b.Total}, a.Closed && b.Closed)
		}
	} else { // an ended job of an earlier daemon, or one that failed to start
		var files output.Files
		for i, p := range []string{in.StdoutPath, in.StderrPath} {
			if f, err := paths.OpenFile(p, os.O_RDONLY); err == nil { // never through a planted symlink
				defer f.Close()
				files[i] = f
			}
		}
		src = files
		snap := output.FileSnapshot(in.IndexPath, [2]int64{in.StdoutBytes, in.StderrBytes})
		snapshot = func() output.Snapshot { return snap }
	}
	m := output.NewMerger(src, in.IndexPath, in.Started, opts)
	defer m.Close()
	if req.Offset > 0 {
		m.Skip(req.Offset)
	}
	// Notice the client going away while we wait, or while a round reads.
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	gone := make(chan struct{})
	go func() {
		var b [1]byte
		c.Read(b[:])
		close(gone)
		cancel()
	}()
	defer func() { c.Close(); <-gone }() // the reader above ends with the connection
	cw := deadlineWriter{c}              // a follower that stops reading is let go
	for {
		var ch1, ch2 <-chan struct{}
		if out != nil && errs != nil {
			ch1, ch2 = out.Changed(), errs.Changed()
		}
		snap := snapshot()
		if err := m.Round(rctx, cw, snap); err != nil {
			s.log.Debug("logs", "job", in.ID, "err", err)
			return
		}
		if !req.Follow || snap.Closed || ch1 == nil {
			return
		}
		select {
		case <-ch1:
		case <-ch2:
		case <-gone:
			return
		case <-ctx.Done():
			return
		}
	}
}

// serveWait answers a wait once the job has ended (the job's record, as
// committed), or when the client goes away or the daemon stops.
func (s *Server) serveWait(ctx context.Context, c net.Conn, br io.Reader, req proto.Request, requestTimeout time.Duration) {
	j, err := s.svc.LiveJob(req.ID)
	if err == nil {
		gone := make(chan struct{})
		go func() {
			io.Copy(io.Discard, br) // ends at EOF, an error, or the Close below
			close(gone)
		}()
		defer func() { c.Close(); <-gone }()
		select {
		case <-j.Done():
		case <-gone:
			return
		case <-ctx.Done():
			c.SetWriteDeadline(time.Now().Add(requestTimeout))
			writeResp(c, proto.Fail(errdefs.New(errdefs.ErrUnavailable, "wait: the daemon is stopping")))
			return
		}
		req.ID = j.ID()
	}
	resp := s.handle(ctx, req) // a job not held here has ended: its record answers
	c.SetWriteDeadline(time.Now().Add(requestTimeout))
	writeResp(c, resp)
}

// shellJoin quotes argv into one bash command line.
func shellJoin(argv []string) string {
	s := ""
	for i, a := range argv {
		if i > 0 {
			s += " "
		}
		s += shellQuote(a)
	}
	return s
}

func shellQuote(a string) string {
	if a == "" {
		return "''"
	}
	safe := true
	for _, r := range a {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.' || r == '/' || r == '=' || r == ':' || r == ',' || r == '+' || r == '@') {
			safe = false
			break
		}
	}
	if safe {
		return a
	}
	out := "'"
	for _, r := range a {
		if r == '\'' {
			out += `'\''`
		} else {
			out += string(r)
		}
	}
	return out + "'"
}
