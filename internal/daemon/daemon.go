// Package daemon is hive's composition root: it opens the store, starts the
// job engine, the inbox and the other engines (or connects to the holder
// of the jobs), puts them behind one service.Service, serves that on the
// state directory's unix socket (internal/sockapi) and optionally
// streamable HTTP (internal/httpfront), and stops it all in order.
package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"sync"
	"time"

	"github.com/hivetools/hive/internal/agent"
	"github.com/hivetools/hive/internal/build"
	"github.com/hivetools/hive/internal/client"
	"github.com/hivetools/hive/internal/handles"
	"github.com/hivetools/hive/internal/holder/wire"
	"github.com/hivetools/hive/internal/httpfront"
	"github.com/hivetools/hive/internal/inbox"
	"github.com/hivetools/hive/internal/job"
	"github.com/hivetools/hive/internal/limits"
	"github.com/hivetools/hive/internal/listen"
	"github.com/hivetools/hive/internal/mcpline"
	"github.com/hivetools/hive/internal/paths"
	"github.com/hivetools/hive/internal/policy"
	"github.com/hivetools/hive/internal/proc"
	"github.com/hivetools/hive/internal/proto"
	"github.com/hivetools/hive/internal/pty"
	"github.com/hivetools/hive/internal/service"
	"github.com/hivetools/hive/internal/sockapi"
	"github.com/hivetools/hive/internal/store"
	"github.com/hivetools/hive/internal/swarm"
)

// ErrRunning means another daemon serves the state directory.
var ErrRunning = errors.New("a hive daemon is already running")

// Config configures a daemon. Zero values mean the defaults.
type Config struct {
	// Policy is the command policy (service.Service.Policy); nil: no rules.
	Policy     *policy.Policy
	StateDir   string
	HTTPAddr   string // "" disables HTTP (internal/httpfront)
	TokenFile  string // bearer token for HTTP; "" means <state>/http-token, generated (unless HTTPNoAuth)
	MaxRunning int
	Grace      time.Duration
	FileCap    int64
	// Limits are the defaults and ceilings of the jobs' resource limits
	// (job.Options.Limits); the zero value limits nothing.
	Limits limits.Policy
	// HTTPNoAuth serves HTTP without a token; only with a loopback HTTPAddr.
	HTTPNoAuth bool
	// HTTP bounds (zero: the DefaultHTTP* values): connections and live MCP
	// sessions at once, how long an idle session lives, how long a request
	// body may take to arrive, and how long one write to a client may take.
	HTTPMaxConns     int
	HTTPMaxSessions  int
	HTTPSessionIdle  time.Duration
	HTTPReadTimeout  time.Duration
	HTTPWriteTimeout time.Duration
	// DashboardTakeoverLife is how long a dashboard's PTY take-over lasts
	// after it or its latest input. If zero, dashboard.DefaultTakeoverLife.
	DashboardTakeoverLife time.Duration
	// Retain is how long ended jobs and PTY sessions (records and output
	// files) are kept.
	// If zero, 7 days; negative keeps them forever.
	Retain time.Duration
	// HandleTTL and HandleCap configure terminal_exec output handles
	// (zero: 5 minutes, 64 MiB).
	HandleTTL time.Duration
	HandleCap int64
	Version   string
	// Build is the daemon's build, as `version` answers it (Version is
	// its Version). If zero, only Version is told.
	Build build.Info
	// Args are the arguments the daemon was started with (after the
	// program name), and Settings its settings with where each came
	// from: `version` tells them, so `hive restart` and `hive config` can.
	Args     []string
	Settings []proto.Setting
	// Supervisor names what restarts the daemon ("systemd"), if anything.
	Supervisor string
	Logger     *slog.Logger
	// ShutdownTimeout bounds how long Run waits for jobs to stop at the
	// end before SIGKILLing their groups. If zero, Grace + 5 s.
	ShutdownTimeout time.Duration
	// MaxLine bounds one inbound JSON-RPC line of an MCP session on the
	// socket or a bridge's stdio; a longer line is answered with an error
	// and skipped. If zero, DefaultMaxLine (16 MiB).
	MaxLine int
	// Name is the agent's name (get_agent_meta). If empty, the state
	// dir's base name.
	Name string
	// RemindMax caps the pending reminders. If zero, inbox.DefaultRemindMax (50).
	RemindMax int
	// RequestTimeout bounds the wait for a socket connection's first line
	// (a client idle longer gets an error answer) and the write of a
	// one-line answer. If zero, sockapi.DefaultRequestTimeout (10 s).
	RequestTimeout time.Duration
	// Ready, if set, is called once the socket listens.
	Ready func()
	// Shell is the argv prefix that runs a job's command line, for
	// tests; nil means [bash -c].
	Shell []string
	// Subreaper makes the daemon's process a child subreaper (Linux): a
	// process that leaves a job's tree is reparented to it, terminated
	// with its job and reaped (see proc.Reaper). Only for a process whose
	// every child is started through proc.Start, as `hive daemon`'s are;
	// if the kernel refuses, the daemon runs without and says so.
	Subreaper bool
	// Holder is the argv that starts the holder of the jobs (`hive
	// holder`), the process that keeps them running when the daemon ends
	// (see internal/holder); nil runs them as the daemon's children, and
	// they end with it.
	Holder []string
	// Swarm, if set, joins the agent to a swarm over NATS
	// (internal/swarm); its Name, Version and DashboardURL are filled in
	// from the daemon's. Nil: no NATS code runs.
	Swarm *swarm.Options
}

// jobHolder is the daemon's connection to the holder of its jobs
// (holder.Client).
type jobHolder interface {
	job.Holder
	pty.Holder
	Info() wire.Hello
	Close() error
	Quit() error
}

type daemon struct {
	cfg    Config
	layout paths.Layout
	log    *slog.Logger
	st     *store.Store
	inbox  *inbox.Inbox
	jobs   *job.Manager
	reaper *proc.Reaper // nil without Config.Subreaper
	// cgroups gives the daemon's own jobs a cgroup each (with
	// Config.Subreaper and no holder, where the machine allows).
	cgroups *proc.JobCgroups
	holder  jobHolder // nil without Config.Holder
	svc     *service.Service
	sock    *sockapi.Server  // the socket's server
	http    *httpfront.Front // nil without Config.HTTPAddr
	swarm   *swarm.Swarm     // nil without Config.Swarm
	extra   []func()         // closers of extra engines, run at shutdown
	// extraRan: the shutdown ran the closers; guarded by extraMu.
	extraRan bool
	extraMu  sync.Mutex

	wg      sync.WaitGroup // every goroutine Run starts
	started time.Time

	// stopMu guards stopReq: the first stop request, nil when the stop
	// came from Run's context.
	stopMu  sync.Mutex
	stopReq *stopRequest

	sumOnce sync.Once
	sumVal  string
}

// stopRequest is what a stop request asked for.
type stopRequest struct {
	grace time.Duration
	note  string
	keep  bool // leave the jobs to the holder (hive restart)
}

// lockWait bounds how long a lock held with no daemon answering is
// waited for.
const lockWait = 3 * time.Second

// takeLock takes the daemon lock. A lock held while no daemon answers on
// the socket is tried again for up to lockWait: right after a daemon was
// killed, a child it was starting may still hold the lock's file until it
// execs (the file is close-on-exec), and another daemon may be starting.
func takeLock(l paths.Layout) (func(), error) {
	deadline := time.Now().Add(lockWait)
	for {
		unlock, err := listen.Lock(l.Lock())
		if err == nil || !errors.Is(err, listen.ErrLocked) || time.Now().After(deadline) {
			return unlock, err
		}
		if resp, cerr := client.Call(l, proto.Request{Cmd: proto.CmdVersion}); cerr == nil {
			return nil, fmt.Errorf("daemon pid %d answers: %w", resp.PID, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Run serves until ctx is cancelled, then stops jobs, closes the store and
// removes the socket. It returns only after every goroutine it started has
// ended. Cancellation is the normal way to stop and returns nil.
func Run(ctx context.Context, cfg Config) error {
	l := paths.Layout{Dir: cfg.StateDir}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	// Nothing is made or opened in a dir another user could control.
	if err := l.Create(); err != nil {
		return err
	}
	// Dial first: a live daemon means "already running".
	if resp, err := client.Call(l, proto.Request{Cmd: proto.CmdVersion}); err == nil {
		return fmt.Errorf("%w for %s (pid %d)", ErrRunning, l.Dir, resp.PID)
	}
	lockRelease, err := takeLock(l)
	if errors.Is(err, paths.ErrInsecure) {
		return err
	}
	if err != nil {
		return fmt.Errorf("%w for %s: %v", ErrRunning, l.Dir, err)
	}
	unlock := sync.OnceFunc(lockRelease)
	defer unlock()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ln, err := listen.Unix(l.Socket())
	if err != nil {
		return err
	}
	d := &daemon{cfg: cfg, layout: l, log: cfg.Logger, started: time.Now()}
	if err := d.open(); err != nil {
		ln.Close()
		os.Remove(l.Socket())
		return err
	}
	d.sock = sockapi.New(sockapi.Options{Service: d.svc, Daemon: d, RequestTimeout: cfg.RequestTimeout, MaxLine: cfg.MaxLine, Logger: d.log})
	if cfg.HTTPAddr != "" {
		if d.http, err = httpfront.Listen(httpfront.Options{Addr: cfg.HTTPAddr, TokenFile: cfg.TokenFile, NoAuth: cfg.HTTPNoAuth,
			MaxConns: cfg.HTTPMaxConns, MaxSessions: cfg.HTTPMaxSessions, SessionIdle: cfg.HTTPSessionIdle,
			ReadTimeout: cfg.HTTPReadTimeout, WriteTimeout: cfg.HTTPWriteTimeout, TakeoverLife: cfg.DashboardTakeoverLife,
			Layout: l, Service: d.svc, Started: d.started, AddCloser: d.addCloser, Logger: d.log}); err != nil {
			ln.Close()
			os.Remove(l.Socket())
			d.close()
			d.st.Close()
			return err
		}
		if d.swarm != nil { // the port the front end got, when it was asked for port 0
			d.swarm.SetDashboardURL("http://" + d.http.Addr() + "/")
		}
		d.wg.Add(1)
		go func() {
			defer d.wg.Done()
			if err := d.http.Serve(); err != nil {
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
		if d.http != nil {
			d.http.Shutdown()
		}
	}()
	d.sock.Serve(ctx, ln) // until ctx ends or a stop request
	cancel()
	d.log.Info("hive daemon stopping")
	os.Remove(l.Socket())
	// Stop jobs first so their last loose ends are recorded and pushed,
	// then end the socket's sessions: each says why to its bridge.
	d.close()
	if d.swarm != nil {
		d.swarm.Close() // after the jobs' ends, so that their notices go
	}
	d.sock.Close()
	d.wg.Wait()
	d.st.Close()
	// Only now is the state dir free for another daemon: those who asked
	// for the stop hear of it.
	unlock()
	d.sock.AnswerStopped()
	return nil
}

// prune removes ended jobs and PTY sessions older than the retention, now
// and every hour, until ctx ends.
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
		if n, err := d.svc.PTY.Prune(ctx, time.Now().Add(-keep)); err != nil {
			d.log.Error("prune old pty sessions", "err", err)
		} else if n > 0 {
			d.log.Info("pruned old pty sessions", "count", n, "older_than", keep)
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// addCloser adds a closer to run at shutdown; once the shutdown ran them,
// a late one (a server made for a request that came meanwhile) runs at
// once.
func (d *daemon) addCloser(f func()) {
	d.extraMu.Lock()
	if !d.extraRan {
		d.extra = append(d.extra, f)
		d.extraMu.Unlock()
		return
	}
	d.extraMu.Unlock()
	f()
}

func (d *daemon) open() error {
	l := d.layout
	if err := l.MakeDirs(); err != nil {
		return err
	}
	st, err := store.Open(l.DB())
	if err != nil {
		return err
	}
	d.st = st
	if d.inbox, err = inbox.New(inbox.Options{Store: st, Layout: l, RemindMax: d.cfg.RemindMax, Logger: d.log}); err != nil {
		st.Close()
		return err
	}
	ag, err := agent.New(context.Background(), st, l, d.cfg.Name)
	if err != nil {
		d.inbox.Close()
		st.Close()
		return err
	}
	if d.cfg.Subreaper {
		// A daemon a job of another hive started (its own state dir)
		// is not that job's to end: it leaves the job's cgroup first, as
		// it carries none of the job's marks.
		if from, to, err := proc.LeaveJobCgroup(); err != nil {
			d.log.Warn("this daemon runs in a cgroup of another hive's job, and cannot leave it: it ends with that job", "cgroup", from, "err", err)
		} else if from != "" {
			d.log.Info("left the cgroup of another hive's job", "from", from, "to", to)
		}
		if d.reaper, err = proc.NewReaper(); err != nil {
			d.log.Warn("running without a child subreaper: processes that leave a job's group are found by their marks only, and not reaped", "err", err)
		}
		if d.cfg.Holder == nil { // else the holder makes the jobs' cgroups
			if d.cgroups, err = proc.OpenJobCgroups(l.Dir); err != nil {
				d.log.Info("jobs get no cgroup of their own; escapes are found by their marks", "why", err)
			} else {
				d.log.Info("each job runs in a cgroup of its own", "cgroup", d.cgroups.Dir())
			}
		}
	}
	var holder job.Holder
	if d.cfg.Holder != nil {
		h, err := openHolder(l, d.cfg.Holder, d.cfg.Build.String(), d.log)
		if err != nil {
			d.reaper.Close()
			d.inbox.Close()
			st.Close()
			return err
		}
		d.holder, holder = h, h
	}
	// A holder that died with its daemon left a note (its guard's): the
	// jobs it held read interrupted by its death.
	lostReason, forgetLost := lostHolder(l)
	events := &service.Events{}
	d.jobs, err = job.New(job.Options{Holder: holder, LostReason: lostReason,
		Dir: l.Tasks(), Store: st, MaxRunning: d.cfg.MaxRunning, Grace: d.cfg.Grace,
		FileCap: d.cfg.FileCap, Logger: d.log, Owner: l.Dir, Shell: d.cfg.Shell, Reaper: d.reaper,
		Cgroups: d.cgroups, Limits: d.cfg.Limits, Journal: l.JobJournal(),
		// A detached job's loose end is written with its record, in
		// one transaction, and published once committed.
		Todo: func(in job.Info) store.Todo {
			return service.JobTodo(in)
		},
		OnRecord: func(in job.Info) { events.Emit(service.JobEvent(in)) },
		OnCommit: func(changed []store.Todo, of []job.Info) {
			for i, t := range changed {
				// A job's start (pending, running) is no news to wake a
				// harness for: the agent started it; its end is.
				d.inbox.Published(t, of[i].State.Terminal())
			}
		},
	})
	if err != nil {
		if d.holder != nil {
			d.holder.Close()
		}
		d.cgroups.Close()
		d.reaper.Close()
		d.inbox.Close()
		st.Close()
		return err
	}
	// Sessions are marked and recorded like jobs; those a dead daemon
	// left end now, before any is opened.
	po := pty.Options{Dir: l.PTY(), Owner: l.Dir, Store: st, Logger: d.log, Limits: d.cfg.Limits, NofileSoft: job.ChildNofile}
	if d.holder != nil {
		po.Holder = d.holder
	}
	ptys := pty.NewManager(po)
	if n, err := ptys.Recover(context.Background()); err != nil {
		d.log.Error("could not record the pty sessions interrupted by the last daemon's end", "err", err)
	} else if n > 0 {
		d.log.Info("pty sessions interrupted by the last daemon's end", "count", n)
	}
	forgetLost()
	d.extra = append(d.extra, func() {
		if d.keepJobs() {
			ptys.Release() // the holder keeps them for the next daemon
		} else {
			ptys.Close()
		}
	})
	var act *service.Activity
	if d.cfg.HTTPAddr != "" {
		act = &service.Activity{} // the dashboard's feed of tool calls
	}
	svc := service.Service{Jobs: d.jobs, Inbox: d.inbox, Agent: ag, Layout: l, Logger: d.log,
		Version: d.cfg.Version, PTY: ptys, Activity: act, Policy: d.cfg.Policy, Events: events,
		Handles: handles.New(&handles.Options{TTL: d.cfg.HandleTTL, Cap: d.cfg.HandleCap})}
	if d.cfg.Swarm != nil {
		o := *d.cfg.Swarm
		o.Name, o.Version, o.Logger = ag.State().Name, d.cfg.Version, d.log
		if d.cfg.HTTPAddr != "" {
			o.DashboardURL = "http://" + d.cfg.HTTPAddr + "/"
		}
		if d.swarm, err = swarm.New(o); err == nil {
			svc.Swarm = d.swarm
			d.extra = append(d.extra, d.swarm.StopWake) // before the inbox closes
		}
	}
	d.svc = service.New(svc)
	if d.swarm != nil {
		err = d.swarm.Start(d.svc)
	}
	if err != nil {
		d.swarm = nil
		d.close()
		st.Close()
		return err
	}
	return nil
}

// close stops the engines (not the store).
func (d *daemon) close() {
	g := d.cfg.Grace
	if g == 0 {
		g = 10 * time.Second
	}
	note := "the daemon shut down"
	d.stopMu.Lock()
	r := d.stopReq
	d.stopMu.Unlock()
	if r != nil {
		note = r.note
		if r.grace > 0 {
			g = r.grace
		}
	}
	timeout := d.cfg.ShutdownTimeout
	if timeout == 0 || r != nil {
		timeout = g + 5*time.Second
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	d.extraMu.Lock()
	closers := d.extra
	d.extra, d.extraRan = nil, true
	d.extraMu.Unlock()
	for _, c := range closers {
		c()
	}
	switch {
	case d.keepJobs():
		// hive restart: the holder keeps the jobs for the next daemon.
		d.jobs.Release(note)
		d.holder.Close()
	case d.holder != nil:
		d.jobs.Shutdown(ctx, g, note)
		if err := d.holder.Quit(); err != nil {
			d.log.Warn("the holder of the jobs did not quit", "err", err)
		}
	default:
		d.jobs.Shutdown(ctx, g, note)
	}
	d.cgroups.Close()
	d.reaper.Close() // after every job and session has ended
	d.inbox.Close()
}

// escapeTracking says how processes that leave a job's group are found
// (proc.Track*).
func (d *daemon) escapeTracking() string {
	if d.holder != nil {
		if t := d.holder.Info().Tracking; t != "" {
			return t
		}
	}
	t := proc.TrackGroup
	switch {
	case runtime.GOOS == "windows":
		t = proc.TrackJobObject
	case d.reaper != nil:
		t = proc.TrackSubreaper
	case proc.Supported:
		t = proc.TrackMarks
	}
	if d.cgroups != nil {
		return proc.WithCgroups(t)
	}
	return t
}

// Defaults of the HTTP front end (the Config zero values).
const (
	DefaultHTTPMaxConns     = httpfront.DefaultMaxConns
	DefaultHTTPMaxSessions  = httpfront.DefaultMaxSessions
	DefaultHTTPSessionIdle  = httpfront.DefaultSessionIdle
	DefaultHTTPReadTimeout  = httpfront.DefaultReadTimeout
	DefaultHTTPWriteTimeout = httpfront.DefaultWriteTimeout
)

// DefaultMaxLine bounds one inbound JSON-RPC line of an MCP session unless
// Config.MaxLine says otherwise (the go-sdk's default, 16 MiB).
const DefaultMaxLine = mcpline.DefaultMaxLine

// holderProto is the newest protocol this daemon speaks with its holder.
const holderProto = wire.Proto

// keepJobs tells whether the daemon's end leaves its jobs and sessions to
// the holder (hive restart).
func (d *daemon) keepJobs() bool {
	d.stopMu.Lock()
	defer d.stopMu.Unlock()
	return d.holder != nil && d.stopReq != nil && d.stopReq.keep
}
