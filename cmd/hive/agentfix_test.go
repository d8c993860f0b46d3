package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hivetools/hive/internal/hivetest"
)

// The notification of a cleared todo carries the todo's real id.
func TestTodoClearedNotificationID(t *testing.T) {
	state := hivetest.StateDir(t)
	s := hivetest.Connect(t, state, t.TempDir())
	if err := s.SetLoggingLevel(t.Context(), &mcp.SetLoggingLevelParams{Level: "info"}); err != nil {
		t.Fatal(err)
	}
	out, err := hivetest.Run(t, state, "todo", "upsert", "--subsystem", "ci", "--key", "build-7", "--summary", "build 7 failed", "--json")
	if err != nil {
		t.Fatalf("todo upsert: %v %s", err, out)
	}
	var up struct {
		TodoID int64 `json:"todo_id"`
	}
	if err := json.Unmarshal([]byte(out), &up); err != nil || up.TodoID < 1 {
		t.Fatalf("todo upsert --json %q: %v", out, err)
	}
	if out, err := hivetest.Run(t, state, "todo", "clear", "--subsystem", "ci", "--key", "build-7"); err != nil {
		t.Fatalf("todo clear: %v %s", err, out)
	}
	want := fmt.Sprintf(`"id":%d`, up.TodoID)
	s.WaitFor("the cleared notification", func(_, logs []string) bool {
		for _, l := range logs {
			if strings.Contains(l, `"cleared":true`) {
				if !strings.Contains(l, want) {
					t.Fatalf("cleared notification %s: want %s", l, want)
				}
				return true
			}
		}
		return false
	})
}

// ls exit 2 (a missing file) is explained as trouble, not as a misused
// builtin.
func TestLsMissingFileSemantic(t *testing.T) {
	state := hivetest.StateDir(t)
	s := hivetest.Connect(t, state, t.TempDir())
	var res struct {
		ExitCode        *int   `json:"exit_code"`
		SemanticStatus  string `json:"semantic_status"`
		SemanticMessage string `json:"semantic_message"`
	}
	s.MustCall("terminal_exec", map[string]any{"cmd": "ls /nonexistent-hive-test-path"}, &res)
	if res.ExitCode == nil || *res.ExitCode != 2 {
		t.Fatalf("ls of a missing path: exit %v, want 2", res.ExitCode)
	}
	if res.SemanticStatus != "error" || !strings.Contains(res.SemanticMessage, "does not exist") || strings.Contains(res.SemanticMessage, "Misuse") {
		t.Errorf("ls exit 2: %q %q, want an error saying the path does not exist", res.SemanticStatus, res.SemanticMessage)
	}
}
