package tools

import (
	"slices"
	"strings"
)

// instructionLines make the server's MCP instructions (sent at
// initialize): which tool to reach for (the seed's tool preference) and
// how to read what the tools answer. A line is given to a session that
// has one of its groups (nil: every session). With tools/list the
// instructions are paid for in every agent turn: the two together stay
// within 16 000 bytes with every group (TestToolsListSize pins it;
// BenchmarkToolsListSize measures them).
var instructionLines = []struct {
	groups []string
	text   string
}{
	{nil, "Your commands run in a daemon that outlives this session."},
	{[]string{GroupTerminal}, "- Files: terminal_exec with cat, sed -i, a heredoc; relative paths start in your session dir."},
	{[]string{GroupSearch}, "- Search with terminal_rg (contents) and terminal_glob (file names), not grep or find."},
	{[]string{GroupTerminal}, "- A warning (rm -rf, push --force...) means it ran: re-read the command."},
	{[]string{GroupTerminal}, "- Check shell_kind: off bash (PowerShell, cmd), bash idioms break."},
	{[]string{GroupTerminal}, "- Read semantic_status before exit_code: grep's exit 1 is ok (no match); semantic_message says why."},
	{[]string{GroupTerminal}, "- Output past max_output_kb is cut: page it with terminal_output_get(output_handle)."},
	{[]string{GroupTerminal}, "- terminal_exec past auto_background_after_sec goes on as a job: follow job_id with terminal_job_logs."},
	{[]string{GroupExecution, GroupTerminal}, "- Background work (run, jobs) ends as a loose end, pushed to you; reading its end clears it."},
	{[]string{GroupInbox}, "- read_inbox takes messages sent to you; remind wakes you later, also across restarts."},
	{[]string{GroupExecution, GroupTerminal}, "- limits takes {memory_mb, pids, cpus, nofile}."},
	{nil, "- Unknown tool arguments are refused."},
}

// Instructions are the instructions for a session with the groups.
func Instructions(groups []string) string {
	var lines []string
	for _, l := range instructionLines {
		if l.groups == nil || slices.ContainsFunc(l.groups, func(g string) bool { return slices.Contains(groups, g) }) {
			lines = append(lines, l.text)
		}
	}
	return strings.Join(lines, "\n")
}
