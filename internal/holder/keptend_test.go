package holder

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/hivetools/hive/internal/holder/wire"
	"github.com/hivetools/hive/internal/limits"
)

// checkKeptEnd fails t unless keptEndLine encodes e as json.Marshal does
// (or declines what json.Marshal refuses).
func checkKeptEnd(t testing.TB, e wire.JobEnd) {
	t.Helper()
	want, werr := json.Marshal(wire.Request{Op: wire.OpKeptEnd, ID: e.ID, End: &e, NoReply: true})
	got, ok := keptEndLine(&e)
	switch {
	case !ok && werr == nil:
		t.Fatalf("keptEndLine declined an end json.Marshal encodes: %s", want)
	case ok && werr != nil:
		t.Fatalf("keptEndLine encoded an end json.Marshal refuses (%v): %s", werr, got)
	case ok && !bytes.Equal(got, want):
		t.Fatalf("keptEndLine:\n%s\njson.Marshal:\n%s", got, want)
	}
}

// The kept_end line is json.Marshal's, byte for byte: every field set and
// none, HTML and control characters and invalid UTF-8 in the strings,
// negative numbers, an end time of another zone.
func TestKeptEndLineAgrees(t *testing.T) {
	sig := 9
	ended := time.Date(2026, 12, 3, 15, 4, 5, 123456789, time.UTC)
	for _, e := range []wire.JobEnd{
		{ID: "3fa9c0d1", Exited: true, Ended: ended, Stdout: wire.Counts{Total: 5, InFile: 5}, Usage: &limits.Usage{CPUUserMS: 1}},
		{ID: "3fa9c0d1", Ended: ended},
		{ID: "a<b>&\"c\"\\\x01é\xff", Exited: true, ExitCode: -1, Signal: &sig, Error: "start: fork/exec /bin/<x>: \"no\" \u2028 \x00", Leftover: 3, Stopped: true,
			Ended: ended.In(time.FixedZone("", -7*3600)), Stdout: wire.Counts{Total: 1 << 40, InFile: 8 << 20, Dropped: 1<<40 - 8<<20}, Stderr: wire.Counts{Total: 7, InFile: 7},
			Usage: &limits.Usage{MemoryPeakBytes: 1 << 30, CPUUserMS: 12, CPUSystemMS: 3, MemoryBytes: 5, OOMKills: 2, PidsRefused: 4, Throttled: 6}, LimitHit: "Memory"},
		{ID: "x", Ended: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}, // refused by both
		{ID: "", ExitCode: 255, Usage: &limits.Usage{}},
	} {
		checkKeptEnd(t, e)
	}
}

// FuzzKeptEndLine: whatever the strings, numbers and flags of a job's
// end, its kept_end line is json.Marshal's.
func FuzzKeptEndLine(f *testing.F) {
	f.Add("3fa9c0d1", "", "", int64(0), int64(0), int64(5), int64(1), true, false, int64(1764774245123456789))
	f.Add("a<b>", "err \"x\" \xff", "Pids", int64(-3), int64(9), int64(1<<41), int64(-7), false, true, int64(-1))
	f.Fuzz(func(t *testing.T, id, errText, hit string, code, n1, n2, n3 int64, exited, stopped bool, ns int64) {
		sig := int(n1)
		e := wire.JobEnd{ID: id, Exited: exited, ExitCode: int(code), Error: errText, Leftover: int(n1), Stopped: stopped,
			Ended: time.Unix(0, ns).UTC(), Stdout: wire.Counts{Total: n2, InFile: n3, Dropped: n1}, Stderr: wire.Counts{Total: n3},
			LimitHit: hit}
		if n1%2 == 0 {
			e.Signal = &sig
		}
		if n2%3 != 0 {
			e.Usage = &limits.Usage{MemoryPeakBytes: n1, CPUUserMS: n2, CPUSystemMS: n3, MemoryBytes: code, OOMKills: n1 - n2, PidsRefused: n3 % 5, Throttled: n2 % 7}
		}
		checkKeptEnd(t, e)
	})
}

// BenchmarkKeptEndLine: a short job's kept_end line by keptEndLine and by
// json.Marshal, taking turns in each iteration: line-ns/op, marshal-ns/op
// and their ratio.
func BenchmarkKeptEndLine(b *testing.B) {
	e := wire.JobEnd{ID: "3fa9c0d1", Exited: true, Ended: time.Now(), Stdout: wire.Counts{Total: 12, InFile: 12}, Usage: &limits.Usage{CPUUserMS: 1, MemoryPeakBytes: 4 << 20}}
	var line, marshal time.Duration
	for b.Loop() {
		t0 := time.Now()
		if _, ok := keptEndLine(&e); !ok {
			b.Fatal("declined")
		}
		t1 := time.Now()
		if _, err := json.Marshal(wire.Request{Op: wire.OpKeptEnd, ID: e.ID, End: &e, NoReply: true}); err != nil {
			b.Fatal(err)
		}
		line, marshal = line+t1.Sub(t0), marshal+time.Since(t1)
	}
	b.ReportMetric(float64(line.Nanoseconds())/float64(b.N), "line-ns/op")
	b.ReportMetric(float64(marshal.Nanoseconds())/float64(b.N), "marshal-ns/op")
	b.ReportMetric(float64(line)/float64(marshal), "line/marshal")
}

// checkKeepEnded fails t unless keepEndedLine encodes the keep k with
// end e as json.Marshal does, or declines what keepLine declines or
// json.Marshal refuses.
func checkKeepEnded(t testing.TB, k wire.Kept, e wire.JobEnd) {
	t.Helper()
	want, werr := json.Marshal(wire.Request{Op: wire.OpKeep, Keep: &k, End: &e, NoReply: true})
	_, keepOK := keepLine(&k)
	got, ok := keepEndedLine(&k, &e)
	switch {
	case ok && werr != nil:
		t.Fatalf("keepEndedLine encoded a keep json.Marshal refuses (%v): %s", werr, got)
	case ok && !bytes.Equal(got, want):
		t.Fatalf("keepEndedLine:\n%s\njson.Marshal:\n%s", got, want)
	case !ok && keepOK && werr == nil:
		t.Fatalf("keepEndedLine declined a keep keepLine encodes and an end json.Marshal encodes: %s", want)
	}
}

// The line of a keep that carries its end (protocol 6) is json.Marshal's,
// byte for byte, for the keeps keepLine encodes and any end; a keep it
// declines is declined.
func TestKeepEndedLineAgrees(t *testing.T) {
	sig := 9
	k := sampleKeep(t)
	ended := time.Date(2026, 12, 4, 17, 5, 6, 999, time.UTC)
	for _, e := range []wire.JobEnd{
		{ID: k.Spec.ID, Exited: true, Ended: ended, Stdout: wire.Counts{Total: 5, InFile: 5}, Usage: &limits.Usage{CPUUserMS: 1}},
		{ID: k.Spec.ID, ExitCode: -1, Signal: &sig, Error: "x<\"y\">\xff", Leftover: 2, Stopped: true, Ended: ended.In(time.FixedZone("", 3600)), LimitHit: "Pids"},
		{ID: "", Ended: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}, // refused by both
	} {
		checkKeepEnded(t, k, e)
		checkKeepEnded(t, wire.Kept{Spec: wire.JobSpec{ID: "x"}, Start: wire.JobStart{Pid: 1, Started: ended}}, e)
	}
	declined := k
	declined.Spec.Dir = "/"
	if _, ok := keepEndedLine(&declined, &wire.JobEnd{ID: k.Spec.ID, Ended: ended}); ok {
		t.Error("a keep keepLine declines (a directory) was encoded")
	}
}

// FuzzKeepEndedLine: whatever the keep's and the end's strings, numbers
// and times, the line is json.Marshal's.
func FuzzKeepEndedLine(f *testing.F) {
	f.Add("3fa9c0d1", "/s/x.out", "err", int64(5), int64(1e9), int64(1764774245123456789), true)
	f.Add("", "", "\xff<", int64(-1), int64(0), int64(-1), false)
	f.Fuzz(func(t *testing.T, id, path, errText string, n, sec, ns int64, exited bool) {
		k := wire.Kept{
			Spec:  wire.JobSpec{ID: id, Stdout: path, Stderr: errText, FileCap: n, LeftoverGrace: time.Duration(sec)},
			Start: wire.JobStart{Pid: int(n), Started: time.Unix(sec, n), Cgroup: path},
		}
		e := wire.JobEnd{ID: id, Exited: exited, ExitCode: int(n), Error: errText, Ended: time.Unix(0, ns).UTC(),
			Stdout: wire.Counts{Total: n, InFile: sec}}
		checkKeepEnded(t, k, e)
	})
}
