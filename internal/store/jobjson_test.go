package store

import (
	"bytes"
	"encoding/json"
	"math"
	"reflect"
	"testing"
	"time"

	"github.com/hivetools/hive/internal/limits"
)

// checkJobJSON fails t unless j.AppendJSON is json.Marshal's encoding of
// j, or declines (ok false) a record json.Marshal must encode.
func checkJobJSON(t testing.TB, j Job) (ok bool) {
	t.Helper()
	want, err := json.Marshal(j)
	got, ok := j.AppendJSON([]byte("x"))
	if !ok {
		if string(got) != "x" {
			t.Fatalf("declined, but appended: %q", got)
		}
		if c := math.Abs(j.Limits.CPUs); err == nil && (c == 0 || c >= 1e-6 && c < 1e21) { // json.Marshal refuses NaN and ±Inf
			t.Fatalf("declined a record json.Marshal encodes (%s)", want)
		}
		return false
	}
	if err != nil {
		t.Fatalf("encoded %s, json.Marshal refused: %v", got, err)
	}
	if !bytes.Equal(got[1:], want) {
		t.Fatalf("AppendJSON:\n%s\njson.Marshal:\n%s", got[1:], want)
	}
	return true
}

// A job record's JSON form is what a daemon keeps with the holder of a
// job it started (wire.Kept.Record), read back by the next daemon, which
// may be of another build: these names and encodings stay as they are,
// json.Marshal's and AppendJSON's alike.
func TestJobJSON(t *testing.T) {
	at := time.Date(2024, 5, 6, 7, 8, 9, 123456789, time.UTC)
	code, sig := 2, 9
	full := Job{ID: "j1", Name: "n", Cmd: "echo hi", Argv: []string{"echo", "hi"}, ShellKind: "bash", Cwd: "/tmp", Source: "terminal",
		State: "running", ExitCode: &code, Signal: &sig, Error: "e", Timeout: time.Second, Created: at, Started: at, Ended: at,
		Pid: 100, PidStart: 12345, BootID: "b", StdoutPath: "/s/j1.out", StderrPath: "/s/j1.err", StdoutBytes: 1, StderrBytes: 2,
		StdoutDropped: 3, StderrDropped: 4, Leftover: 5, Quiet: true, KillOnTimeout: true,
		Limits: limits.Limits{MemoryMB: 64}, LimitsBy: limits.Enforced{"memory_mb": "cgroup"}, Usage: &limits.Usage{CPUUserMS: 7}, LimitHit: "memory_mb"}
	const head = `{"id":"j1","name":"n","cmd":"echo hi","argv":["echo","hi"],"shell_kind":"bash","cwd":"/tmp","source":"terminal","state":"running",` +
		`"exit_code":2,"signal":9,"error":"e","timeout":1000000000,"created":"2024-05-06T07:08:09.123456789Z","started":"2024-05-06T07:08:09.123456789Z",` +
		`"ended":"2024-05-06T07:08:09.123456789Z","pid":100,"pid_start":12345,"boot_id":"b","stdout_path":"/s/j1.out","stderr_path":"/s/j1.err",` +
		`"stdout_bytes":1,"stderr_bytes":2,"stdout_dropped":3,"stderr_dropped":4,"leftover":5,"quiet":true,"kill_on_timeout":true,`
	const fullJSON = head + `"limits":{"memory_mb":64},"limits_by":{"memory_mb":"cgroup"},"usage":{"cpu_user_ms":7,"cpu_system_ms":0},"limit_hit":"memory_mb"}`
	kept := full
	kept.Limits, kept.LimitsBy, kept.Usage = limits.Limits{}, nil, nil
	const keptJSON = head + `"limit_hit":"memory_mb"}`
	for _, c := range []struct {
		name string
		j    Job
		json string
	}{{"full", full, fullJSON}, {"kept", kept, keptJSON}, {"zero", Job{}, `{}`}} {
		b, err := json.Marshal(c.j)
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != c.json {
			t.Errorf("%s: encoding changed:\n got %s\nwant %s", c.name, b, c.json)
		}
		if a, ok := c.j.AppendJSON(nil); ok && string(a) != c.json {
			t.Errorf("%s: AppendJSON's encoding changed:\n got %s\nwant %s", c.name, a, c.json)
		} else if !ok {
			t.Errorf("%s: AppendJSON declined it", c.name)
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

// TestJobAppendJSON: every field of a record is encoded as json.Marshal
// encodes it (a record setting every one of them, an empty one, a
// running record as a kept job's, an ended one with limits, their
// enforcement and usage), and only records json.Marshal must encode are
// declined (a cpus limit in exponent form, a time it refuses).
func TestJobAppendJSON(t *testing.T) {
	code, sig := 3, 9
	at := time.Date(2026, 12, 4, 17, 1, 2, 345678900, time.FixedZone("x", 3600))
	full := Job{
		ID: "0a1b2c3d", Name: "build<1>", Cmd: "echo \"a&b\"", Argv: []string{"echo", "a&b", "\u2028"}, ShellKind: "direct",
		Cwd: "/tmp/ä", Source: "terminal", State: "done", ExitCode: &code, Signal: &sig, Error: "bad\nthing",
		Timeout: 5 * time.Second, Created: at, Started: at.Add(time.Millisecond), Ended: at.Add(time.Second),
		Pid: 4242, PidStart: 1 << 40, BootID: "b00t", StdoutPath: "/s/0a1b2c3d.out", StderrPath: "/s/0a1b2c3d.err",
		StdoutBytes: 10, StderrBytes: 11, StdoutDropped: 12, StderrDropped: 13, Leftover: 2, Quiet: true,
		KillOnTimeout: true, LimitHit: "memory",
		Limits:   limits.Limits{MemoryMB: 512, Pids: 64, CPUs: 1.5, Nofile: 1024},
		LimitsBy: limits.Enforced{"pids": "cgroup", "memory_mb": "cgroup-v1", "nofile": "rlimit", "cpus": "none", "a<b>": "\"&\""},
		Usage:    &limits.Usage{MemoryPeakBytes: 1 << 20, CPUUserMS: 3, CPUSystemMS: 4, OOMKills: 1, PidsRefused: 2, Throttled: 5},
	}
	for name, j := range map[string]Job{
		"full":    full,
		"empty":   {},
		"running": {ID: "deadbeef", Cmd: "true", Argv: []string{"true"}, ShellKind: "direct", State: "running", Created: at, Started: at, Pid: 7, PidStart: 99},
		"zero":    {ExitCode: new(int), Signal: new(int), Argv: []string{}},
		"ended":   {ID: "deadbeef", State: "done", ExitCode: new(int), Usage: &limits.Usage{}, LimitsBy: limits.Enforced{}},
		"limits":  {ID: "a", Limits: limits.Limits{CPUs: 0.000001}},
		"big cpu": {ID: "a", Limits: limits.Limits{CPUs: 1e20}},
	} {
		if !checkJobJSON(t, j) {
			t.Errorf("%s: declined", name)
		}
	}
	// The full record sets every field json.Marshal writes: a field
	// added to Job and not to AppendJSON fails here.
	var m map[string]any
	b, _ := json.Marshal(full)
	json.Unmarshal(b, &m)
	if n, all := len(m), reflect.TypeOf(Job{}).NumField(); n != all {
		t.Errorf("the full record has %d fields in JSON, Job %d: all must be set", n, all)
	}
	for name, j := range map[string]Job{
		"small cpus": {ID: "a", Limits: limits.Limits{CPUs: 1e-7}},
		"huge cpus":  {ID: "a", Limits: limits.Limits{CPUs: 1e21}},
		"NaN cpus":   {ID: "a", Limits: limits.Limits{CPUs: math.NaN()}},
		"year":       {ID: "a", Created: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)},
	} {
		if checkJobJSON(t, j) {
			t.Errorf("%s: encoded, want declined", name)
		}
	}
}

// FuzzJobJSON: AppendJSON agrees with json.Marshal for any strings,
// numbers and times.
func FuzzJobJSON(f *testing.F) {
	f.Add("0a1b2c3d", "n", "echo <a> & 'b'", "x\x00y\xff", "running", "/tmp", int64(5), int64(1e9), int64(-3), uint64(77), true)
	f.Add("", "", "", "", "", "", int64(0), int64(0), int64(0), uint64(0), false)
	f.Fuzz(func(t *testing.T, id, name, cmd, arg, state, cwd string, n, sec, code int64, ps uint64, quiet bool) {
		c, s := int(code), int(code>>8)
		j := Job{ID: id, Name: name, Cmd: cmd, Argv: []string{arg, cmd}, Cwd: cwd, State: state, Error: arg,
			Timeout: time.Duration(n), Created: time.Unix(sec, n), Started: time.Unix(n, sec).UTC(),
			Pid: int(n), PidStart: ps, StdoutBytes: n, StderrDropped: -n, Quiet: quiet, KillOnTimeout: !quiet, LimitHit: name}
		if quiet {
			j.ExitCode, j.Signal, j.Argv = &c, &s, nil
		} else {
			// An ended record's limits, how they were enforced and what
			// it used, of the fuzzed values.
			j.Limits = limits.Limits{MemoryMB: n, Pids: -n, CPUs: float64(code) / float64(sec|1), Nofile: sec}
			j.LimitsBy = limits.Enforced{name: arg, cmd: cwd}
			j.Usage = &limits.Usage{MemoryPeakBytes: n, CPUUserMS: sec, CPUSystemMS: code, OOMKills: -n, Throttled: int64(ps)}
		}
		checkJobJSON(t, j)
	})
}

// BenchmarkJobJSON: AppendJSON of a kept job's running record against
// json.Marshal of it, in the same loop.
func BenchmarkJobJSON(b *testing.B) {
	at := time.Now()
	j := Job{ID: "3fa9c0d1", Cmd: "true", Argv: []string{"true"}, ShellKind: "direct", Cwd: "/home/u/src", Source: "terminal",
		State: "running", Created: at, Started: at, Pid: 4242, PidStart: 123456, BootID: "0b5c3a2e-1d4f-4e6a-9b8c-7d6e5f4a3b2c",
		StdoutPath: "/home/u/.local/state/hive/jobs/3fa9c0d1.out", StderrPath: "/home/u/.local/state/hive/jobs/3fa9c0d1.err", KillOnTimeout: true}
	var app, marshal time.Duration
	buf := make([]byte, 0, 512)
	for b.Loop() {
		t0 := time.Now()
		if _, ok := j.AppendJSON(buf); !ok {
			b.Fatal("declined")
		}
		t1 := time.Now()
		if _, err := json.Marshal(j); err != nil {
			b.Fatal(err)
		}
		app, marshal = app+t1.Sub(t0), marshal+time.Since(t1)
	}
	b.ReportMetric(float64(app.Nanoseconds())/float64(b.N), "append-ns/op")
	b.ReportMetric(float64(marshal.Nanoseconds())/float64(b.N), "marshal-ns/op")
	b.ReportMetric(float64(app)/float64(marshal), "append/marshal")
}
