package cli

import (
	"context"
	"fmt"

	"github.com/hivetools/hive/internal/client"
	"github.com/hivetools/hive/internal/proto"
	"github.com/hivetools/hive/internal/termsafe"
)

func init() {
	register(command{name: "kill", usage: "kill ID... [--force] [--json]   stop jobs (SIGINT to each one's group; --force: SIGKILL)", run: runKill})
}

func runKill(ctx context.Context, e Env, args []string) error {
	fs, dir := newFlags("kill", e)
	force := fs.Bool("force", false, "SIGKILL at once")
	asJSON := fs.Bool("json", false, "JSON output, one line per job")
	if err := parse(fs, interspersed(fs, args)); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return fmt.Errorf("%w: hive kill ID... [--force]", ErrUsage)
	}
	l, err := layout(*dir)
	if err != nil {
		return err
	}
	failed := 0
	for _, id := range fs.Args() {
		resp, err := client.Call(l, proto.Request{Cmd: proto.CmdKill, ID: id, Force: *force})
		if err != nil {
			fmt.Fprintf(e.Stderr, "hive: %s\n", termsafe.Text(err.Error())) // the error names the job
			failed++
			continue
		}
		if *asJSON {
			jsonOut(e, map[string]any{"job": resp.Job, "already_ended": resp.AlreadyEnded})
			continue
		}
		switch {
		case resp.AlreadyEnded:
			fmt.Fprintf(e.Stdout, "job %s had already ended (%s)\n", resp.Job.ID, resp.Job.State)
		case resp.Job.State == "killed":
			fmt.Fprintf(e.Stdout, "job %s cancelled before it started\n", resp.Job.ID)
		case *force:
			fmt.Fprintf(e.Stdout, "SIGKILL sent to job %s\n", resp.Job.ID)
		default:
			fmt.Fprintf(e.Stdout, "SIGINT sent to job %s (SIGKILL follows after the grace period)\n", resp.Job.ID)
		}
	}
	if failed > 0 {
		return &ExitError{Code: 1} // each failure is printed above, once
	}
	return nil
}
