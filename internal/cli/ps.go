package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/hivetools/hive/internal/client"
	"github.com/hivetools/hive/internal/proto"
)

func init() {
	register(command{name: "ps", usage: "ps [--all] [--json]      list pending and running jobs (--all: also ended ones)", run: runPs})
}

func runPs(ctx context.Context, e Env, args []string) error {
	fs, dir := newFlags("ps", e)
	all := fs.Bool("all", false, "include ended jobs")
	asJSON := fs.Bool("json", false, "JSON output")
	if err := parse(fs, args); err != nil {
		return err
	}
	l, err := layout(*dir)
	if err != nil {
		return err
	}
	resp, err := client.Call(l, proto.Request{Cmd: proto.CmdPs, All: *all})
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(e.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(resp.Jobs)
	}
	tw := tabwriter.NewWriter(e.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSTATE\tEXIT\tDURATION\tSTARTED\tCMD")
	for _, j := range resp.Jobs {
		exit := "-"
		if j.ExitCode != nil {
			exit = fmt.Sprint(*j.ExitCode)
		}
		started := "-"
		if !j.Started.IsZero() {
			started = j.Started.Local().Format("15:04:05")
		}
		cmd := j.Cmd
		if len(cmd) > 60 {
			cmd = cmd[:59] + "…"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", j.ID, j.State, exit,
			(time.Duration(j.DurationMs) * time.Millisecond).Round(time.Millisecond*100), started, cmd)
	}
	return tw.Flush()
}
