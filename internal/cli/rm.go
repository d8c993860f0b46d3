package cli

import (
	"context"
	"fmt"

	"github.com/hivetools/hive/internal/client"
	"github.com/hivetools/hive/internal/proto"
	"github.com/hivetools/hive/internal/termsafe"
)

const rmUsage = "rm ID...   remove ended jobs: their records and output files (a running job is refused: kill it first)"

func init() {
	register(command{name: "rm", usage: rmUsage, run: runRm})
}

func runRm(ctx context.Context, e Env, args []string) error {
	fs, dir := newFlags("rm", e)
	asJSON := fs.Bool("json", false, "JSON output: the removed job's record, one per line")
	if err := parse(fs, interspersed(fs, args)); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return fmt.Errorf("%w: hive rm ID...", ErrUsage)
	}
	l, err := layout(*dir)
	if err != nil {
		return err
	}
	failed := 0
	for _, id := range fs.Args() {
		resp, err := client.Call(l, proto.Request{Cmd: proto.CmdRm, ID: id})
		if err != nil {
			fmt.Fprintf(e.Stderr, "hive: rm %s: %s\n", termsafe.Line(id), termsafe.Text(err.Error()))
			failed++
			continue
		}
		if *asJSON {
			jsonOut(e, resp.Job)
		} else {
			fmt.Fprintln(e.Stdout, resp.Job.ID)
		}
	}
	if failed > 0 {
		return fmt.Errorf("rm: %d of %d jobs not removed", failed, fs.NArg())
	}
	return nil
}
