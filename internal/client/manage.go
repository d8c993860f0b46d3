package client

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/hivetools/hive/internal/build"
	"github.com/hivetools/hive/internal/paths"
	"github.com/hivetools/hive/internal/proto"
)

// ErrBusy means a stop that asked for an idle daemon found it busy.
var ErrBusy = errors.New("the daemon is busy")

// Stop asks the daemon of l to stop and returns once it has: its jobs
// ended (stopped with grace between SIGINT and SIGKILL; 0 means the
// daemon's --grace), its store closed, its socket removed and its lock
// free. With ifIdle a busy daemon is left running and the error wraps
// ErrBusy, naming what it is busy with. It waits up to wait for the end.
// It returns the daemon's pid. No daemon is ErrNoDaemon.
func Stop(l paths.Layout, grace time.Duration, ifIdle bool, wait time.Duration) (int, error) {
	return stop(l, proto.Request{Cmd: proto.CmdStop, GraceSecs: grace.Seconds(), IfIdle: ifIdle}, wait)
}

// StopKeepingJobs is Stop that leaves the running jobs to the holder of
// the jobs, for the next daemon to adopt (a daemon without a holder stops
// them, as Stop).
func StopKeepingJobs(l paths.Layout, grace time.Duration, wait time.Duration) (int, error) {
	return stop(l, proto.Request{Cmd: proto.CmdStop, GraceSecs: grace.Seconds(), KeepJobs: true}, wait)
}

func stop(l paths.Layout, req proto.Request, wait time.Duration) (int, error) {
	nc, err := Dial(l)
	if err != nil {
		return 0, err
	}
	defer nc.Close()
	b, _ := json.Marshal(req)
	nc.SetDeadline(time.Now().Add(ResponseTimeout))
	if _, err := nc.Write(append(b, '\n')); err != nil {
		return 0, fmt.Errorf("send stop request: %w", err)
	}
	c := &Conn{Conn: nc, r: bufio.NewReader(nc)}
	resp, err := c.readResponse(proto.CmdStop)
	if err != nil {
		if resp.Activity != nil {
			return resp.PID, fmt.Errorf("%w: %s", ErrBusy, resp.Activity)
		}
		return 0, fmt.Errorf("stop: %w", err)
	}
	pid := resp.PID
	nc.SetDeadline(time.Now().Add(wait))
	if _, err := c.readResponse(proto.CmdStop); err != nil {
		if errors.Is(err, io.EOF) {
			// Closed without the last word: it went away (the
			// process ended some other way meanwhile).
			return pid, nil
		}
		return pid, fmt.Errorf("daemon %d did not finish stopping within %v: %w (see %s)", pid, wait, err, l.Log())
	}
	return pid, nil
}

// skew is the caller's build and where Ensure reports a daemon of
// another build (see SetCaller).
var skew struct {
	mu     sync.Mutex
	caller func() build.Info
	warn   io.Writer
	warned bool
	sum    string // the caller's digest, once computed
}

// SetCaller tells Ensure the caller's build (self is called when needed;
// its Sum is computed here, at most once, when a stamp cannot tell the
// builds apart) and where to say that the daemon runs another build. A nil
// self turns the check off (the default).
func SetCaller(self func() build.Info, warn io.Writer) {
	skew.mu.Lock()
	defer skew.mu.Unlock()
	skew.caller, skew.warn, skew.warned, skew.sum = self, warn, false, ""
}

// Compare tells whether the daemon whose version answer is resp runs the
// build self. It asks the daemon for its digest (and computes self's)
// only when the stamps and files cannot tell; it returns both builds as
// compared.
func Compare(l paths.Layout, self build.Info, resp proto.Response) (same bool, me, daemon build.Info) {
	if resp.Build == nil {
		return false, self, build.Info{Version: resp.Version}
	}
	d := *resp.Build
	if build.Same(self, d) || !build.NeedsSum(self, d) {
		return build.Same(self, d), self, d
	}
	if self.Sum == "" {
		self, _ = self.WithSum(build.SelfExe())
	}
	if d.Sum == "" {
		if r, err := Call(l, proto.Request{Cmd: proto.CmdVersion, WantSum: true}); err == nil && r.Build != nil {
			d = *r.Build
		}
	}
	return build.Same(self, d), self, d
}

// checkBuild runs when Ensure found a daemon: if it runs another build
// than the caller's, say so (once a process) and, when it is idle,
// replace it with the caller's build (exe) started with the daemon's own
// arguments. A busy one is left alone. Errors are only told.
func checkBuild(l paths.Layout, exe string, wait time.Duration, resp proto.Response) {
	skew.mu.Lock()
	self, warn := skew.caller, skew.warn
	skew.mu.Unlock()
	if self == nil {
		return
	}
	same, me, d := Compare(l, self(), resp)
	if same {
		return
	}
	say := func(format string, a ...any) {
		skew.mu.Lock()
		defer skew.mu.Unlock()
		if warn != nil && !skew.warned {
			fmt.Fprintf(warn, "hive: "+format+"\n", a...)
		}
		skew.warned = true
	}
	what := fmt.Sprintf("the running daemon (pid %d) is another build (%s) than this hive (%s)", resp.PID, d, me)
	if resp.Activity == nil || len(resp.Args) == 0 {
		say("%s; it predates hive stop: stop it (kill %d) to run this build", what, resp.PID)
		return
	}
	if resp.Supervisor == "systemd" {
		// Replaced here, the unit would stop and this build's daemon run
		// outside it.
		say("%s; systemd runs it, so it keeps running: hive restart has systemd start the unit's binary again, keeping its jobs", what)
		return
	}
	// Running jobs are no reason to wait when a holder keeps them: the
	// new daemon adopts them.
	keep, rest := false, *resp.Activity
	if resp.Holder != nil {
		rest.Jobs = 0
		keep = !resp.Activity.Idle() && rest.Idle()
	}
	if !resp.Activity.Idle() && !keep {
		say("%s; it is busy (%s), so it keeps running until idle: hive restart replaces it now", what, resp.Activity)
		return
	}
	if _, err := stop(l, proto.Request{Cmd: proto.CmdStop, IfIdle: true, KeepJobs: keep}, 30*time.Second); err != nil {
		if errors.Is(err, ErrBusy) {
			say("%s; it became busy (%v), so it keeps running: hive restart replaces it now", what, err)
		} else {
			say("%s; could not stop it: %v", what, err)
		}
		return
	}
	if err := Start(l, exe, resp.Args, resp.Cwd, wait); err != nil {
		say("%s; stopped it, but this build's daemon did not start: %v", what, err)
		return
	}
	if keep {
		say("%s: it was idle but for its running jobs, so it was replaced by this build; the jobs keep running (the holder of the jobs keeps them)", what)
		return
	}
	say("%s: it was idle, so it was replaced by this build", what)
}
