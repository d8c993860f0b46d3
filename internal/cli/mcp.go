package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/hivetools/hive/internal/bridge"
	"github.com/hivetools/hive/internal/build"
	"github.com/hivetools/hive/internal/tools"
)

func init() {
	register(command{name: "mcp", usage: "mcp [--groups g1,g2] [--answers text]   MCP over stdio (starts the daemon if needed)", run: runMCP})
}

func runMCP(ctx context.Context, e Env, args []string) error {
	fs, dir := newFlags("mcp", e)
	groups := fs.String("groups", "", "tool groups: "+strings.Join(tools.AllGroups, ",")+" (default all)")
	answers := fs.String("answers", tools.AnswersStructured, "form of tool answers: structured (data in structuredContent) or text (text alone, for clients that ignore structuredContent)")
	if err := parse(fs, args); err != nil {
		return err
	}
	if _, err := tools.ParseAnswers(*answers); err != nil {
		return err
	}
	var gs []string
	if *groups != "" {
		gs = strings.Split(*groups, ",")
		if _, err := tools.ParseGroups(gs); err != nil {
			return err
		}
	}
	l, err := layout(*dir)
	if err != nil {
		return err
	}
	greet(e)
	// HIVE_BRIDGE_COPY=1 forwards bytes instead of handing stdio to the
	// daemon (for debugging, and to test both paths).
	return bridge.Run(bridge.Options{Layout: l, Groups: gs, Answers: *answers, Exe: e.Exe, Stdin: e.Stdin, Stdout: e.Stdout,
		Copy: os.Getenv("HIVE_BRIDGE_COPY") == "1"})
}

// greet tells a person who started hive mcp in a terminal what it is: one
// line on stderr. Nothing when stdin or stderr is not a terminal (an MCP
// client's pipes).
func greet(e Env) {
	in, ok1 := e.Stdin.(*os.File)
	errf, ok2 := e.Stderr.(*os.File)
	if !ok1 || !ok2 || !isTerminal(in.Fd()) || !isTerminal(errf.Fd()) {
		return
	}
	cmd := e.Exe
	if build.Temporary(cmd) {
		cmd = "hive" // go run's build: the client should run an installed one
	}
	snippet, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"hive": map[string]any{"command": cmd, "args": []string{"mcp"}}}})
	fmt.Fprintf(errf, "hive mcp speaks MCP (JSON-RPC) on stdin/stdout, for an MCP client; configure one with %s; quit with Ctrl-D or Ctrl-C\n", snippet)
}
