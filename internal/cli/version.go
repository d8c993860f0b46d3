package cli

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/hivetools/hive/internal/client"
	"github.com/hivetools/hive/internal/proto"
)

func init() {
	register(command{name: "version", usage: "version [--json]         print the version (and the running daemon's)", run: runVersion})
}

func runVersion(ctx context.Context, e Env, args []string) error {
	fs, dir := newFlags("version", e)
	asJSON := fs.Bool("json", false, "JSON output")
	if err := parse(fs, args); err != nil {
		return err
	}
	out := map[string]any{"version": Version}
	if l, err := layout(*dir); err == nil {
		if resp, err := client.Call(l, proto.Request{Cmd: proto.CmdVersion}); err == nil {
			out["daemon_version"], out["daemon_pid"] = resp.Version, resp.PID
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
		return json.NewEncoder(e.Stdout).Encode(out)
	}
	fmt.Fprintf(e.Stdout, "hive %s\n", Version)
	if v, ok := out["daemon_version"]; ok {
		fmt.Fprintf(e.Stdout, "daemon %s (pid %v)\n", v, out["daemon_pid"])
		if et, ok := out["escape_tracking"]; ok {
			fmt.Fprintf(e.Stdout, "escape tracking %v\n", et)
		}
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
