package tools

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/hivetools/hive/internal/limits"
)

// checkEnvelopeJSON fails t unless e.AppendJSON is json.Marshal(e), and
// marshalOutput gives the same bytes.
func checkEnvelopeJSON(t testing.TB, e Envelope) {
	t.Helper()
	want, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	if got := e.AppendJSON(nil); string(got) != string(want) {
		t.Fatalf("AppendJSON:\n%s\njson.Marshal:\n%s", got, want)
	}
	if got, err := marshalOutput(e); err != nil || string(got) != string(want) {
		t.Fatalf("marshalOutput: %s, %v; want %s", got, err, want)
	}
}

// terminal_exec's answer written directly is json.Marshal's: every
// pointer nil and set, strings with what JSON escapes, the limits' map
// (sorted keys, escaped too), the usage known (even all 0) and not.
func TestEnvelopeAppendJSON(t *testing.T) {
	code, handle, msg, warn, id := 3, "h-<1>", "exit 3 & \"more\"\n", "rm -rf \u2028 \xff", "ab12cd34"
	full := Envelope{jobState: jobState{Status: "done", ExitCode: &code}, Stdout: "a<b>&c\x00\x1f\t\n", Stderr: "é 日本 \u2029",
		StdoutTruncatedBytes: 1 << 40, StderrTruncatedBytes: -1, RuntimeMs: 12, Pid: 4242, OutputHandle: &handle, TimedOut: true,
		SemanticStatus: "error", SemanticMessage: &msg, Warning: &warn, AutoBackgrounded: true, JobID: &id, ShellKind: "bash", AutoShell: true,
		limitsOut: limitsOut{LimitHit: "memory", LimitsEnforcedBy: limits.Enforced{"memory_mb": "cgroup", "cpus": "cgroup<v1>", "a&b": "x"},
			Usage: usageOut{Usage: limits.Usage{MemoryPeakBytes: 9, CPUUserMS: 1, OOMKills: 2, Throttled: 4}, known: true}},
		stdoutUnkept: 5}
	// full sets every field, so a field added to Envelope (or to what it
	// embeds) and not to AppendJSON fails here.
	var got map[string]any
	raw, _ := json.Marshal(full)
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatal(err)
	}
	for _, name := range jsonFieldNames(reflect.TypeFor[Envelope]()) {
		if _, ok := got[name]; !ok {
			t.Errorf("the full envelope leaves %q out: set it (and see that AppendJSON writes it)", name)
		}
	}
	for _, e := range []Envelope{
		{},
		{jobState: jobState{Status: "done", ExitCode: new(int)}, SemanticStatus: "ok", ShellKind: "direct", limitsOut: limitsOut{Usage: usageOut{known: true}}},
		full,
		{jobState: jobState{Status: "running"}, AutoBackgrounded: true, JobID: &id, limitsOut: limitsOut{LimitsEnforcedBy: limits.Enforced{}}},
	} {
		checkEnvelopeJSON(t, e)
	}
}

// jsonFieldNames are the JSON names of t's fields, those of embedded
// structs included, as encoding/json names them.
func jsonFieldNames(t reflect.Type) []string {
	var names []string
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case name == "-":
		case f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct:
			names = append(names, jsonFieldNames(f.Type)...)
		case !f.IsExported():
		case name == "":
			names = append(names, f.Name)
		default:
			names = append(names, name)
		}
	}
	return names
}

// FuzzEnvelopeJSON: whatever the strings and counts, json.Marshal's bytes.
func FuzzEnvelopeJSON(f *testing.F) {
	f.Add("done", "out <&>", "err \xff", "msg\u2028", "cpus", "cgroup", int64(0), int64(-3), 7, true, uint8(0xff))
	f.Add("", "", "", "", "", "", int64(1<<62), int64(0), -1, false, uint8(0))
	f.Fuzz(func(t *testing.T, status, stdout, stderr, msg, key, val string, n, m int64, code int, flag bool, set uint8) {
		e := Envelope{jobState: jobState{Status: status}, Stdout: stdout, Stderr: stderr, StdoutTruncatedBytes: n, StderrTruncatedBytes: m,
			RuntimeMs: n ^ m, Pid: code, TimedOut: flag, SemanticStatus: msg, AutoBackgrounded: !flag, ShellKind: key, AutoShell: flag}
		if set&1 != 0 {
			e.ExitCode = &code
		}
		if set&2 != 0 {
			e.OutputHandle, e.JobID = &key, &val
		}
		if set&4 != 0 {
			e.SemanticMessage, e.Warning = &msg, &stderr
		}
		if set&8 != 0 {
			e.LimitHit = val
		}
		if set&16 != 0 {
			e.LimitsEnforcedBy = limits.Enforced{key: val, val: msg, "cpus": stdout}
		}
		if set&32 != 0 {
			e.Usage = usageOut{Usage: limits.Usage{MemoryPeakBytes: n, CPUUserMS: m, CPUSystemMS: n - m, MemoryBytes: int64(code), OOMKills: m, PidsRefused: int64(set), Throttled: n}, known: true}
		}
		checkEnvelopeJSON(t, e)
	})
}

// BenchmarkEnvelopeJSON: a short command's answer written directly and
// by json.Marshal, taking turns: direct-ns/op, marshal-ns/op and their
// ratio.
func BenchmarkEnvelopeJSON(b *testing.B) {
	msg := "Command completed successfully"
	e := Envelope{jobState: jobState{Status: "done", ExitCode: new(int)}, RuntimeMs: 1, Pid: 4242, SemanticStatus: "ok", SemanticMessage: &msg,
		ShellKind: "direct", limitsOut: limitsOut{LimitsEnforcedBy: limits.Enforced{"memory_mb": "cgroup"}, Usage: usageOut{known: true}}}
	var direct, lib time.Duration
	buf := make([]byte, 0, 512)
	for b.Loop() {
		t0 := time.Now()
		buf = e.AppendJSON(buf[:0])
		t1 := time.Now()
		if _, err := json.Marshal(e); err != nil {
			b.Fatal(err)
		}
		direct, lib = direct+t1.Sub(t0), lib+time.Since(t1)
	}
	b.ReportMetric(float64(direct.Nanoseconds())/float64(b.N), "direct-ns/op")
	b.ReportMetric(float64(lib.Nanoseconds())/float64(b.N), "marshal-ns/op")
	b.ReportMetric(float64(direct)/float64(lib), "direct/marshal")
}

// renderEnvelopePrinted is renderEnvelope as it was printed with fmt,
// the form TestRenderEnvelope holds the appended one to.
func renderEnvelopePrinted(e Envelope, withOutput bool) string {
	var b strings.Builder
	switch {
	case e.AutoBackgrounded:
		fmt.Fprintf(&b, "auto-backgrounded as job %s (pid %d) after %dms", *e.JobID, e.Pid, e.RuntimeMs)
	case e.ExitCode != nil:
		fmt.Fprintf(&b, "exit %d (%s", *e.ExitCode, e.SemanticStatus)
		if e.SemanticMessage != nil {
			fmt.Fprintf(&b, ": %s", *e.SemanticMessage)
		}
		fmt.Fprintf(&b, ") in %dms", e.RuntimeMs)
	default:
		fmt.Fprintf(&b, "%s", e.SemanticStatus)
		if e.SemanticMessage != nil {
			fmt.Fprintf(&b, ": %s", *e.SemanticMessage)
		}
	}
	if e.Warning != nil {
		fmt.Fprintf(&b, "\nwarning: %s", *e.Warning)
	}
	if withOutput {
		b.WriteString(e.limitsOut.text())
	}
	for _, s := range []struct {
		name, data  string
		cut, unkept int64
	}{{"stdout", e.Stdout, e.StdoutTruncatedBytes, e.stdoutUnkept}, {"stderr", e.Stderr, e.StderrTruncatedBytes, e.stderrUnkept}} {
		switch {
		case s.data == "":
		case withOutput:
			fmt.Fprintf(&b, "\n--- %s ---\n%s", s.name, s.data)
		case s.cut > 0 && s.unkept > 0:
			fmt.Fprintf(&b, "\n%s: %d bytes shown in structuredContent, %d more in output_handle %s, %d not kept (see semantic_message)", s.name, len(s.data), max(s.cut-s.unkept, 0), *e.OutputHandle, s.unkept)
		case s.cut > 0:
			fmt.Fprintf(&b, "\n%s: %d bytes shown in structuredContent, %d more in output_handle %s", s.name, len(s.data), s.cut, *e.OutputHandle)
		default:
			fmt.Fprintf(&b, "\n%s: %d bytes in structuredContent", s.name, len(s.data))
		}
	}
	return b.String()
}

// terminal_exec's text block, appended, is what fmt printed: each
// outcome (backgrounded, exited, neither), with and without a message,
// a warning, output (kept whole, cut, cut and partly not kept), the
// text form with limits and usage.
func TestRenderEnvelope(t *testing.T) {
	code, neg, handle, msg, warn, id := 0, -1, "h1", "Command failed <x> \xff", "rm -rf", "ab12cd34"
	var cases []Envelope
	for _, base := range []Envelope{
		{jobState: jobState{ExitCode: &code}, SemanticStatus: "ok", RuntimeMs: 3},
		{jobState: jobState{ExitCode: &neg}, SemanticStatus: "error", SemanticMessage: &msg, RuntimeMs: -2},
		{SemanticStatus: "timed_out", SemanticMessage: &msg},
		{SemanticStatus: ""},
		{AutoBackgrounded: true, JobID: &id, Pid: 4242, RuntimeMs: 30000},
	} {
		for _, out := range []Envelope{
			{},
			{Stdout: "hello\n", Stderr: "é"},
			{Stdout: "head…tail", StdoutTruncatedBytes: 100, Stderr: "x", StderrTruncatedBytes: 5, stderrUnkept: 9, OutputHandle: &handle},
			{Stdout: "a", StdoutTruncatedBytes: 7, stdoutUnkept: 3, Stderr: "b", StderrTruncatedBytes: -4, OutputHandle: &handle},
		} {
			e := base
			e.Stdout, e.Stderr, e.StdoutTruncatedBytes, e.StderrTruncatedBytes = out.Stdout, out.Stderr, out.StdoutTruncatedBytes, out.StderrTruncatedBytes
			e.stdoutUnkept, e.stderrUnkept, e.OutputHandle = out.stdoutUnkept, out.stderrUnkept, out.OutputHandle
			cases = append(cases, e)
			e.Warning = &warn
			e.limitsOut = limitsOut{LimitsEnforcedBy: limits.Enforced{"memory_mb": "cgroup"}, Usage: usageOut{Usage: limits.Usage{CPUUserMS: 4, MemoryPeakBytes: 3 << 20}, known: true}}
			cases = append(cases, e)
		}
	}
	for i, e := range cases {
		for _, withOutput := range []bool{false, true} {
			if got, want := renderEnvelope(e, withOutput), renderEnvelopePrinted(e, withOutput); got != want {
				t.Errorf("case %d (withOutput %v):\n%q\nprinted:\n%q", i, withOutput, got, want)
			}
		}
	}
}
