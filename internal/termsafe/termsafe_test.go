package termsafe

import (
	"bytes"
	"strings"
	"testing"
)

func TestLineAndText(t *testing.T) {
	for _, c := range []struct{ in, line, text string }{
		{"plain ascii", "plain ascii", "plain ascii"},
		{"héllo 世界 🐝", "héllo 世界 🐝", "héllo 世界 🐝"},
		{"\x1b]0;PWNED\a", `\x1b]0;PWNED\x07`, `\x1b]0;PWNED\x07`},
		{"\x1b]52;c;ZWNobyBoaQ==\x1b\\", `\x1b]52;c;ZWNobyBoaQ==\x1b\`, `\x1b]52;c;ZWNobyBoaQ==\x1b\`},
		{"a\nb\tc", `a\nb\tc`, "a\nb\tc"},
		{"safe\rrm -rf", `safe\rrm -rf`, `safe\rrm -rf`},
		{"dos\r\nline", `dos\r\nline`, "dos\r\nline"},
		{"end\r", `end\r`, `end\r`},
		{"del\x7f", `del\x7f`, `del\x7f`},
		{"c1 \u009b31m", `c1 \x9b31m`, `c1 \x9b31m`},
		{"bidi \u202eevil\u2066", `bidi \u202eevil\u2066`, `bidi \u202eevil\u2066`},
		{"bad \xff\xfe utf8", `bad \xff\xfe utf8`, `bad \xff\xfe utf8`},
		{"nul\x00", `nul\x00`, `nul\x00`},
	} {
		if got := Line(c.in); got != c.line {
			t.Errorf("Line(%q) = %q, want %q", c.in, got, c.line)
		}
		if got := Text(c.in); got != c.text {
			t.Errorf("Text(%q) = %q, want %q", c.in, got, c.text)
		}
	}
}

// Nothing Line or Text returns holds a control character, whatever the
// input.
func FuzzEscaped(f *testing.F) {
	f.Add("\x1b[31mred\x1b[0m\r\n\u202e\xff")
	f.Fuzz(func(t *testing.T, s string) {
		for _, out := range []string{Line(s), Text(s)} {
			for _, r := range out {
				if unsafe(r) && r != '\n' && r != '\t' && r != '\r' {
					t.Fatalf("%q escaped is %q: holds %U", s, out, r)
				}
			}
		}
		if strings.ContainsAny(Line(s), "\n\t\r") {
			t.Fatalf("Line(%q) = %q holds a line break or tab", s, Line(s))
		}
	})
}

func TestWriter(t *testing.T) {
	for _, c := range []struct{ in, out string }{
		{"\x1b[1;31mred\x1b[0m plain\n", "\x1b[1;31mred\x1b[0m plain\n"},
		{"\x1b[38:5:196mcolon\x1b[m", "\x1b[38:5:196mcolon\x1b[m"},
		{"progress 10%\rprogress 20%\r\n", "progress 10%\rprogress 20%\r\n"},
		{"title \x1b]0;PWNED\a!", `title \x1b]0;PWNED\x07!`},
		{"move \x1b[2J\x1b[H", `move \x1b[2J\x1b[H`},
		{"clip \x1b]52;c;aGk=\x07", `clip \x1b]52;c;aGk=\x07`},
		{"c1 \u009b2J é \u202e \xff", `c1 \x9b2J é \u202e \xff`},
		{"\x1b[" + strings.Repeat("1;", 40) + "m", `\x1b[` + strings.Repeat("1;", 40) + "m"},
		{"cut at the end \x1b[3", `cut at the end \x1b[3`},
		{"cut utf8 \xe4\xb8", `cut utf8 \xe4\xb8`},
	} {
		// Whole, and a byte a write: the same.
		for _, step := range []int{len(c.in), 1, 3} {
			var b bytes.Buffer
			w := NewWriter(&b)
			for i := 0; i < len(c.in); i += step {
				if n, err := w.Write([]byte(c.in[i:min(i+step, len(c.in))])); err != nil || n != min(step, len(c.in)-i) {
					t.Fatalf("Write: %d, %v", n, err)
				}
			}
			if err := w.Flush(); err != nil {
				t.Fatal(err)
			}
			if b.String() != c.out {
				t.Errorf("Writer(%q) in writes of %d = %q, want %q", c.in, step, b.String(), c.out)
			}
		}
	}
}
