package dashboard

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hivetools/hive/internal/output"
)

// mark is an index mark as an Interleave writes it (output.MarkSize).
func mark(stream int, cut bool, off0, off1 int64) []byte {
	b := make([]byte, output.MarkSize)
	w := uint64(off0)
	if stream == 1 {
		w |= 1 << 63
	}
	if cut {
		w |= 1 << 62
	}
	binary.LittleEndian.PutUint64(b, w)
	binary.LittleEndian.PutUint64(b[8:], uint64(off1))
	binary.LittleEndian.PutUint64(b[16:], uint64(time.Unix(1e9, 0).UnixNano()))
	return b
}

// The merged log follows the index's marks; where the index is cut,
// missing, or bad (a mark that goes back, or past a stream's end: a
// corrupt or planted file), the rest is stdout then stderr. Whatever
// the index, every byte comes once, and a range read from any offset,
// of any size, agrees with the whole.
func TestReadLogIndex(t *testing.T) {
	const out, errs = "aaaa\nbbbb\n", "EEEE\n"
	for _, tc := range []struct {
		name  string
		marks [][]byte // nil: no index file
		want  string
	}{
		{"ordered", [][]byte{mark(0, false, 0, 0), mark(1, false, 5, 0), mark(0, false, 5, 5)}, "0aaaa\n1EEEE\n0bbbb\n"},
		{"no index", nil, "0aaaa\nbbbb\n1EEEE\n"},
		{"cut", [][]byte{mark(0, false, 0, 0), mark(0, true, 5, 0)}, "0aaaa\nbbbb\n1EEEE\n"},
		{"past the end", [][]byte{mark(0, false, 0, 0), mark(1, false, 5, 0), mark(0, false, 5, 99)}, "0aaaa\nbbbb\n1EEEE\n"},
		{"going back", [][]byte{mark(0, false, 0, 0), mark(1, false, 5, 0), mark(0, false, 3, 5)}, "0aaaa\nbbbb\n1EEEE\n"},
		{"bad first", [][]byte{mark(1, false, 7, 9)}, "0aaaa\nbbbb\n1EEEE\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			var files output.Files
			for i, s := range []string{out, errs} {
				p := filepath.Join(dir, []string{"out", "err"}[i])
				if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
					t.Fatal(err)
				}
				f, err := os.Open(p)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { f.Close() })
				files[i] = f
			}
			idx := filepath.Join(dir, "idx")
			if tc.marks != nil {
				var b []byte
				for _, m := range tc.marks {
					b = append(b, m...)
				}
				if err := os.WriteFile(idx, b, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			l := &logSource{src: files, idx: idx, snap: output.FileSnapshot(idx, [2]int64{int64(len(out)), int64(len(errs))})}
			whole, err := readLog(l, 0, 1<<20, false)
			if err != nil {
				t.Fatal(err)
			}
			var got, plain strings.Builder
			for _, s := range whole.Segments {
				got.WriteString(string(rune('0' + s.Stream)))
				got.WriteString(s.Data)
				plain.WriteString(s.Data)
			}
			if merged := strings.NewReplacer("0", "", "1", "").Replace(tc.want); plain.String() != merged || !whole.EOF || whole.Next != 15 {
				t.Errorf("the whole log %q (next %d, eof %v), want %q", plain.String(), whole.Next, whole.EOF, merged)
			}
			if g := squash(got.String()); g != tc.want {
				t.Errorf("the segments %q, want %q", g, tc.want)
			}
			for off := int64(0); off < 15; off++ {
				for _, n := range []int{1, 2, 3, 7} {
					var b strings.Builder
					for at := off; at < 15; {
						r, err := readLog(l, at, n, false)
						if err != nil || r.Next <= at {
							t.Fatalf("from %d by %d: at %d: %+v %v", off, n, at, r, err)
						}
						for _, s := range r.Segments {
							b.WriteString(s.Data)
						}
						at = r.Next
					}
					if want := plain.String()[off:]; b.String() != want {
						t.Fatalf("from %d by %d: %q, want %q", off, n, b.String(), want)
					}
				}
			}
		})
	}
}

// squash drops a stream digit that repeats the one before (segments of
// one stream in a row read as one).
func squash(s string) string {
	var b strings.Builder
	last := byte(0)
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '0' || c == '1' {
			if c == last {
				continue
			}
			last = c
		}
		b.WriteByte(c)
	}
	return b.String()
}
