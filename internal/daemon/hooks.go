package daemon

import (
	"errors"
	"os"
	"runtime"
	"slices"

	"github.com/hivetools/hive/internal/build"
	"github.com/hivetools/hive/internal/proc"
	"github.com/hivetools/hive/internal/proto"
	"github.com/hivetools/hive/internal/sockapi"
)

// The daemon answers what the socket server asks about it
// (sockapi.Daemon).
var _ sockapi.Daemon = (*daemon)(nil)

// Version answers a version request.
func (d *daemon) Version(wantSum bool) proto.Response {
	resp := proto.Response{OK: true, Version: d.cfg.Version, PID: os.Getpid(), EscapeTracking: d.escapeTracking(),
		Args: d.cfg.Args, Settings: d.cfg.Settings}
	if d.cfg.Build != (build.Info{}) {
		b := d.cfg.Build
		if wantSum {
			b.Sum = d.sum()
		}
		resp.Build = &b
	}
	if d.holder != nil {
		h := d.holder.Info()
		resp.Holder = &proto.HolderInfo{Pid: h.Pid, Build: h.Build, Proto: min(h.Proto, holderProto), Cgroups: h.Cgroups}
		if k, ok := d.holder.(interface{ Keeps() (bool, string) }); ok {
			resp.Holder.KeepsJobs, _ = k.Keeps()
		}
	}
	resp.Exe, _ = os.Executable()
	resp.Cwd, _ = os.Getwd()
	a := d.activity()
	resp.Activity = &a
	resp.Supervisor = d.cfg.Supervisor
	if d.http != nil {
		resp.HTTPAddr, resp.HTTPAuth, resp.HTTPTokenFile = d.http.Addr(), d.http.Auth(), d.http.TokenPath()
	}
	return resp
}

// Stats reads the daemon's own figures.
func (d *daemon) Stats() *proto.Stats {
	d.jobs.MakeAhead() // counted from the start with them (reliability row 12)
	st := &proto.Stats{Goroutines: runtime.NumGoroutine(), JobsRunning: d.jobs.Running(), InboxWaiters: d.sock.InboxWaiters()}
	starts := d.jobs.Starts()
	st.StartsOwn, st.StartsHolder, st.StartsNoSpare = starts.Own, starts.Holder, starts.NoSpare
	if u, ok := proc.ReadUsage(os.Getpid()); ok {
		st.FDs, st.Threads, st.RSS, st.PeakRSS = u.FDs, u.Threads, u.RSS, u.PeakRSS
	}
	// The holder of the jobs is no job: its children (the jobs) count
	// in its place, wherever it runs; its guard is no job either.
	holder := 0
	if d.holder != nil {
		holder = d.holder.Info().Pid
	}
	children := proc.Children(os.Getpid())
	if holder > 0 {
		children = slices.DeleteFunc(children, func(c proc.Stat) bool { return c.Pid == holder })
		children = append(children, slices.DeleteFunc(proc.Children(holder), func(c proc.Stat) bool { return isGuard(c.Pid) })...)
	}
	for _, c := range children {
		st.Children++
		if !c.Alive() {
			st.Zombies++
		}
	}
	if d.svc.PTY != nil {
		st.PTYSessions = len(d.svc.PTY.List())
	}
	if d.http != nil {
		st.HTTPConns, st.HTTPSessions = d.http.Conns(), d.http.Sessions()
	}
	return st
}

// stopNote is what the jobs a stop request ends carry as their error, and
// so their loose ends.
const stopNote = "the daemon was stopped by hive stop"

// Stop takes a stop request: refused (a *sockapi.BusyError) if it asks
// for an idle daemon and this one is busy; else recorded for the
// shutdown (the first one counts), which begins once the socket server
// has answered it and returned.
func (d *daemon) Stop(r sockapi.StopRequest) error {
	if r.IfIdle {
		a := d.activity()
		if r.KeepJobs && d.holder != nil {
			a.Jobs = d.jobs.Pending() // running jobs stay with the holder: no reason to wait
		}
		if !a.Idle() {
			return &sockapi.BusyError{Activity: a}
		}
	}
	d.stopMu.Lock()
	if d.stopReq == nil {
		d.stopReq = &stopRequest{grace: r.Grace, note: stopNote, keep: r.KeepJobs}
	}
	d.stopMu.Unlock()
	return nil
}

// activity is what the daemon is busy with now.
func (d *daemon) activity() proto.Activity {
	a := proto.Activity{Jobs: d.jobs.Running() + d.jobs.Pending(), MCPSessions: d.sock.MCPSessions(),
		InboxWaiters: d.sock.InboxWaiters()}
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

// DashboardURL is a one-time login URL of the dashboard.
func (d *daemon) DashboardURL() (string, error) {
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
