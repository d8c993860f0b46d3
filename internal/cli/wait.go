package cli

import (
	"context"
	"fmt"

	"github.com/hivetools/hive/internal/client"
	"github.com/hivetools/hive/internal/proto"
	"github.com/hivetools/hive/internal/termsafe"
)

const waitUsage = "wait ID...   wait for jobs to end; print each one's exit status; exit with the first failing one's (in argument order)"

func init() {
	register(command{name: "wait", usage: waitUsage, run: runWait})
}

// runWait waits for every job named, in order, printing each one's exit
// status (jobExitCode) as it is known. The exit status is that of the
// first job, in argument order, whose status is not 0; 0 when all are.
// A job that does not exist is an error, after the others were waited
// for.
func runWait(ctx context.Context, e Env, args []string) error {
	fs, dir := newFlags("wait", e)
	asJSON := fs.Bool("json", false, "JSON output: one job record per line")
	if err := parse(fs, interspersed(fs, args)); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return fmt.Errorf("%w: hive wait ID...", ErrUsage)
	}
	l, err := layout(*dir)
	if err != nil {
		return err
	}
	first := 0
	var missing error
	for _, id := range fs.Args() {
		resp, err := client.CallWait(ctx, l, proto.Request{Cmd: proto.CmdWait, ID: id})
		if err != nil {
			if ctx.Err() != nil {
				return err
			}
			fmt.Fprintf(e.Stderr, "hive: wait %s: %s\n", termsafe.Line(id), termsafe.Text(err.Error()))
			if missing == nil {
				missing = fmt.Errorf("wait %s: %w", id, err)
			}
			continue
		}
		code := jobExitCode(*resp.Job)
		if *asJSON {
			jsonOut(e, resp.Job)
		} else {
			fmt.Fprintln(e.Stdout, code)
		}
		if first == 0 && code != 0 {
			first = code
		}
	}
	if first != 0 {
		return &ExitError{Code: first}
	}
	return missing
}
