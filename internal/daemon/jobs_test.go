package daemon

import (
	"strings"
	"testing"

	"github.com/hivetools/hive/internal/client"
	"github.com/hivetools/hive/internal/proto"
)

// Bad input to the job commands gets an error naming the field and the
// rule, and changes nothing.
func TestJobCommandsBadInput(t *testing.T) {
	l := runDaemon(t, Config{})
	run := call(t, l, proto.Request{Cmd: proto.CmdRun, Argv: []string{"exec sleep 60"}})
	defer client.Call(l, proto.Request{Cmd: proto.CmdKill, ID: run.Job.ID, Force: true})
	for _, tt := range []struct {
		req  proto.Request
		want string
	}{
		{proto.Request{Cmd: proto.CmdPs, States: []string{"sleeping"}}, `states: "sleeping": must be pending, running`},
		{proto.Request{Cmd: proto.CmdPs, Name: "Bad Name"}, `name "Bad Name": must match`},
		{proto.Request{Cmd: proto.CmdRun, Argv: []string{"true"}, Name: "0123abcd"}, `name "0123abcd": must not be 8 hex digits`},
		{proto.Request{Cmd: proto.CmdRm}, "id: must not be empty"},
		{proto.Request{Cmd: proto.CmdRm, ID: "nosuch"}, `job "nosuch": no such job`},
		{proto.Request{Cmd: proto.CmdRm, ID: run.Job.ID}, "is running: only an ended job can be removed"},
		{proto.Request{Cmd: proto.CmdWait, ID: "nosuch"}, `job "nosuch": no such job`},
		{proto.Request{Cmd: proto.CmdLogs, ID: run.Job.ID, Tail: -1}, "tail -1: must be >= 0"},
		{proto.Request{Cmd: proto.CmdLogs, ID: run.Job.ID, Offset: 3}, "offset: only with stdout or stderr"},
		{proto.Request{Cmd: proto.CmdLogs, ID: run.Job.ID, Offset: 3, Stdout: true, Tail: 1}, "offset: not with tail"},
	} {
		t.Run(tt.want, func(t *testing.T) {
			var err error
			if tt.req.Cmd == proto.CmdLogs {
				var c *client.Conn
				if c, _, err = client.Open(l, tt.req); err == nil {
					c.Close()
				}
			} else {
				_, err = client.Call(l, tt.req)
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want %q", err, tt.want)
			}
		})
	}
	if st := call(t, l, proto.Request{Cmd: proto.CmdStatus, ID: run.Job.ID}); st.Job.State != "running" {
		t.Errorf("after a refused rm: %s", st.Job.State)
	}
}

// logs with an offset starts there, in one stream.
func TestLogsOffset(t *testing.T) {
	l := runDaemon(t, Config{})
	run := call(t, l, proto.Request{Cmd: proto.CmdRun, Argv: []string{"echo hello; echo oops >&2"}})
	call(t, l, proto.Request{Cmd: proto.CmdWait, ID: run.Job.ID})
	c, _, err := client.Open(l, proto.Request{Cmd: proto.CmdLogs, ID: run.Job.ID, Stdout: true, Offset: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var b strings.Builder
	c.Copy(&b)
	if b.String() != "llo\n" {
		t.Errorf("stdout from offset 2: %q", b.String())
	}
}
