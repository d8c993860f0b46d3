package jsonenc

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"
)

// checkString fails t unless AppendString quotes s as json.Marshal does.
func checkString(t testing.TB, s string) {
	t.Helper()
	want, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	if got := AppendString([]byte("x"), s); !bytes.Equal(got[1:], want) || got[0] != 'x' {
		t.Fatalf("AppendString(%q) = %s, json.Marshal: %s", s, got[1:], want)
	}
}

// What json.Marshal escapes, AppendString escapes alike: HTML's three,
// every control byte, quote and backslash, invalid UTF-8 (a lone byte, a
// cut sequence, a surrogate), U+2028 and U+2029; the rest as it is.
func TestAppendString(t *testing.T) {
	var all []byte
	for c := 0; c < 0x80; c++ {
		all = append(all, byte(c))
	}
	for _, s := range []string{
		"", "plain ascii 123", string(all), `<script>&"\'`, "tab\tnl\nbs\bff\f cr\r \x00\x1f\x7f",
		"é ü 日本 🐝", "\u2028\u2029 x \u2027\u202a", "\xff", "a\xc3", "\xe2\x80", "\xed\xa0\x80", "\xf4\x90\x80\x80",
		"ok\xffok\xfe<\u2028>", "\ufffd",
	} {
		checkString(t, s)
	}
}

// FuzzAppendString: whatever the bytes, json.Marshal's quoting.
func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", "a<b>&c", "\x00\n\u2028\xff", "日本\xe2\x80"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) { checkString(t, s) })
}

// Compact marshals as itself, nil as null: inside a value json.Marshal
// encodes, it is the bytes it holds.
func TestCompactMarshals(t *testing.T) {
	got, err := json.Marshal(map[string]any{"a": Compact(`{"b":[1,"<"]}`), "n": Compact(nil)})
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"a":{"b":[1,"\u003c"]},"n":null}`; string(got) != want {
		t.Fatalf("got %s, want %s", got, want)
	}
}

// BenchmarkAppendString: a command's output line quoted by AppendString
// and by json.Marshal, taking turns: direct-ns/op, marshal-ns/op and
// their ratio.
func BenchmarkAppendString(b *testing.B) {
	s := "ok  \tgithub.com/hivetools/hive/internal/jsonenc\t0.004s <coverage: 100%> é\n"
	var direct, lib time.Duration
	buf := make([]byte, 0, 256)
	for b.Loop() {
		t0 := time.Now()
		buf = AppendString(buf[:0], s)
		t1 := time.Now()
		if _, err := json.Marshal(s); err != nil {
			b.Fatal(err)
		}
		direct, lib = direct+t1.Sub(t0), lib+time.Since(t1)
	}
	b.ReportMetric(float64(direct.Nanoseconds())/float64(b.N), "direct-ns/op")
	b.ReportMetric(float64(lib.Nanoseconds())/float64(b.N), "marshal-ns/op")
	b.ReportMetric(float64(direct)/float64(lib), "direct/marshal")
}
