package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/hivetools/hive/internal/client"
	"github.com/hivetools/hive/internal/ident"
	"github.com/hivetools/hive/internal/limits"
	"github.com/hivetools/hive/internal/proto"
)

func init() {
	register(command{name: "run", usage: "run [--name N] [--timeout S] [--memory SIZE] [--pids N] [--cpus N] [--nofile N] [--notify] [--json] -- CMD...   start a job, print its id (--notify: also a loose end for the agent)", run: runRun})
}

func runRun(ctx context.Context, e Env, args []string) error {
	fs, dir := newFlags("run", e)
	name := fs.String("name", "", "job name ("+ident.NameRule+"): addresses the newest job of that name; reusable once it ended")
	timeout := fs.Float64("timeout", 0, "stop the job after this many seconds (timed_out)")
	notify := fs.Bool("notify", false, "raise a loose end for the agent when the job runs and ends (else it only lists it)")
	asJSON := fs.Bool("json", false, "JSON output")
	memory := fs.String("memory", "", "the job's memory limit, e.g. 512MiB or 2GiB (default: the daemon's, hive.toml [limits])")
	var lim limits.Limits
	fs.Int64Var(&lim.Pids, "pids", 0, "the job's limit of processes and threads at once")
	fs.Float64Var(&lim.CPUs, "cpus", 0, "the job's CPU limit in cores (0.5 is half a core)")
	fs.Int64Var(&lim.Nofile, "nofile", 0, "the job's limit of open files per process")
	if err := parse(fs, args); err != nil {
		return err
	}
	if *memory != "" {
		mb, err := limits.ParseMemory(*memory)
		if err != nil {
			return fmt.Errorf("%w: --memory: %v", ErrUsage, err)
		}
		lim.MemoryMB = mb
	}
	if err := lim.Check(); err != nil {
		return fmt.Errorf("%w: %v", ErrUsage, err)
	}
	if fs.NArg() == 0 {
		return fmt.Errorf("%w: hive run [--name N] [--timeout S] -- CMD...", ErrUsage)
	}
	if *timeout < 0 {
		return fmt.Errorf("%w: --timeout %v: must be >= 0", ErrUsage, *timeout)
	}
	l, err := layout(*dir)
	if err != nil {
		return err
	}
	if err := client.Ensure(l, e.Exe, 2*time.Second); err != nil {
		return err
	}
	cwd, _ := os.Getwd()
	resp, err := client.Call(l, proto.Request{Cmd: proto.CmdRun, Argv: fs.Args(), Name: *name,
		TimeoutSecs: *timeout, Cwd: cwd, Env: os.Environ(), Notify: *notify, Limits: limitsArg(lim)})
	if err != nil {
		return err
	}
	if *asJSON {
		return json.NewEncoder(e.Stdout).Encode(resp.Job)
	}
	fmt.Fprintln(e.Stdout, resp.Job.ID)
	return nil
}

// limitsArg is l as a request carries it: nil for none.
func limitsArg(l limits.Limits) *limits.Limits {
	if l.IsZero() {
		return nil
	}
	return &l
}
