package pty

import "testing"

func TestStrip(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"plain\r\n", "plain\n"},
		{"\x1b[31mred\x1b[0m\r\n", "red\n"},
		{"a\r\r\nb", "a\nb"},
		{"50%\r60%", "50%\r60%"},
		{"\r\n\x1b[?2004l\rout\r\n\rnext", "\nout\nnext"},
		{"\x1b]0;title ü\x07text", "text"},
		{"\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\", "link"},
		{"\x1b[?2004hbash$ \x1b[?2004l", "bash$ "},
		{"bell\a tab\t", "bell tab\t"},
		{"中文 ü", "中文 ü"},
		{"bad\xffbyte", "badbyte"},
		{"\x1bPq#0;2;0;0;0\x1b\\after", "after"},
		{"\x1b(Bcharset", "charset"},
	} {
		got, used := strip([]byte(c.in), true, true)
		if string(got) != c.want || used != len(c.in) {
			t.Errorf("strip(%q) = %q, %d; want %q, %d", c.in, got, used, c.want, len(c.in))
		}
	}
}

// TestStripSplit checks that stripping in two parts, cut anywhere, gives
// the same text as stripping at once: a cut-off sequence is left unused.
func TestStripSplit(t *testing.T) {
	in := []byte("\rx\x1b[1;31mred\r\n\x1b[?2004l\rout\x1b[0m\r\n中\x1b]0;tïtle\x07y\r\r\nz\r")
	whole, _ := strip(in, true, true)
	for i := 0; i <= len(in); i++ {
		first, used := strip(in[:i], false, true)
		if used > i {
			t.Fatalf("cut %d: used %d", i, used)
		}
		rest, _ := strip(in[used:], true, len(first) == 0 || first[len(first)-1] == '\n')
		if got := string(first) + string(rest); got != string(whole) {
			t.Errorf("cut at %d (used %d): %q, want %q", i, used, got, whole)
		}
	}
}
