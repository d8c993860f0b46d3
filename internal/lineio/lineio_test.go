package lineio

import (
	"bufio"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// step is one call and what it gives: the line, or the error's text.
type step struct {
	line string
	err  string
}

func run(t *testing.T, r *bufio.Reader, max int, skip bool, want []step) {
	t.Helper()
	for i, w := range want {
		var line []byte
		var err error
		if skip {
			line, err = ReadSkip(r, max)
		} else {
			line, err = Read(r, max)
		}
		got := step{line: string(line)}
		if err != nil {
			got.err = err.Error()
		}
		if got != w {
			t.Fatalf("call %d: %q, %q; want %q, %q", i+1, got.line, got.err, w.line, w.err)
		}
	}
}

func TestRead(t *testing.T) {
	long := strings.Repeat("x", 100)
	tests := []struct {
		name string
		in   string
		max  int
		skip bool
		want []step
	}{
		{"lines", "a\nbc\n", 10, false, []step{{"a\n", ""}, {"bc\n", ""}, {"", "EOF"}}},
		{"last line without newline", "a\nlast", 10, false, []step{{"a\n", ""}, {"last", "EOF"}}},
		{"empty input", "", 10, false, []step{{"", "EOF"}}},
		{"longer than the buffer, within max", long + "\nb\n", 101, false, []step{{long + "\n", ""}, {"b\n", ""}}},
		{"exactly max with its newline", "abcd\n", 5, false, []step{{"abcd\n", ""}}},
		{"one past max", "abcde\nnext\n", 5, false, []step{{"", "line longer than 5 bytes"}, {"next\n", ""}}},
		// Read leaves the rest of a long line unread.
		{"long, rest unread", long + "\nnext\n", 20, false, []step{{"", "line longer than 20 bytes"}}},
		{"long last line without newline", long, 20, false, []step{{"", "line longer than 20 bytes"}}},
		// ReadSkip reads on to the next line, never into it.
		{"skip a long line", long + "\nnext\n", 20, true, []step{{"", "line longer than 20 bytes"}, {"next\n", ""}, {"", "EOF"}}},
		{"skip a long line within one read", "abcdefg\nnext\n", 5, true, []step{{"", "line longer than 5 bytes"}, {"next\n", ""}}},
		{"skip a long last line", long, 20, true, []step{{"", "line longer than 20 bytes"}, {"", "EOF"}}},
		{"skip two long lines", long + "\n" + long + "\nok\n", 20, true,
			[]step{{"", "line longer than 20 bytes"}, {"", "line longer than 20 bytes"}, {"ok\n", ""}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// The smallest buffer bufio allows, so lines span reads.
			r := bufio.NewReaderSize(strings.NewReader(tt.in), 16)
			run(t, r, tt.max, tt.skip, tt.want)
		})
	}
}

// One byte a read: every line is put together from many.
func TestReadOneByteAtATime(t *testing.T) {
	r := bufio.NewReaderSize(iotest.OneByteReader(strings.NewReader("hello, world\n"+strings.Repeat("y", 40)+"\nz\n")), 16)
	run(t, r, 30, true, []step{{"hello, world\n", ""}, {"", "line longer than 30 bytes"}, {"z\n", ""}})
}

// A read error in a line comes with what was read of it; it is no
// *TooLongError.
func TestReadError(t *testing.T) {
	boom := errors.New("boom")
	r := bufio.NewReaderSize(io.MultiReader(strings.NewReader("part"), iotest.ErrReader(boom)), 16)
	line, err := Read(r, 10)
	if string(line) != "part" || !errors.Is(err, boom) {
		t.Fatalf("%q, %v; want \"part\", boom", line, err)
	}
	// While a long line is skipped, the error ends the skip.
	r = bufio.NewReaderSize(io.MultiReader(strings.NewReader(strings.Repeat("x", 50)), iotest.ErrReader(boom)), 16)
	if _, err := ReadSkip(r, 10); !errors.Is(err, boom) {
		t.Fatalf("skip: %v, want boom", err)
	}
}

// endless gives 'x' for ever and counts what it gave.
type endless struct{ n int }

func (e *endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'x'
	}
	e.n += len(p)
	return len(p), nil
}

// A peer that never ends its line makes Read hold no more than the limit
// and a buffer.
func TestReadBounded(t *testing.T) {
	src := &endless{}
	r := bufio.NewReaderSize(src, 4096)
	_, err := Read(r, 1<<20)
	var tl *TooLongError
	if !errors.As(err, &tl) || tl.Limit != 1<<20 {
		t.Fatalf("err %v, want a *TooLongError of 1 MiB", err)
	}
	if src.n > 1<<20+4096 {
		t.Errorf("read %d bytes of an endless line with a 1 MiB limit", src.n)
	}
}
