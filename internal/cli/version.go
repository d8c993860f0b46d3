package cli

import (
	"context"
	"fmt"
	"sync"

	"github.com/hivetools/hive/internal/build"
	"github.com/hivetools/hive/internal/client"
	"github.com/hivetools/hive/internal/proto"
)

func init() {
	register(command{name: "version", usage: "version [--json]         print this build and the running daemon's, and whether they differ", run: runVersion})
}

var selfOnce = sync.OnceValue(func() build.Info { return build.Read(Version).WithFile(build.SelfExe()) })

// selfBuild is this process's build (without its digest).
func selfBuild() build.Info { return selfOnce() }

func runVersion(ctx context.Context, e Env, args []string) error {
	fs, dir := newFlags("version", e)
	asJSON := fs.Bool("json", false, "JSON output")
	if err := parse(fs, args); err != nil {
		return err
	}
	me := selfBuild()
	out := map[string]any{"version": Version, "build": me}
	var resp proto.Response
	running := false
	if l, err := layout(*dir); err == nil {
		if r, err := client.Call(l, proto.Request{Cmd: proto.CmdVersion}); err == nil {
			resp, running = r, true
			same, m, d := client.Compare(l, me, resp)
			me = m
			out["build"] = me
			out["daemon_version"], out["daemon_pid"], out["daemon_build"], out["same_build"] = resp.Version, resp.PID, d, same
			if resp.Activity != nil {
				out["daemon_activity"] = resp.Activity
			}
			if resp.Holder != nil {
				out["holder"] = resp.Holder
			}
			if resp.EscapeTracking != "" {
				out["escape_tracking"] = resp.EscapeTracking
			}
			if resp.HTTPAddr != "" {
				out["daemon_http_addr"], out["daemon_http_auth"] = resp.HTTPAddr, resp.HTTPAuth
				if resp.HTTPTokenFile != "" {
					out["daemon_http_token_file"] = resp.HTTPTokenFile
				}
			}
		}
	}
	if *asJSON {
		return jsonOut(e, out)
	}
	fmt.Fprintf(e.Stdout, "client  hive %s (%s)\n", me, me.Go)
	if !running {
		fmt.Fprintln(e.Stdout, "daemon  not running")
		return nil
	}
	d := out["daemon_build"].(build.Info)
	fmt.Fprintf(e.Stdout, "daemon  hive %s (%s, pid %d)\n", d, d.Go, resp.PID)
	if h := resp.Holder; h != nil {
		fmt.Fprintf(e.Stdout, "holder  hive %s (pid %d, protocol %d): jobs and PTY sessions outlive the daemon\n", h.Build, h.Pid, h.Proto)
	}
	if et, ok := out["escape_tracking"]; ok {
		fmt.Fprintf(e.Stdout, "escape tracking %v\n", et)
	}
	if !out["same_build"].(bool) {
		fmt.Fprintln(e.Stdout, "the daemon runs another build than this hive: it is replaced when idle, or now by hive restart")
	}
	if a, ok := out["daemon_http_addr"]; ok {
		if f, ok := out["daemon_http_token_file"]; ok {
			fmt.Fprintf(e.Stdout, "http http://%s/mcp (bearer token in %s)\n", a, f)
		} else {
			fmt.Fprintf(e.Stdout, "http http://%s/mcp (no authentication)\n", a)
		}
	}
	return nil
}
