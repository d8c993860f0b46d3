package main

import (
	"errors"
	"os/exec"
	"strings"
	"testing"

	"github.com/hivetools/hive/internal/client"
	"github.com/hivetools/hive/internal/errdefs"
	"github.com/hivetools/hive/internal/paths"
	"github.com/hivetools/hive/internal/proto"

	"github.com/hivetools/hive/internal/hivetest"
)

// An error the daemon reports keeps its class across the socket
// (errors.Is in the CLI's process), and the CLI prints it once, on one
// line, and exits 1.
func TestErrorsKeepTheirClass(t *testing.T) {
	state := hivetest.StateDir(t)
	if out, err := hivetest.Run(t, state, "run", "--name", "busy", "--", "sleep 60"); err != nil {
		t.Fatal(out, err)
	}
	l := paths.Layout{Dir: state}
	for _, tc := range []struct {
		req   proto.Request
		class error
		text  string
	}{
		{proto.Request{Cmd: proto.CmdKill, ID: "nosuchjob"}, errdefs.ErrNotFound, "no such job"},
		{proto.Request{Cmd: proto.CmdStatus, ID: "nosuchjob"}, errdefs.ErrNotFound, "no such job"},
		{proto.Request{Cmd: proto.CmdRm, ID: "busy"}, errdefs.ErrConflict, "only an ended job"},
		{proto.Request{Cmd: proto.CmdRun, Argv: []string{"true"}, Name: "busy"}, errdefs.ErrConflict, "name in use"},
		{proto.Request{Cmd: proto.CmdRun, Argv: []string{"true"}, Name: "Busy"}, errdefs.ErrInvalid, "[a-z0-9-]{1,63}"},
		{proto.Request{Cmd: proto.CmdRun}, errdefs.ErrInvalid, "argv"},
		{proto.Request{Cmd: proto.CmdLogs, ID: "busy", Tail: -1}, errdefs.ErrInvalid, "tail"},
	} {
		_, err := client.Call(l, tc.req)
		if !errors.Is(err, tc.class) || !strings.Contains(err.Error(), tc.text) {
			t.Errorf("%s %q: %v, want an error of class %q saying %q", tc.req.Cmd, tc.req.ID, err, tc.class, tc.text)
		}
		for _, other := range []error{errdefs.ErrNotFound, errdefs.ErrConflict, errdefs.ErrInvalid, errdefs.ErrUnavailable} {
			if other != tc.class && errors.Is(err, other) {
				t.Errorf("%s %q: %v is also %q", tc.req.Cmd, tc.req.ID, err, other)
			}
		}
	}

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"kill", "nosuchjob"}, `hive: job "nosuchjob": no such job`},
		{[]string{"inspect", "nosuchjob"}, `hive: job "nosuchjob": no such job`},
		{[]string{"run", "--name", "busy", "--", "true"}, `hive: name "busy": name in use by a pending or running job`},
		{[]string{"run", "--name", "Busy", "--", "true"}, `hive: name "Busy": must match [a-z0-9-]{1,63}`},
	} {
		cmd := hivetest.Command(t, state, tc.args...)
		var stdout, stderr strings.Builder
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 1 {
			t.Errorf("hive %s: %v, want exit status 1", strings.Join(tc.args, " "), err)
		}
		lines := strings.Split(strings.TrimSuffix(stderr.String(), "\n"), "\n")
		if stdout.Len() != 0 || len(lines) != 1 || !strings.HasPrefix(lines[0], tc.want) {
			t.Errorf("hive %s printed stdout %q, stderr %q; want nothing on stdout and one line on stderr starting %q",
				strings.Join(tc.args, " "), stdout.String(), stderr.String(), tc.want)
		}
	}
}
