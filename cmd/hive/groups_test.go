package main

import (
	"sort"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hivetools/hive/internal/hivetest"
)

// The old system's group names are accepted and grant no tool; an
// unknown name is refused with the list of the known ones.
func TestLegacyGroups(t *testing.T) {
	state := hivetest.StateDir(t)
	list := func(groups string) string {
		s := hivetest.Connect(t, state, t.TempDir(), "--groups", groups)
		res, err := s.ListTools(t.Context(), &mcp.ListToolsParams{})
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, tool := range res.Tools {
			names = append(names, tool.Name)
		}
		sort.Strings(names)
		return strings.Join(names, ",")
	}
	always := "compact,mark_todos_done,set_status"
	if got := list("messaging,web_tools,manage_root_agent"); got != always {
		t.Errorf("legacy groups only: %s, want %s", got, always)
	}
	if got := list("messaging,execution"); got != "compact,kill,mark_todos_done,run,set_status,status" {
		t.Errorf("legacy and execution: %s", got)
	}
	out, err := hivetest.Run(t, state, "mcp", "--groups", "bogus")
	if err == nil || !strings.Contains(out, `unknown group "bogus"`) || !strings.Contains(out, "execution") || !strings.Contains(out, "messaging") {
		t.Errorf("unknown group: %v %q", err, out)
	}
}
