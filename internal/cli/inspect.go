package cli

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/hivetools/hive/internal/client"
	"github.com/hivetools/hive/internal/proto"
	"github.com/hivetools/hive/internal/termsafe"
	"github.com/hivetools/hive/internal/view"
)

const inspectUsage = "inspect ID...   print jobs' whole records as JSON (an array, like docker inspect)"

func init() {
	register(command{name: "inspect", usage: inspectUsage, run: runInspect})
}

func runInspect(ctx context.Context, e Env, args []string) error {
	fs, dir := newFlags("inspect", e)
	if err := parse(fs, interspersed(fs, args)); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return fmt.Errorf("%w: hive inspect ID...", ErrUsage)
	}
	l, err := layout(*dir)
	if err != nil {
		return err
	}
	jobs := []view.Job{}
	failed := 0
	for _, id := range fs.Args() {
		resp, err := client.Call(l, proto.Request{Cmd: proto.CmdStatus, ID: id})
		if err != nil {
			// Each failure once, on its own line (docker's way); main
			// then prints nothing more.
			fmt.Fprintf(e.Stderr, "hive: %s\n", termsafe.Text(err.Error())) // the error names the job
			failed++
			continue
		}
		jobs = append(jobs, *resp.Job)
	}
	if len(jobs) > 0 || failed == 0 {
		enc := json.NewEncoder(e.Stdout)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		if err := enc.Encode(jobs); err != nil {
			return err
		}
	}
	if failed > 0 {
		return &ExitError{Code: 1}
	}
	return nil
}
