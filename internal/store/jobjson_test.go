package store

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/hivetools/hive/internal/limits"
)

// A job record's JSON form is what a daemon keeps with the holder of a
// job it started (wire.Kept.Record), read back by the next daemon, which
// may be of another build: these names and encodings stay as they are.
func TestJobJSON(t *testing.T) {
	at := time.Date(2024, 5, 6, 7, 8, 9, 123456789, time.UTC)
	code, sig := 2, 9
	full := Job{ID: "j1", Name: "n", Cmd: "echo hi", Argv: []string{"echo", "hi"}, ShellKind: "bash", Cwd: "/tmp", Source: "terminal",
		State: "running", ExitCode: &code, Signal: &sig, Error: "e", Timeout: time.Second, Created: at, Started: at, Ended: at,
		Pid: 100, PidStart: 12345, BootID: "b", StdoutPath: "/s/j1.out", StderrPath: "/s/j1.err", StdoutBytes: 1, StderrBytes: 2,
		StdoutDropped: 3, StderrDropped: 4, Leftover: 5, Quiet: true, KillOnTimeout: true,
		Limits: limits.Limits{MemoryMB: 64}, LimitsBy: limits.Enforced{"memory_mb": "cgroup"}, Usage: &limits.Usage{CPUUserMS: 7}, LimitHit: "memory_mb"}
	const fullJSON = `{"id":"j1","name":"n","cmd":"echo hi","argv":["echo","hi"],"shell_kind":"bash","cwd":"/tmp","source":"terminal","state":"running",` +
		`"exit_code":2,"signal":9,"error":"e","timeout":1000000000,"created":"2024-05-06T07:08:09.123456789Z","started":"2024-05-06T07:08:09.123456789Z",` +
		`"ended":"2024-05-06T07:08:09.123456789Z","pid":100,"pid_start":12345,"boot_id":"b","stdout_path":"/s/j1.out","stderr_path":"/s/j1.err",` +
		`"stdout_bytes":1,"stderr_bytes":2,"stdout_dropped":3,"stderr_dropped":4,"leftover":5,"quiet":true,"kill_on_timeout":true,` +
		`"limits":{"memory_mb":64},"limits_by":{"memory_mb":"cgroup"},"usage":{"cpu_user_ms":7,"cpu_system_ms":0},"limit_hit":"memory_mb"}`
	for _, c := range []struct {
		name string
		j    Job
		json string
	}{{"full", full, fullJSON}, {"zero", Job{}, `{}`}} {
		b, err := json.Marshal(c.j)
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != c.json {
			t.Errorf("%s: encoding changed:\n got %s\nwant %s", c.name, b, c.json)
		}
		var back Job
		if err := json.Unmarshal([]byte(c.json), &back); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(back, c.j) {
			t.Errorf("%s: decoded %+v, want %+v", c.name, back, c.j)
		}
	}
}
