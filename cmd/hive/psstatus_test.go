package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/hivetools/hive/internal/hivetest"
)

// ps --filter status=error finds every job that did not succeed (a
// non-zero exit of a job that ended done, one stopped), and no job that
// did (grep's exit 1 is "no matches"); status=ok the others.
func TestPsFilterStatus(t *testing.T) {
	state := hivetest.StateDir(t)
	run := func(args ...string) string {
		t.Helper()
		out, err := hivetest.Run(t, state, append([]string{"run"}, args...)...)
		if err != nil {
			t.Fatalf("run %v: %q %v", args, out, err)
		}
		id := strings.TrimSpace(out)
		hivetest.Run(t, state, "wait", id)
		return id
	}
	exit3 := run("--name", "exit3", "--", "exit 3")
	nomatch := run("--name", "nomatch", "--", "grep -q needle /dev/null")
	ok := run("--name", "ok", "--", "true")
	out, err := hivetest.Run(t, state, "run", "--name", "stopped", "--", "sleep 60")
	if err != nil {
		t.Fatal(out, err)
	}
	hivetest.Run(t, state, "kill", "stopped")
	hivetest.Run(t, state, "wait", "stopped")
	names := func(args ...string) []string {
		t.Helper()
		var out []string
		for _, j := range psJSON(t, state, args...) {
			out = append(out, j.Name)
		}
		return out
	}
	if got, want := names("--filter", "status=error"), []string{"stopped", "exit3"}; !slices.Equal(got, want) {
		t.Errorf("ps --filter status=error: %v, want %v (%s)", got, want, exit3)
	}
	if got, want := names("--filter", "status=ok"), []string{"ok", "nomatch"}; !slices.Equal(got, want) {
		t.Errorf("ps --filter status=ok: %v, want %v (%s %s)", got, want, ok, nomatch)
	}
	if got, want := names("--filter", "status=error", "--filter", "state=done"), []string{"exit3"}; !slices.Equal(got, want) {
		t.Errorf("ps --filter status=error --filter state=done: %v, want %v", got, want)
	}
	if out, err := hivetest.Run(t, state, "ps", "--filter", "status=error", "--filter", "status=ok"); err == nil || !strings.Contains(out, "status") {
		t.Errorf("ps with both statuses: %q %v, want an error naming status", out, err)
	}
}
