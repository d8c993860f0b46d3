package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/hivetools/hive/internal/client"
	"github.com/hivetools/hive/internal/job"
	"github.com/hivetools/hive/internal/paths"
	"github.com/hivetools/hive/internal/proto"
)

func init() {
	register(command{name: "stop", usage: "stop [--grace D] [--json]   stop the daemon: running jobs get SIGINT, SIGKILL after D, and end as interrupted", run: runStop})
	register(command{name: "restart", usage: "restart [--grace D] [--json]   replace the daemon by this build with the daemon's flags (and hive.toml, read anew); running jobs keep running", run: runRestart})
}

// stopWait bounds the wait for a daemon to finish stopping: the jobs'
// grace (given, else the daemon's own --grace as it tells it), the
// daemon's margin, and some.
func stopWait(grace time.Duration, daemon proto.Response) time.Duration {
	if grace <= 0 {
		grace = 10 * time.Second
		for _, s := range daemon.Settings {
			if d, err := time.ParseDuration(s.Value); s.Name == "grace" && err == nil {
				grace = d
			}
		}
	}
	return grace + time.Minute
}

// stopFlags parses the flags stop and restart share.
func stopFlags(name string, e Env, args []string) (l paths.Layout, grace *time.Duration, asJSON *bool, err error) {
	fs, dir := newFlags(name, e)
	grace = fs.Duration("grace", 0, "time between SIGINT and SIGKILL for running jobs (default: the daemon's --grace)")
	asJSON = fs.Bool("json", false, "JSON output")
	if err := parse(fs, args); err != nil {
		return l, nil, nil, err
	}
	if *grace < 0 {
		return l, nil, nil, fmt.Errorf("%w: --grace %v: must be >= 0", ErrUsage, *grace)
	}
	if fs.NArg() > 0 {
		return l, nil, nil, fmt.Errorf("%w: %s takes no arguments, got %q", ErrUsage, fs.Name(), fs.Args())
	}
	l, err = layout(*dir)
	return l, grace, asJSON, err
}

func runStop(ctx context.Context, e Env, args []string) error {
	l, grace, asJSON, err := stopFlags("stop", e, args)
	if err != nil {
		return err
	}
	before, err := client.Call(l, proto.Request{Cmd: proto.CmdVersion})
	if errors.Is(err, client.ErrNoDaemon) {
		if *asJSON {
			return jsonOut(e, map[string]any{"stopped": false, "running": false})
		}
		fmt.Fprintln(e.Stdout, "no hive daemon was running")
		return nil
	}
	if err != nil {
		return err
	}
	pid, err := client.Stop(l, *grace, false, stopWait(*grace, before))
	if err != nil {
		return err
	}
	jobs, shells := 0, 0
	if before.Activity != nil {
		jobs, shells = before.Activity.Jobs, before.Activity.PTYSessions
	}
	if *asJSON {
		return jsonOut(e, map[string]any{"stopped": true, "pid": pid, "jobs_stopped": jobs, "shells_stopped": shells})
	}
	fmt.Fprintf(e.Stdout, "stopped the daemon (pid %d); %d job(s) were stopped, %d PTY shell(s) ended\n", pid, jobs, shells)
	if before.Supervisor == "systemd" {
		fmt.Fprintln(e.Stdout, "it runs as a systemd service: systemctl --user start hive starts it again")
	}
	return nil
}

func runRestart(ctx context.Context, e Env, args []string) error {
	l, grace, asJSON, err := stopFlags("restart", e, args)
	if err != nil {
		return err
	}
	if owner := os.Getenv(job.EnvJobOwner); owner != "" && filepath.Clean(owner) == filepath.Clean(l.Dir) {
		// The stop ends this process's job, and this process with it,
		// before it could start the new daemon.
		return fmt.Errorf("hive restart runs inside a job of this daemon, which its stop would end before the new daemon starts: run it outside, or run hive stop (the next hive command starts a daemon)")
	}
	old, err := client.Call(l, proto.Request{Cmd: proto.CmdVersion})
	if err == nil && len(old.Args) > 0 {
		// The daemon stays unless its successor would start: a typo in
		// hive.toml must not leave none.
		if err := checkDaemonArgs(old.Args, old.Cwd); err != nil {
			return fmt.Errorf("the daemon (pid %d) keeps running: the new one would refuse to start: %s", old.PID,
				strings.TrimPrefix(err.Error(), ErrUsage.Error()+": ")) // exit 1: the command line was right
		}
	}
	var oldPID int
	switch {
	case errors.Is(err, client.ErrNoDaemon):
		if err := client.Start(l, e.Exe, []string{"daemon", "--state-dir", l.Dir}, "", 10*time.Second); err != nil {
			return err
		}
	case err != nil:
		return err
	case old.Supervisor == "systemd" && unitKeepsJobs():
		// The daemon goes keeping its jobs; systemd starts its unit again
		// (with the unit's binary), whose daemon adopts them.
		if oldPID, err = client.StopKeepingJobs(l, *grace, stopWait(*grace, old)); err != nil {
			return err
		}
		// Until systemd has reaped the old daemon its unit is active, and
		// a start would be a no-op the old daemon's exit then undoes.
		for deadline := time.Now().Add(10 * time.Second); !reaped(oldPID) && time.Now().Before(deadline); {
			time.Sleep(10 * time.Millisecond)
		}
		if out, err := exec.Command(systemctl(), "--user", "start", unitName).CombinedOutput(); err != nil {
			return fmt.Errorf("the daemon (pid %d) stopped, its jobs kept, but systemctl --user start %s failed: %v: %s", oldPID, unitName, err, out)
		}
		if err := awaitDaemon(l, oldPID, "systemd", 10*time.Second); err != nil {
			return fmt.Errorf("the daemon (pid %d) stopped, its jobs kept, and systemctl --user start %s ran: %w", oldPID, unitName, err)
		}
	case old.Supervisor == "systemd":
		// A unit written before the holder (KillMode=mixed) ends what its
		// daemon started with it: systemd restarts the unit, jobs and all.
		if out, err := exec.Command(systemctl(), "--user", "restart", unitName).CombinedOutput(); err != nil {
			return fmt.Errorf("systemctl --user restart %s: %v: %s", unitName, err, out)
		}
		oldPID = old.PID
		fmt.Fprintf(e.Stderr, "the unit %s stops the jobs with its daemon (its KillMode is not process): hive service install writes one that keeps them across hive restart\n", unitName)
	case len(old.Args) == 0:
		return fmt.Errorf("the daemon (pid %d) is an older build that cannot be restarted: stop it (kill %d), then any hive command starts this build", old.PID, old.PID)
	default:
		if oldPID, err = client.StopKeepingJobs(l, *grace, stopWait(*grace, old)); err != nil {
			return err
		}
		if err := client.Start(l, e.Exe, old.Args, old.Cwd, 10*time.Second); err != nil {
			return fmt.Errorf("the daemon (pid %d) stopped, but the new one did not start: %w", oldPID, err)
		}
	}
	now, err := client.Call(l, proto.Request{Cmd: proto.CmdVersion})
	if err != nil {
		return fmt.Errorf("restarted, but the new daemon does not answer: %w", err)
	}
	if *asJSON {
		return jsonOut(e, map[string]any{"old_pid": oldPID, "pid": now.PID, "build": now.Build})
	}
	if oldPID == 0 {
		fmt.Fprintf(e.Stdout, "no daemon was running; started one (pid %d)\n", now.PID)
		return nil
	}
	fmt.Fprintf(e.Stdout, "restarted the daemon: pid %d stopped, pid %d runs hive %s\n", oldPID, now.PID, buildOf(now))
	return nil
}

// awaitDaemon waits until a daemon other than pid, run by supervisor,
// answers on l's socket (not one that a hive command started meanwhile).
func awaitDaemon(l paths.Layout, pid int, supervisor string, d time.Duration) error {
	deadline := time.Now().Add(d)
	for {
		r, err := client.Call(l, proto.Request{Cmd: proto.CmdVersion})
		if err == nil && r.PID != pid && r.Supervisor == supervisor {
			return nil
		}
		if err == nil && r.PID != pid {
			err = fmt.Errorf("a daemon (pid %d) not run by %s answers instead", r.PID, supervisor)
		}
		if time.Now().After(deadline) {
			if err == nil {
				err = fmt.Errorf("the old daemon (pid %d) still answers", pid)
			}
			return fmt.Errorf("no new daemon answers within %v: %w", d, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func buildOf(r proto.Response) string {
	if r.Build != nil {
		return r.Build.String()
	}
	return r.Version
}
