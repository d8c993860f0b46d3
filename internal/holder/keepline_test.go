package holder

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/hivetools/hive/internal/holder/wire"
	"github.com/hivetools/hive/internal/limits"
	"github.com/hivetools/hive/internal/store"
)

// checkKeepLine fails t unless keepLine encodes k as json.Marshal does,
// or declines a keep it does not take. It reports whether it encoded.
func checkKeepLine(t testing.TB, k wire.Kept) bool {
	t.Helper()
	want, werr := json.Marshal(wire.Request{Op: wire.OpKeep, Keep: &k, NoReply: true})
	got, ok := keepLine(&k)
	switch {
	case ok && werr != nil:
		t.Fatalf("keepLine encoded a keep json.Marshal refuses (%v): %s", werr, got)
	case ok && !bytes.Equal(got, want):
		t.Fatalf("keepLine:\n%s\njson.Marshal:\n%s", got, want)
	}
	return ok
}

// sampleKeep is a keep as the daemon sends it, its record json.Marshal's.
func sampleKeep(t testing.TB) wire.Kept {
	started := time.Date(2026, 12, 4, 17, 5, 6, 789012345, time.UTC)
	rec, err := json.Marshal(store.Job{ID: "3fa9c0d1", Cmd: "true", Argv: []string{"true"}, ShellKind: "direct", State: "running",
		Source: "terminal", Created: started, Started: started, Pid: 4242, PidStart: 123, StdoutPath: "/s/3fa9c0d1.out", KillOnTimeout: true})
	if err != nil {
		t.Fatal(err)
	}
	return wire.Kept{
		Spec: wire.JobSpec{ID: "3fa9c0d1", Stdout: "/s/3fa9c0d1.out", Stderr: "/s/3fa9c0d1.err", Index: "/s/3fa9c0d1.idx",
			FileCap: 64 << 20, Owner: "own<er>&", LeftoverGrace: 2 * time.Second, Timeout: time.Hour},
		Start:  wire.JobStart{Pid: 4242, PidStart: 123, Started: started, Cgroup: "/sys/fs/cgroup/hive/spare-1"},
		Record: rec,
	}
}

// The keep line is json.Marshal's, byte for byte: every field the daemon
// sets and none, HTML and control characters and invalid UTF-8 in the
// strings, a start of another zone; what the daemon never sends (a
// command, limits) is declined.
func TestKeepLineAgrees(t *testing.T) {
	full := sampleKeep(t)
	odd := full
	odd.Spec.ID, odd.Spec.Stdout, odd.Start.Cgroup = "a<b>&\"c\"\\\x01é\xff", "/tmp/\u2028\x00", "x\ny"
	odd.Start.Started = odd.Start.Started.In(time.FixedZone("", -7*3600))
	odd.Spec.FileCap, odd.Spec.LeftoverGrace, odd.Start.Pid = -1, -5, -2
	for name, k := range map[string]wire.Kept{
		"full":  full,
		"odd":   odd,
		"empty": {},
		"bare":  {Spec: wire.JobSpec{ID: "x"}, Start: wire.JobStart{Pid: 1, Started: time.Now()}},
	} {
		if !checkKeepLine(t, k) {
			t.Errorf("%s: declined", name)
		}
	}
	// The full keep sets every member json.Marshal writes of a keep the
	// daemon sends: a field added to the spec or the start and not to
	// keepLine fails here.
	var m struct {
		Keep struct {
			Spec, Start map[string]any
		}
	}
	b, _ := json.Marshal(wire.Request{Op: wire.OpKeep, Keep: &full, NoReply: true})
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	if len(m.Keep.Spec) != 11 || len(m.Keep.Start) != 4 {
		t.Errorf("the full keep has %d members in its spec and %d in its start, want 11 and 4: %s", len(m.Keep.Spec), len(m.Keep.Start), b)
	}
	// Every field of the spec and the start is either encoded (above) or
	// declined (below; and the spec's EnvTail, never sent): a field added
	// to either fails here until keepLine encodes or declines it.
	if n := reflect.TypeOf(wire.JobSpec{}).NumField(); n != 11+5+1 {
		t.Errorf("wire.JobSpec has %d fields; keepLine knows 17 (11 members, of which path, argv and env only empty; env_ref, env_base, dir, stdin and limits declined; EnvTail)", n)
	}
	if n := reflect.TypeOf(wire.JobStart{}).NumField(); n != 4+1 {
		t.Errorf("wire.JobStart has %d fields; keepLine knows 5 (4 encoded, LimitsBy declined)", n)
	}
	if n := reflect.TypeOf(wire.Kept{}).NumField(); n != 3 {
		t.Errorf("wire.Kept has %d fields; keepLine knows 3", n)
	}
	for name, k := range map[string]wire.Kept{
		"argv":      {Spec: wire.JobSpec{ID: "x", Argv: []string{"true"}}},
		"env":       {Spec: wire.JobSpec{ID: "x", Env: []string{}}},
		"path":      {Spec: wire.JobSpec{ID: "x", Path: "/bin/true"}},
		"env_ref":   {Spec: wire.JobSpec{ID: "x", EnvRef: "e"}},
		"env_base":  {Spec: wire.JobSpec{ID: "x", EnvBase: 1}},
		"dir":       {Spec: wire.JobSpec{ID: "x", Dir: "/"}},
		"stdin":     {Spec: wire.JobSpec{ID: "x", Stdin: []byte{}}},
		"limits":    {Spec: wire.JobSpec{ID: "x", Limits: &limits.Limits{Pids: 5}}},
		"limits_by": {Spec: wire.JobSpec{ID: "x"}, Start: wire.JobStart{LimitsBy: limits.Enforced{"pids": "cgroup"}}},
		"year":      {Spec: wire.JobSpec{ID: "x"}, Start: wire.JobStart{Started: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}},
	} {
		if checkKeepLine(t, k) {
			t.Errorf("%s: encoded, want declined", name)
		}
	}
}

// FuzzKeepLine: keepLine agrees with json.Marshal for any strings,
// numbers, times and records json.Marshal wrote.
func FuzzKeepLine(f *testing.F) {
	f.Add("3fa9c0d1", "/s/x.out", "own<er>", "/cg", "true", int64(5), int64(1e9), uint64(9), true)
	f.Add("", "", "", "", "", int64(0), int64(0), uint64(0), false)
	f.Fuzz(func(t *testing.T, id, path, owner, cg, cmd string, n, sec int64, ps uint64, rec bool) {
		k := wire.Kept{
			Spec: wire.JobSpec{ID: id, Stdout: path, Stderr: cmd, Index: owner, FileCap: n, Owner: owner,
				LeftoverGrace: time.Duration(sec), Timeout: time.Duration(-n)},
			Start: wire.JobStart{Pid: int(n), PidStart: ps, Started: time.Unix(sec, n), Cgroup: cg},
		}
		if rec {
			b, err := json.Marshal(store.Job{ID: id, Cmd: cmd, Argv: []string{cmd, path}, Cwd: path, Pid: int(n), Started: time.Unix(n, sec)})
			if err != nil {
				return
			}
			k.Record = b
		}
		checkKeepLine(t, k)
	})
}

// BenchmarkKeepLine: keepLine against json.Marshal of the same keep, in
// the same loop.
func BenchmarkKeepLine(b *testing.B) {
	k := sampleKeep(b)
	var line, marshal time.Duration
	for b.Loop() {
		t0 := time.Now()
		if _, ok := keepLine(&k); !ok {
			b.Fatal("declined")
		}
		t1 := time.Now()
		if _, err := json.Marshal(wire.Request{Op: wire.OpKeep, Keep: &k, NoReply: true}); err != nil {
			b.Fatal(err)
		}
		line, marshal = line+t1.Sub(t0), marshal+time.Since(t1)
	}
	b.ReportMetric(float64(line.Nanoseconds())/float64(b.N), "line-ns/op")
	b.ReportMetric(float64(marshal.Nanoseconds())/float64(b.N), "marshal-ns/op")
	b.ReportMetric(float64(line)/float64(marshal), "line/marshal")
}
