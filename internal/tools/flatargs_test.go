package tools

import (
	"encoding/json"
	"fmt"
	"reflect"
	"testing"
	"time"
)

// flatTools are the tools whose arguments may go the flat way, with a
// check that decodeArgs and decodeArgsLibrary agree on args, and a way
// to ask whether the flat way took them.
type flatTool struct {
	name  string
	agree func(t testing.TB, args []byte)
	takes func(args []byte) bool
}

func flatToolFor[In any](tb testing.TB) flatTool {
	var sc *toolSchemas
	for _, ft := range fuzzTools(tb) {
		if ft.name == reflect.TypeFor[In]().String() {
			sc = ft.sc
		}
	}
	if sc == nil || sc.check == nil {
		tb.Fatalf("%v: no schema check", reflect.TypeFor[In]())
	}
	return flatTool{
		name: reflect.TypeFor[In]().String(),
		agree: func(t testing.TB, args []byte) {
			t.Helper()
			got, gerr := decodeArgs[In](args, sc)
			want, werr := decodeArgsLibrary[In](args, sc)
			if fmt.Sprint(gerr) != fmt.Sprint(werr) || !reflect.DeepEqual(got, want) {
				t.Fatalf("%v %q: decodeArgs %+v, %v; the library's way %+v, %v", reflect.TypeFor[In](), args, got, gerr, want, werr)
			}
		},
		takes: func(args []byte) bool {
			var in In
			flat, ok := scanFlat(args, nil)
			return ok && sc.check.checkFlat(flat) && any(&in).(flatDecoder).setFlat(flat)
		},
	}
}

// The commonest arguments of terminal_exec and run go the flat way and
// decode as the library decodes them; everything the flat way does not
// read exactly as the library would is declined (and then decoded, or
// refused with its error, by the library).
func TestFlatArgs(t *testing.T) {
	exec, run := flatToolFor[execIn](t), flatToolFor[runIn](t)
	for _, tc := range []struct {
		tool flatTool
		args string
		take bool
	}{
		{exec, `{"cmd":"true"}`, true},
		{exec, ` { "cmd" : "make test -j4" , "cwd":"/tmp/é x", "timeout_sec": 2.5, "max_output_kb":64, "shell":true } `, true},
		{exec, `{"cmd":"ls","shell":"zsh","auto_background_after_sec":0,"stdin":"a b","timeout_sec":null,"max_output_kb":null}`, true},
		{exec, `{"cmd":"ls","shell":false,"timeout_sec":-0,"auto_background_after_sec":1e2}`, true},
		{exec, "{\"cmd\":\"ls\"\n,\t\"shell\":\"\"}\r\n", true},
		{run, `{"cmd":"true","wait_seconds":10}`, true},
		{run, `{"cmd":"sleep 1","name":"build-1","timeout_secs":0.5}`, true},
		{exec, `{}`, false},                                   // cmd is required: its error
		{exec, `{"cmd":"a\"b"}`, false},                       // an escape
		{exec, `{"cmd":"a\u0041"}`, false},                    // an escape
		{exec, "{\"cmd\":\"a\tb\"}", false},                   // a control byte: the library refuses it
		{exec, "{\"cmd\":\"\xff\"}", false},                   // invalid UTF-8: the library makes it U+FFFD
		{exec, `{"cmd":"x","cmd":"y"}`, false},                // a key twice
		{exec, `{"cmd":"x","env":{"A":"1"}}`, false},          // nested
		{exec, `{"cmd":"x","limits":{"cpus":1}}`, false},      // nested
		{exec, `{"cmd":"x","bogus":1}`, false},                // unknown: its error
		{exec, `{"CMD":"x"}`, false},                          // case: the library's verdict
		{exec, `{"cmd":5}`, false},                            // type: its error
		{exec, `{"cmd":null}`, false},                         // type: its error
		{exec, `{"cmd":"x","max_output_kb":80.0}`, false},     // an integer written otherwise
		{exec, `{"cmd":"x","max_output_kb":8e1}`, false},      // an integer written otherwise
		{exec, `{"cmd":"x","max_output_kb":1.5}`, false},      // not an integer: its error
		{exec, `{"cmd":"x","timeout_sec":1e400}`, false},      // out of range: its error
		{exec, `{"cmd":"x","max_output_kb":1e19}`, false},     // out of range: its error
		{exec, `{"cmd":"x","timeout_sec":01}`, false},         // not JSON
		{exec, `{"cmd":"x","timeout_sec":-}`, false},          // not JSON
		{exec, `{"cmd":"x","timeout_sec":1.}`, false},         // not JSON
		{exec, `{"cmd":"x","shell":1}`, false},                // type: its error
		{exec, `{"cmd":"x",}`, false},                         // not JSON
		{exec, `{"cmd":"x"} x`, false},                        // not JSON
		{exec, `{"cmd":"x"`, false},                           // not JSON
		{exec, `{"cmd":tru}`, false},                          // not JSON
		{exec, `["cmd"]`, false},                              // not an object
		{run, `{"cmd":"x","wait_seconds":"10"}`, false},       // type: its error
		{run, `{"cmd":"x","limits":{"memory_mb":64}}`, false}, // nested
	} {
		if got := tc.tool.takes([]byte(tc.args)); got != tc.take {
			t.Errorf("%s %s: the flat way took it: %v, want %v", tc.tool.name, tc.args, got, tc.take)
		}
		tc.tool.agree(t, []byte(tc.args))
	}
}

// FuzzFlatArgsAgree: whatever the arguments, terminal_exec's and run's
// decodeArgs give what the library's way gives: the same value, or the
// same error.
func FuzzFlatArgsAgree(f *testing.F) {
	tools := []flatTool{flatToolFor[execIn](f), flatToolFor[runIn](f)}
	for _, s := range []string{`{"cmd":"true"}`, `{"cmd":"x","timeout_sec":2.5,"max_output_kb":64,"shell":"bash"}`,
		`{"cmd":"x","wait_seconds":10,"name":"n"}`, `{"cmd":"x","max_output_kb":80.0}`, `{"cmd":"x","cmd":"y"}`, `{"cmd":"\u00e9"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, args []byte) {
		for _, tt := range tools {
			tt.agree(t, args)
		}
	})
}

// BenchmarkDecodeArgs: terminal_exec's commonest arguments decoded the
// flat way and the library's way, taking turns: flat-ns/op,
// library-ns/op and their ratio.
func BenchmarkDecodeArgs(b *testing.B) {
	var sc *toolSchemas
	for _, ft := range fuzzTools(b) {
		if ft.name == reflect.TypeFor[execIn]().String() {
			sc = ft.sc
		}
	}
	args := json.RawMessage(`{"cmd":"go test ./...","timeout_sec":300}`)
	var flat, lib time.Duration
	for b.Loop() {
		t0 := time.Now()
		if _, err := decodeArgs[execIn](args, sc); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		if _, err := decodeArgsLibrary[execIn](args, sc); err != nil {
			b.Fatal(err)
		}
		flat, lib = flat+t1.Sub(t0), lib+time.Since(t1)
	}
	b.ReportMetric(float64(flat.Nanoseconds())/float64(b.N), "flat-ns/op")
	b.ReportMetric(float64(lib.Nanoseconds())/float64(b.N), "library-ns/op")
	b.ReportMetric(float64(flat)/float64(lib), "flat/library")
}
