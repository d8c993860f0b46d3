package cli

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/hivetools/hive/internal/client"
	"github.com/hivetools/hive/internal/proto"
	"github.com/hivetools/hive/internal/termsafe"
)

const logsUsage = "logs ID [-f] [--stdout|--stderr] [--tail N] [--timestamps] [--raw]   a job's output, stdout and stderr merged in arrival order (-f: follow, exit with the job's status)"

func init() {
	register(command{name: "logs", usage: logsUsage, run: runLogs})
}

func runLogs(ctx context.Context, e Env, args []string) error {
	fs, dir := newFlags("logs", e)
	var follow bool
	fs.BoolVar(&follow, "f", false, "follow live output until the job ends, then exit with its status")
	fs.BoolVar(&follow, "follow", false, "same as -f")
	stdout := fs.Bool("stdout", false, "standard output only")
	stderr := fs.Bool("stderr", false, "standard error only")
	tail := fs.Int("tail", 0, "start at the last N lines (0: all)")
	var stamps bool
	fs.BoolVar(&stamps, "timestamps", false, "prefix each line with when it arrived (RFC 3339, UTC)")
	fs.BoolVar(&stamps, "t", false, "same as --timestamps")
	// To a terminal the output is shown safe by default (termsafe.Writer:
	// colours and carriage returns pass, any other control character is
	// escaped, so a job cannot set the window's title or write the
	// clipboard); to a pipe or a file its bytes go as they are.
	toTerm := false
	if f, ok := e.Stdout.(*os.File); ok && isTerminal(f.Fd()) {
		toTerm = true
	}
	raw := fs.Bool("raw", !toTerm, "write the output's bytes as they are (the default unless stdout is a terminal, where control characters but colours and carriage returns are shown escaped, as \\x1b)")
	if err := parse(fs, interspersed(fs, args)); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return fmt.Errorf("%w: hive logs ID [-f] [--stdout|--stderr] [--tail N] [--timestamps] [--raw]", ErrUsage)
	}
	if *tail < 0 {
		return fmt.Errorf("%w: --tail %d: must be >= 0 (0: all)", ErrUsage, *tail)
	}
	l, err := layout(*dir)
	if err != nil {
		return err
	}
	c, resp, err := client.Open(l, proto.Request{Cmd: proto.CmdLogs, ID: fs.Arg(0), Follow: follow,
		Stdout: *stdout, Stderr: *stderr, Tail: *tail, Timestamps: stamps})
	if err != nil {
		return err
	}
	defer c.Close()
	// A cancelled ctx ends the copy (no goroutine waits for it meanwhile).
	defer context.AfterFunc(ctx, func() { c.Close() })()
	var out io.Writer = e.Stdout
	if !*raw {
		safe := termsafe.NewWriter(e.Stdout)
		defer safe.Flush()
		out = safe
	}
	if err := c.Copy(out); err != nil {
		return err
	}
	if !follow {
		if resp.Job.State == "failed" {
			fmt.Fprintf(e.Stderr, "hive: job %s could not start: %s\n", resp.Job.ID, termsafe.Text(resp.Job.Error))
		}
		return nil
	}
	// The output ended with the job: its status is the exit status.
	st, err := client.Call(l, proto.Request{Cmd: proto.CmdStatus, ID: resp.Job.ID})
	if err != nil {
		return err
	}
	if st.Job.State == "failed" {
		fmt.Fprintf(e.Stderr, "hive: job %s could not start: %s\n", st.Job.ID, termsafe.Text(st.Job.Error))
	}
	if code := jobExitCode(*st.Job); st.Job.State != "pending" && st.Job.State != "running" && code != 0 {
		return &ExitError{Code: code}
	}
	return nil
}
