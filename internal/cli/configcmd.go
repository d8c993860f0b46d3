package cli

import (
	"context"
	"fmt"
	"text/tabwriter"

	"github.com/hivetools/hive/internal/client"
	"github.com/hivetools/hive/internal/proto"
)

func init() {
	register(command{name: "config", usage: "config [--json] [--config F] [daemon flags]   print the daemon's settings (defaults, hive.toml, flags) and where each came from", run: runConfig})
}

func runConfig(ctx context.Context, e Env, args []string) error {
	o := daemonFlags("config", e)
	asJSON := o.fs.Bool("json", false, "JSON output")
	o.skip = []string{"json"}
	if err := parse(o.fs, args); err != nil {
		return err
	}
	if o.fs.NArg() > 0 {
		return fmt.Errorf("%w: hive config takes flags only, got %q", ErrUsage, o.fs.Args())
	}
	l, err := layout(*o.dir)
	if err != nil {
		return err
	}
	if err := o.load(l); err != nil {
		return err
	}
	set := o.settings()
	file := o.configFile
	if file == "" {
		file = l.Config()
	}
	// A running daemon's own settings, where they differ.
	running := map[string]string{}
	var pid int
	if r, err := client.Call(l, proto.Request{Cmd: proto.CmdVersion}); err == nil && r.Settings != nil {
		pid = r.PID
		for _, s := range r.Settings {
			running[s.Name] = s.Value
		}
	}
	if *asJSON {
		out := map[string]any{"file": file, "file_read": o.configFile != "", "settings": set}
		if pid != 0 {
			diff := map[string]string{}
			for _, s := range set {
				if v, ok := running[s.Name]; ok && v != s.Value {
					diff[s.Name] = v
				}
			}
			out["daemon_pid"], out["daemon_differs"] = pid, diff
		}
		return jsonOut(e, out)
	}
	if o.configFile != "" {
		fmt.Fprintf(e.Stdout, "settings file %s\n\n", file)
	} else {
		fmt.Fprintf(e.Stdout, "settings file %s (none)\n\n", file)
	}
	tw := tabwriter.NewWriter(e.Stdout, 2, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "KEY\tVALUE\tSOURCE")
	differs := false
	for _, s := range set {
		src := s.Source
		if s.Source == "file" {
			src = fmt.Sprintf("file (line %d)", s.Line)
		}
		if v, ok := running[s.Name]; ok && v != s.Value {
			src += fmt.Sprintf("; the running daemon has %q", v)
			differs = true
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", configKey(s.Name), valueOrDash(s.Value), src)
	}
	tw.Flush()
	if differs {
		fmt.Fprintf(e.Stdout, "\nthe running daemon (pid %d) was started with other settings: hive restart applies these\n", pid)
	}
	return nil
}

// configKey is a flag's key in hive.toml.
func configKey(flag string) string {
	b := []byte(flag)
	for i, c := range b {
		if c == '-' {
			b[i] = '_'
		}
	}
	return string(b)
}

func valueOrDash(v string) string {
	if v == "" {
		return `""`
	}
	return v
}
