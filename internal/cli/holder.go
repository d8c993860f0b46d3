package cli

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/hivetools/hive/internal/build"
	"github.com/hivetools/hive/internal/job"
	"github.com/hivetools/hive/internal/proc"
)

func init() {
	register(command{name: "holder", usage: "holder   the holder of the jobs, started by the daemon (hive daemon --hold-jobs): it keeps the jobs running while no daemon does", run: runHolder})
	register(command{name: "holder-guard", usage: "holder-guard --instance PID-START [--cgroups DIR]   started by the holder: ends what is left of its jobs once it is gone", run: runHolderGuard, hidden: true})
}

// slackTimers gives the daemon or the holder its timer slack
// (proc.SlackTimers: it may execute itself again, before it has opened
// or started anything); without it, it runs as it is.
func slackTimers(e Env, what string) {
	if err := proc.SlackTimers(); err != nil {
		fmt.Fprintf(e.Stderr, "hive %s: no timer slack of its own (%v): its timers keep the one it was given\n", what, err)
	}
}

// runHolderGuard is the holder's guard (holder.Guard): it waits for the
// holder's end on fd 3, ends what is left of its jobs, and exits.
func runHolderGuard(ctx context.Context, e Env, args []string) error {
	fs, dir := newFlags("holder-guard", e)
	instance := fs.String("instance", "", "the holder's instance, PID-START (required)")
	cgroups := fs.String("cgroups", "", "the holder's generation of job cgroups")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 || *instance == "" {
		return fmt.Errorf("%w: hive holder-guard takes --instance PID-START and no arguments, got %q", ErrUsage, args)
	}
	l, err := layout(*dir)
	if err != nil {
		return err
	}
	// Before this process opens anything that could take fd 3.
	pipe, err := holderPipe()
	if err != nil {
		return err
	}
	defer pipe.Close()
	// Caught and dropped, as the holder does: no terminal, no daemon.
	defer dropSignals(syscall.SIGHUP, syscall.SIGINT, syscall.SIGPIPE)()
	log, closeLog := newAsyncLog(e.Stderr, nil)
	defer closeLog()
	return guardHolder(pipe, l, *instance, *cgroups, log.With("guard", true))
}

// holderPipe is fd 3, which the holder makes the read end of its pipe:
// anything else (a guard started by hand) is refused.
func holderPipe() (*os.File, error) {
	f := os.NewFile(3, "the holder's pipe")
	if fi, err := f.Stat(); err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
		return nil, fmt.Errorf("%w: hive holder-guard is started by the holder, with its pipe as fd 3: fd 3 is not a pipe", ErrUsage)
	}
	return f, nil
}

func runHolder(ctx context.Context, e Env, args []string) error {
	fs, dir := newFlags("holder", e)
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: hive holder takes no arguments, got %q", ErrUsage, fs.Args())
	}
	slackTimers(e, "holder")
	l, err := layout(*dir)
	if err != nil {
		return err
	}
	if err := l.Check(); err != nil {
		return err
	}
	// No terminal, no daemon: hangups and a closed log pipe are no
	// reason to drop the jobs. SIGTERM stops them, then the holder.
	// Caught, not ignored: an ignored signal would stay ignored in every
	// job (exec keeps SIG_IGN), and SIGINT is how a job is stopped.
	defer dropSignals(syscall.SIGHUP, syscall.SIGINT, syscall.SIGPIPE)()
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM)
	defer stop()
	tuneGC(holderGC)
	tuneProcs()
	log, closeLog := newAsyncLog(e.Stderr, nil)
	defer closeLog()
	log = log.With("holder", true)
	tracking := proc.TrackMarks
	if !proc.Supported {
		tracking = proc.TrackGroup
	}
	r, err := proc.NewReaper()
	if err != nil {
		log.Warn("the holder runs without a child subreaper: processes that leave a job's group are found by their marks only", "err", err)
	} else {
		tracking = proc.TrackSubreaper
		defer r.Close()
	}
	b := build.Read(Version).WithFile(build.SelfExe())
	return serveHolder(ctx, l, r, tracking, b.String(), log)
}

// dropSignals catches sigs and drops them until the returned func is
// called; that func stops catching them (their default action applies
// again) and returns once the goroutine that drops them has ended.
func dropSignals(sigs ...os.Signal) (stop func()) {
	sink := make(chan os.Signal, 1)
	signal.Notify(sink, sigs...)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range sink {
		}
	}()
	return func() {
		signal.Stop(sink) // no send on sink once Stop returns
		close(sink)
		<-done
	}
}

// tuneProcs gives a process that holds jobs (the holder, or the daemon)
// a quarter of the Go runtime's processors (at least one) unless
// GOMAXPROCS says otherwise (proc.TuneProcs), and all of them while two or
// more output streams pour (job.BulkPumps) or a search runs (proc.UseAllProcs).
// Its work is system calls (fork, reads and writes of pipes, sockets and
// files, waits), each job's a few microseconds of Go between them; an
// idle processor only wakes and spins after each of them, taking a CPU
// from the job and the other process. On two CPUs one processor takes
// 35-60 us off every job's round trip in each of the two processes, and
// copies one stream as fast; several streams at once need the others
// (docs/architecture.md, "Processors of the holder").
func tuneProcs() {
	proc.TuneProcs(func() bool { return job.BulkPumps() > 1 })
	job.OnBulkOutput(proc.ManyChanged)
}
