package cli

import (
	"context"
	"fmt"
	"io"
	"strings"
)

func init() {
	register(command{name: "man", usage: "man   print hive's man page (roff): hive man | man -l -", run: runMan})
}

func runMan(ctx context.Context, e Env, args []string) error {
	fs, _ := newFlags("man", e)
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: hive man takes no arguments, got %q", ErrUsage, fs.Args())
	}
	writeMan(e.Stdout, collectHelp())
	return nil
}

// roff escapes text for a roff line: backslashes, and a leading . or '.
func roff(s string) string {
	s = strings.ReplaceAll(s, `\`, `\e`)
	s = strings.ReplaceAll(s, "-", `\-`)
	if strings.HasPrefix(s, ".") || strings.HasPrefix(s, "'") {
		s = `\&` + s
	}
	return s
}

func writeMan(w io.Writer, hs []cmdHelp) {
	fmt.Fprintf(w, ".TH HIVE 1 \"\" \"hive %s\" \"User Commands\"\n", roff(Version))
	fmt.Fprintln(w, ".SH NAME\nhive \\- a terminal and an inbox for AI agents, as MCP tools")
	fmt.Fprintln(w, ".SH SYNOPSIS")
	for _, h := range hs {
		if strings.Contains(h.name, " ") && len(h.usage) > 0 {
			continue // listed with its command
		}
		for _, u := range h.usage {
			fmt.Fprintf(w, ".B hive\n%s\n.br\n", roff(strings.TrimSpace(cutAbout(u))))
		}
	}
	fmt.Fprintln(w, `.SH DESCRIPTION
hive gives an AI agent a real terminal and an inbox, as MCP tools. A long\-running
daemon owns every process, output file, task record and loose end of one agent;
`+"`hive mcp`"+` (stdio), streamable HTTP and the other commands talk to it over the
unix socket of its state directory, starting it when needed.
.PP
Every command takes \fB\-\-state\-dir\fR \fIDIR\fR (else \fB$HIVE_STATE_DIR\fR, else
\fB${XDG_STATE_HOME:\-~/.local/state}/hive\fR). \fB\-h\fR or \fBhive help\fR \fICMD\fR
prints a command's help and starts nothing. \fBhive \-\-version\fR prints this build.`)
	fmt.Fprintln(w, ".SH COMMANDS")
	for _, h := range hs {
		fmt.Fprintf(w, ".SS %s\n", roff(h.name))
		if h.about != "" {
			fmt.Fprintf(w, "%s\n.PP\n", roff(h.about))
		}
		fmt.Fprintln(w, ".nf")
		for _, l := range strings.Split(strings.TrimRight(h.text, "\n"), "\n") {
			fmt.Fprintln(w, roff(l))
		}
		fmt.Fprintln(w, ".fi")
	}
	fmt.Fprintln(w, `.SH FILES
.TP
.I <state>/hive.toml
The daemon's settings: keys are its flags with _ for \- (max_running = 3); flags override it.
.TP
.I <state>/hive.sock
The daemon's unix socket (mode 0600).
.TP
.I <state>/daemon.log
The log of a daemon started in the background.
.TP
.I $XDG_CONFIG_HOME/systemd/user/hive.service
The unit hive service install writes.
.SH SEE ALSO
The README and docs/ of the hive source.`)
}

// cutAbout drops the description from a usage line.
func cutAbout(u string) string {
	if m := aboutRE.FindStringSubmatchIndex(u); m != nil {
		return u[:m[2]-2]
	}
	return u
}
