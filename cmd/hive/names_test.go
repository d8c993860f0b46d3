package main

import (
	"strings"
	"testing"

	"github.com/hivetools/hive/internal/hivetest"
)

// Every answer about a named job carries its name, in structuredContent
// and in the text ("ab12cd34 (web)"), as its loose end does: run, status
// and kill, and the terminal_job_* tools. An unnamed job's answers have
// neither.
func TestNamedJobAnswers(t *testing.T) {
	state := hivetest.StateDir(t)
	s := hivetest.Connect(t, state, t.TempDir())
	type named struct {
		ID    string `json:"id"`
		JobID string `json:"job_id"`
		Name  string `json:"name"`
	}
	check := func(tool, text string, got named, id, name string) {
		t.Helper()
		want := id + " (" + name + ")"
		if name == "" {
			want = id
		}
		if got.Name != name || !strings.Contains(text, want) || name == "" && strings.Contains(text, id+" (") {
			t.Errorf("%s: name %q, text %q; want name %q and %q in the text", tool, got.Name, text, name, want)
		}
	}
	for _, name := range []string{"web", ""} {
		var st named
		args := map[string]any{"cmd": "sleep 60", "wait_seconds": 0}
		if name != "" {
			args["name"] = name
		}
		text := s.MustCall("run", args, &st)
		id := st.ID
		if name != "" && text != "task started: id="+id+" name="+name {
			t.Errorf("run: %q", text)
		}
		if name == "" && text != "task started: id="+id {
			t.Errorf("run: %q", text)
		}
		if st.Name != name {
			t.Errorf("run: name %q, want %q", st.Name, name)
		}
		st = named{}
		text = s.MustCall("status", map[string]any{"id": id}, &st)
		check("status", text, st, id, name)
		if _, summary, ok := todoFor(s, id); !ok || !strings.Contains(summary, "task "+id) ||
			name != "" && !strings.Contains(summary, "task "+id+" ("+name+")") {
			t.Errorf("loose end: %q (found %v)", summary, ok)
		}
		st = named{}
		text = s.MustCall("kill", map[string]any{"id": id}, &st)
		check("kill", text, st, id, name)
		st = named{}
		text = s.MustCall("status", map[string]any{"id": id, "wait_seconds": 10}, &st)
		check("status at the end", text, st, id, name)
		st = named{}
		text = s.MustCall("kill", map[string]any{"id": id}, &st)
		check("kill of an ended task", text, st, id, name)

		jargs := map[string]any{"cmd": "sleep 60"}
		if name != "" {
			jargs["name"] = name + "-job"
		}
		jname := ""
		if name != "" {
			jname = name + "-job"
		}
		var js named
		text = s.MustCall("terminal_job_start", jargs, &js)
		check("terminal_job_start", text, named{Name: js.Name}, js.JobID, jname)
		var jl named
		text = s.MustCall("terminal_job_logs", map[string]any{"job_id": js.JobID}, &jl)
		check("terminal_job_logs", text, named{Name: jl.Name}, js.JobID, jname)
		var jk named
		text = s.MustCall("terminal_job_kill", map[string]any{"job_id": js.JobID}, &jk)
		check("terminal_job_kill", text, jk, js.JobID, jname)
	}
}
