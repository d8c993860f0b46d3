package cli

import (
	"context"
	"fmt"
	"os/exec"

	"github.com/hivetools/hive/internal/client"
	"github.com/hivetools/hive/internal/proto"
)

func init() {
	register(command{name: "dashboard", usage: "dashboard [--print-url] [--json]   a one-time login link to the dashboard (opened in a browser unless --print-url)", run: runDashboard})
}

// runDashboard asks the running daemon for a one-time login URL (good for
// one login within two minutes), prints it, and unless --print-url opens
// it with xdg-open (open on macOS) when there is one.
func runDashboard(ctx context.Context, e Env, args []string) error {
	fs, dir := newFlags("dashboard", e)
	printOnly := fs.Bool("print-url", false, "only print the URL; open no browser")
	asJSON := fs.Bool("json", false, `JSON output: {"url": ...}`)
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		return fmt.Errorf("%w: hive dashboard takes no arguments, got %q", ErrUsage, fs.Args())
	}
	l, err := layout(*dir)
	if err != nil {
		return err
	}
	resp, err := client.Call(l, proto.Request{Cmd: proto.CmdDashboard})
	if err != nil {
		return err
	}
	if *asJSON {
		if err := jsonOut(e, map[string]string{"url": resp.URL}); err != nil {
			return err
		}
	} else {
		fmt.Fprintln(e.Stdout, resp.URL)
	}
	if *printOnly {
		return nil
	}
	for _, opener := range []string{"xdg-open", "open"} {
		if p, err := exec.LookPath(opener); err == nil {
			cmd := exec.Command(p, resp.URL)
			if err := cmd.Start(); err != nil {
				return fmt.Errorf("open the dashboard with %s: %w", opener, err)
			}
			// The opener hands the URL to a browser and exits; its status
			// says nothing useful.
			return cmd.Process.Release()
		}
	}
	fmt.Fprintln(e.Stderr, "hive dashboard: no xdg-open here: open the URL above in a browser (it works once, for two minutes)")
	return nil
}
