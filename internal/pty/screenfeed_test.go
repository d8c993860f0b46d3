//go:build unix

package pty

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/vt"
)

// screenOf is everything of an emulator's screen a reader of it sees:
// every cell (content and style), the cursor, the alternate screen.
func screenOf(e *vt.Emulator) string {
	var b strings.Builder
	for y := 0; y < e.Height(); y++ {
		for x := 0; x < e.Width(); x++ {
			if c := e.CellAt(x, y); c != nil {
				fmt.Fprintf(&b, "%q%v|", c.Content, c.Style)
			} else {
				b.WriteString("nil|")
			}
		}
		b.WriteByte('\n')
	}
	fmt.Fprintf(&b, "cursor %v alt %v", e.CursorPosition(), e.IsAltScreen())
	return b.String()
}

// pieces of output a program may print, plain and not.
var feedPieces = []string{
	"plain line\r\n", "x\r\n", "a longer line of output that wraps past the width of the screen for sure\r\n",
	"\r\n", "no newline ", "tab\there\r\n", "back\bspace\r\n", "ünïcödé ✓ 漢字\r\n", "”quoted”\r\n",
	"\x1b[31mred\x1b[0m\r\n", "\x1b[1;32mbold green ", "\x1b]0;a title\x07", "\x1b]0;title ✓\x1b\\",
	"\x1b(0lqk\x1b(B\r\n", "\x1b[2J", "\x1b[H", "\x1b[5;10H", "\x1b[3A", "\x1b[K", "\x1b[2;5r", "\x1b[r",
	"\x1b[?1049h", "\x1b[?1049l", "\x1b[?6h", "\x1b[?6l", "\x1b[?69h\x1b[3;20s", "\x1b[s", "\x1b[u",
	"\x1bc", "\x1b[?2004h", "\x1bP1$r0m\x1b\\", "\xc2\x9b5r", "\x9b", "\xe2\x80", "\x07", "\x1b7", "\x1b8",
	"\x1bM", "\x1bD", "\x1b[10S", "\x1b[4L", "\x1b[20h", "\x1b[20l", "bare\n\n\n", "\x1b[2;90r",
}

// feedBoth feeds chunks to one emulator directly and to another through
// a screenFeed, and fails if their screens differ at any chunk's end.
func feedBoth(t *testing.T, cols, rows int, chunks [][]byte) *screenFeed {
	t.Helper()
	direct, fed := vt.NewEmulator(cols, rows), vt.NewEmulator(cols, rows)
	var f screenFeed
	d := screenFeed{noSkip: true} // every byte, with the same amends of regions
	for i, c := range chunks {
		d.write(direct, c)
		f.write(fed, c)
		if a, b := screenOf(direct), screenOf(fed); a != b {
			t.Fatalf("after chunk %d of %d (%q...): the screens differ\ndirect:\n%s\nfed:\n%s", i, len(chunks), head(c), a, b)
		}
	}
	return &f
}

func head(b []byte) []byte { return b[:min(len(b), 80)] }

func nanotime() int64 { return time.Now().UnixNano() }

func TestScreenFeedSkipsWhatScrollsOff(t *testing.T) {
	var b bytes.Buffer
	for i := 1; i <= 5000; i++ {
		fmt.Fprintf(&b, "%d\r\n", i)
	}
	b.WriteString("$ ")
	f := feedBoth(t, 80, 24, [][]byte{b.Bytes()})
	if f.skipped < int64(b.Len())*9/10 {
		t.Errorf("skipped %d of %d bytes of plain lines: want most", f.skipped, b.Len())
	}
	// Under a scroll region nothing is skipped, and the screens agree.
	f = feedBoth(t, 80, 24, [][]byte{[]byte("\x1b[5;20r"), b.Bytes(), []byte("\x1b[r"), b.Bytes()})
	if f.skipped == 0 {
		t.Error("nothing skipped after the region was reset")
	}
	f = feedBoth(t, 80, 24, [][]byte{[]byte("\x1b[5;20r"), b.Bytes(), b.Bytes()})
	if f.skipped != 0 {
		t.Errorf("skipped %d bytes under a scroll region", f.skipped)
	}
	// A sequence split across chunks is never taken for text.
	f = feedBoth(t, 80, 24, [][]byte{[]byte("\x1b]0;"), b.Bytes(), []byte("\x07")})
	if f.skipped != 0 {
		t.Errorf("skipped %d bytes of an OSC string", f.skipped)
	}
}

// A program's output that makes the emulator panic (a scroll region past
// the last row, then line feeds; a resize under such a region) does not
// take the daemon down: the region is cut to the screen before a line
// feed comes, and a panic that comes anyway is recovered and told.
func TestScreenFeedSurvivesTheEmulatorsPanics(t *testing.T) {
	poison := "\x1b[2;50r" + strings.Repeat("\n", 100)
	e := vt.NewEmulator(80, 24)
	var told []any
	f := screenFeed{onPanic: func(v any) { told = append(told, v) }}
	f.feed(e, []byte(poison)) // as it is: the emulator panics
	if f.panics == 0 || len(told) != f.panics {
		t.Fatalf("%d panics, %d told: the emulator no longer panics on this; keep the test honest", f.panics, len(told))
	}
	f.write(e, []byte("after\r\n"))
	if !strings.Contains(screenText(e), "after") {
		t.Errorf("what followed the panic is not drawn:\n%s", screenText(e))
	}
	// Through write, the region is amended before the line feeds: no
	// panic, and everything after the poison in the same chunk is drawn.
	e, f = vt.NewEmulator(80, 24), screenFeed{}
	f.write(e, []byte(poison+"same chunk\r\n"))
	if f.panics != 0 || !strings.Contains(screenText(e), "same chunk") {
		t.Errorf("%d panics; screen:\n%s", f.panics, screenText(e))
	}
	for _, bad := range []string{"\x1b[30;10r", "\x1b[5;5r", "\x1b[;99r", "\x1b[0;0r"} {
		e, f = vt.NewEmulator(80, 24), screenFeed{}
		f.write(e, []byte(bad+strings.Repeat("\n", 60)+"drawn"))
		if f.panics != 0 || !strings.Contains(screenText(e), "drawn") {
			t.Errorf("%q: %d panics; screen:\n%s", bad, f.panics, screenText(e))
		}
	}
	f.write(e, []byte("\x1b[2;20r"))
	f.resize(e, 80, 10)
	f.write(e, []byte(strings.Repeat("\n", 50)+"later"))
	if f.panics != 0 || !strings.Contains(screenText(e), "later") {
		t.Errorf("after a resize under a region: %d panics:\n%s", f.panics, screenText(e))
	}
}

func screenText(e *vt.Emulator) string {
	var b strings.Builder
	for y := 0; y < e.Height(); y++ {
		for x := 0; x < e.Width(); x++ {
			if c := e.CellAt(x, y); c != nil {
				b.WriteString(c.Content)
			}
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// Random mixes of plain lines and escape sequences, cut at random places:
// the screens agree after every chunk.
func TestScreenFeedAgreesWithTheEmulator(t *testing.T) {
	seeds := 30
	if testing.Short() {
		seeds = 8
	}
	var skipped int64
	for seed := range seeds {
		r := rand.New(rand.NewPCG(uint64(seed), 7))
		var b bytes.Buffer
		for b.Len() < 24<<10 {
			if r.IntN(4) == 0 {
				b.WriteString(feedPieces[r.IntN(len(feedPieces))])
				continue
			}
			for n := r.IntN(200); n > 0; n-- { // a burst of plain lines
				fmt.Fprintf(&b, "line %d of seed %d\r\n", n, seed)
			}
		}
		data := b.Bytes()
		var chunks [][]byte
		for len(data) > 0 {
			n := min(len(data), 1+r.IntN(12<<10))
			chunks = append(chunks, data[:n])
			data = data[n:]
		}
		cols, rows := 20+r.IntN(100), 3+r.IntN(40)
		t.Run(fmt.Sprintf("seed%d-%dx%d", seed, cols, rows), func(t *testing.T) {
			skipped += feedBoth(t, cols, rows, chunks).skipped
		})
	}
	if skipped == 0 {
		t.Error("no run skipped anything: the test does not test the skip")
	}
}

// BenchmarkScreenFeed: `seq`-like output on a 120x40 screen, fed to the
// emulator directly and through screenFeed, in one run.
func BenchmarkScreenFeed(b *testing.B) {
	var buf bytes.Buffer
	for i := 1; i <= 20000; i++ {
		fmt.Fprintf(&buf, "%d\r\n", i)
	}
	data := buf.Bytes()
	var chunks [][]byte
	for d := data; len(d) > 0; d = d[min(len(d), 32<<10):] {
		chunks = append(chunks, d[:min(len(d), 32<<10)])
	}
	var direct, fed int64
	for b.Loop() {
		e := vt.NewEmulator(120, 40)
		t0 := nanotime()
		for _, c := range chunks {
			e.Write(c)
		}
		t1 := nanotime()
		e2 := vt.NewEmulator(120, 40)
		var f screenFeed
		for _, c := range chunks {
			f.write(e2, c)
		}
		direct, fed = direct+t1-t0, fed+nanotime()-t1
	}
	b.ReportMetric(float64(direct)/float64(b.N)/float64(len(data))*1e3, "direct-ns/kB")
	b.ReportMetric(float64(fed)/float64(b.N)/float64(len(data))*1e3, "fed-ns/kB")
	b.ReportMetric(float64(direct)/float64(fed), "speedup")
}
