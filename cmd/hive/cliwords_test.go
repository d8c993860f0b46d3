package main

import (
	"strings"
	"testing"

	"github.com/hivetools/hive/internal/hivetest"
)

// runSplit runs `hive ARGS` on state and returns its exit status, stdout
// and stderr apart.
func runSplit(t *testing.T, state string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	cmd := hivetest.Command(t, state, args...)
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	return rc(t, cmd.Run()), out.String(), errb.String()
}

// oneLine fails t unless s is exactly one line holding every one of want.
func oneLine(t *testing.T, what, s string, want ...string) {
	t.Helper()
	if strings.Count(s, "\n") != 1 || !strings.HasSuffix(s, "\n") {
		t.Errorf("%s: %q, want one line", what, s)
	}
	for _, w := range want {
		if !strings.Contains(s, w) {
			t.Errorf("%s: %q, want it to say %q", what, s, w)
		}
	}
}

// A mistyped command or flag gets one line naming it and where the help
// is, and exit status 2; not the whole usage.
func TestUnknownCommandOneLine(t *testing.T) {
	state := hivetest.StateDir(t)
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"bogus"}, []string{`unknown command "bogus"`, "hive help"}},
		{[]string{"help", "bogus"}, []string{`unknown command "bogus"`, "hive help"}},
		{[]string{"ps", "--bogus"}, []string{"-bogus", "hive ps -h"}},
		{[]string{"stop", "--grace", "soon"}, []string{`"soon"`, "-grace", "hive stop -h"}},
	} {
		code, out, errs := runSplit(t, state, tc.args...)
		if code != 2 || out != "" {
			t.Errorf("hive %v: exit %d, stdout %q; want 2 and nothing", tc.args, code, out)
		}
		oneLine(t, "hive "+strings.Join(tc.args, " ")+"'s stderr", errs, tc.want...)
	}
}

// With no daemon, a command that needs one says so in one line, with no
// system call's wording, and how to start one.
func TestNoDaemonOneLine(t *testing.T) {
	state := hivetest.StateDir(t)
	for _, args := range [][]string{{"ps"}, {"logs", "abc"}, {"inspect", "abc"}} {
		code, out, errs := runSplit(t, state, args...)
		if code != 1 || out != "" {
			t.Errorf("hive %v: exit %d, stdout %q; want 1 and nothing", args, code, out)
		}
		oneLine(t, "hive "+strings.Join(args, " ")+"'s stderr", errs, "no hive daemon is running", "hive daemon starts one")
		if strings.Contains(errs, "lstat") || strings.Contains(errs, "no such file") {
			t.Errorf("hive %v: %q tells a system call's error", args, errs)
		}
	}
}
