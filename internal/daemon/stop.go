package daemon

import (
	"errors"
	"net"
	"os"
	"time"

	"github.com/hivetools/hive/internal/build"
	"github.com/hivetools/hive/internal/errdefs"
	"github.com/hivetools/hive/internal/proto"
)

// stopNote is what the jobs a stop request ends carry as their error, and
// so their loose ends.
const stopNote = "the daemon was stopped by hive stop"

// serveStop answers a stop request: an error if it is malformed, or if it
// asks for an idle daemon and this one is busy; else OK at once, and
// cancels Run's context. It keeps the connection: Run answers it again
// (one more OK line) once the daemon has stopped.
func (d *daemon) serveStop(c net.Conn, req proto.Request) (kept bool) {
	g := req.GraceSecs
	if g < 0 || g > 1e6 || g != g {
		writeResp(c, proto.Fail(errdefs.Newf(errdefs.ErrInvalid, "grace_secs %v: must be 0..1e6 (0: the daemon's --grace)", g)))
		return false
	}
	if req.IfIdle {
		a := d.activity()
		if req.KeepJobs && d.holder != nil {
			a.Jobs = d.jobs.Pending() // running jobs stay with the holder: no reason to wait
		}
		if !a.Idle() {
			resp := proto.Fail(errdefs.New(errdefs.ErrConflict, "the daemon is busy: "+a.String()))
			resp.Activity = &a
			writeResp(c, resp)
			return false
		}
	}
	d.stopMu.Lock()
	if d.stopReq == nil {
		d.stopReq = &stopRequest{grace: time.Duration(g * float64(time.Second)), note: stopNote, keep: req.KeepJobs}
	}
	d.stopMu.Unlock()
	if err := writeResp(c, proto.Response{OK: true, PID: os.Getpid()}); err != nil {
		return false
	}
	d.stopMu.Lock()
	d.stopWaiters = append(d.stopWaiters, c)
	d.stopMu.Unlock()
	d.log.Info("stop requested", "grace", time.Duration(g*float64(time.Second)))
	d.cancel()
	return true
}

// answerStopped tells every stop request's connection that the daemon has
// stopped, and closes it.
func (d *daemon) answerStopped() {
	d.stopMu.Lock()
	ws := d.stopWaiters
	d.stopWaiters = nil
	d.stopMu.Unlock()
	for _, c := range ws {
		c.SetWriteDeadline(time.Now().Add(time.Second))
		writeResp(c, proto.Response{OK: true, PID: os.Getpid()})
		c.Close()
	}
}

// activity is what the daemon is busy with now.
func (d *daemon) activity() proto.Activity {
	a := proto.Activity{Jobs: d.jobs.Running() + d.jobs.Pending(), MCPSessions: int(d.mcpSessions.Load()),
		InboxWaiters: int(d.waiters.Load())}
	if d.svc.PTY != nil {
		for _, s := range d.svc.PTY.List() {
			if s.Running {
				a.PTYSessions++
			}
		}
	}
	if d.http != nil {
		a.HTTPSessions = d.http.Sessions()
	}
	return a
}

// errNoHTTP: the daemon serves no HTTP, so no dashboard.
var errNoHTTP = errors.New("this daemon serves no HTTP, so no dashboard: start it with `hive daemon --http 127.0.0.1:PORT`")

// dashboardURL is a one-time login URL of the dashboard.
func (d *daemon) dashboardURL() (string, error) {
	if d.http == nil {
		return "", errNoHTTP
	}
	return d.http.LoginURL(), nil
}

// sum is the digest of the daemon's executable, computed at the first
// call ("" if it cannot be read).
func (d *daemon) sum() string {
	d.sumOnce.Do(func() {
		b, err := d.cfg.Build.WithSum(build.SelfExe())
		if err != nil {
			d.log.Warn("digest of the daemon's executable", "err", err)
		}
		d.sumVal = b.Sum
	})
	return d.sumVal
}
