package cli

import (
	"context"
	"fmt"

	"github.com/hivetools/hive/internal/client"
	"github.com/hivetools/hive/internal/proto"
)

func init() {
	register(command{name: "logs", usage: "logs ID [-f] [--stderr]   print a job's output (-f: follow until it ends)", run: runLogs})
}

func runLogs(ctx context.Context, e Env, args []string) error {
	fs, dir := newFlags("logs", e)
	follow := fs.Bool("f", false, "follow live output until the job ends")
	stderr := fs.Bool("stderr", false, "standard error instead of standard output")
	if err := parse(fs, interspersed(fs, args)); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return fmt.Errorf("%w: hive logs ID [-f] [--stderr]", ErrUsage)
	}
	l, err := layout(*dir)
	if err != nil {
		return err
	}
	c, _, err := client.Open(l, proto.Request{Cmd: proto.CmdLogs, ID: fs.Arg(0), Follow: *follow, Stderr: *stderr})
	if err != nil {
		return err
	}
	defer c.Close()
	go func() { <-ctx.Done(); c.Close() }()
	return c.Copy(e.Stdout)
}
