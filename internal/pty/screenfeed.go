//go:build unix

package pty

import (
	"bytes"
	"fmt"
	"strconv"
	"unicode/utf8"

	"github.com/charmbracelet/x/vt"
)

// screenFeed feeds a session's output to its screen emulator, skipping
// what cannot show: plain lines that scroll off the screen before the
// chunk ends. The emulator moves every cell of the screen at each scroll
// (about 7 ms of CPU per kB of `seq` output on a 120x40 screen), so a
// program that pours lines made the daemon busy for seconds per MB; the
// screen is all hive reads of it (its scrollback is not read).
//
// What is skipped is exactly what leaves no trace on the screen. In one
// chunk, a run of plain text (printable characters, CR, LF, tab and
// backspace: no escape, no other control) with more than 2 x rows line
// feeds is fed as: the text up to its last "\r\n" that is followed by at
// least rows more line feeds is replaced by a carriage return and rows
// line feeds. Both leave the cursor on the bottom row at column 0 with
// the same pen (plain text sets no attribute), and the rows line feeds of
// plain text that follow in the run scroll every row there was off the
// screen, so the screens after the run are the same. That holds while
// every line feed at the bottom row scrolls the whole screen: not under
// a scroll region (DECSTBM), left and right margins (DECSLRM) or origin
// mode (DECOM). Once one of those is seen, nothing is skipped until a
// region reset (CSI r) or a full reset (ESC c) is seen.
type screenFeed struct {
	regions bool // a scroll region, margins or origin mode may be set

	// The escape scanner's state across chunks: where a sequence split by
	// a chunk boundary resumes. Plain text is only looked for in the
	// ground state: a sequence's bytes are never taken for it.
	state    scanState
	params   []byte // the CSI's parameter and intermediate bytes so far
	utf8Left int    // scanUTF8: the bytes of the character still to come

	rows int    // the screen's height, at the write
	fix  []byte // fed after the sequence just scanned (see csi)

	skipped int64 // bytes not fed, for tests
	noSkip  bool  // feed every byte (tests compare with it)
	// panics counts the emulator's panics (see feed); onPanic, if set, is
	// told of each.
	panics  int
	onPanic func(v any)
}

// feed writes b to the emulator. The emulator panics on some output (a
// scroll region past the screen's last row, as `printf '\e[2;50r'` on a
// 24-row screen sets, then a line feed): a program's output must never
// take the daemon down. A panic is recovered, told, and the scroll region
// reset so that what follows draws; the screen misses the rest of b (the
// session's output keeps every byte).
func (f *screenFeed) feed(emu *vt.Emulator, b []byte) {
	defer func() {
		if v := recover(); v != nil {
			f.panics++
			if f.onPanic != nil {
				f.onPanic(v)
			}
			f.regions = true // unknown now: no skipping until a reset is seen
			func() {
				defer func() { recover() }()
				emu.Write([]byte("\x1b[r"))
			}()
		}
	}()
	emu.Write(b)
}

// resize resizes the emulator, recovering from its panics as feed does.
func (f *screenFeed) resize(emu *vt.Emulator, cols, rows int) {
	defer func() {
		if v := recover(); v != nil {
			f.panics++
			if f.onPanic != nil {
				f.onPanic(v)
			}
		}
	}()
	emu.Resize(cols, rows) // it resets the scroll region to the new screen
}

type scanState uint8

const (
	scanGround   scanState = iota
	scanEsc                // after ESC
	scanEscInter           // ESC and intermediates (ESC ( B): until its final byte
	scanCSI                // a control sequence: until its final byte
	scanOSC                // an OSC string: until BEL or ST
	scanString             // DCS, SOS, PM, APC: until ST
	scanUTF8               // inside a UTF-8 sequence: utf8Left more bytes
)

// minSkip is the fewest line feeds a skip must save to be worth it.
const minSkip = 16

// write feeds p to emu.
func (f *screenFeed) write(emu *vt.Emulator, p []byte) {
	f.rows = emu.Height()
	canSkip := !f.noSkip && f.rows > 0 && bytes.Count(p, []byte{'\n'}) >= 2*f.rows+minSkip
	fed, run := 0, -1 // fed: p[:fed] is fed; run: where the plain run began
	for i := 0; i < len(p); {
		if f.state == scanGround {
			n, plain := plainAt(p, i)
			if plain {
				if canSkip && run < 0 {
					run = i
				}
				i += n
				continue
			}
			if run >= 0 {
				fed = f.skip(emu, p, fed, run, i)
				run = -1
			}
			f.scan(p[i : i+n])
			i += n
		} else {
			f.scan(p[i : i+1])
			i++
		}
		if f.fix != nil { // a scroll region the emulator cannot take: amended
			f.feed(emu, p[fed:i])
			f.feed(emu, f.fix)
			f.fix, fed = nil, i
		}
	}
	if run >= 0 {
		fed = f.skip(emu, p, fed, run, len(p))
	}
	f.feed(emu, p[fed:])
}

// skip feeds the plain run p[start:end] with what scrolls off skipped, if
// it may be: it feeds p[fed:start], a carriage return and rows line feeds
// for the skipped part, and returns how far p is now fed (the rest of the
// run is fed later); else it feeds nothing and returns fed.
func (f *screenFeed) skip(emu *vt.Emulator, p []byte, fed, start, end int) int {
	if f.regions {
		return fed
	}
	cut := skipTo(p[start:end], f.rows)
	if cut == 0 {
		return fed
	}
	f.feed(emu, p[fed:start])
	f.feed(emu, scrollOff(f.rows))
	f.skipped += int64(cut)
	return start + cut
}

// scrollOff is what a skipped part is fed as: a carriage return and rows
// line feeds.
func scrollOff(rows int) []byte {
	b := make([]byte, rows+1)
	b[0] = '\r'
	for i := 1; i <= rows; i++ {
		b[i] = '\n'
	}
	return b
}

// skipTo returns how much of the plain run r may be skipped: up to and
// including its last "\r\n" after which rows line feeds remain, if that
// part holds at least rows+minSkip line feeds; else 0.
func skipTo(r []byte, rows int) int {
	// i: the rows-th line feed from the end. The cut is at or before it.
	i := len(r)
	for left := rows; left > 0; left-- {
		if i = bytes.LastIndexByte(r[:i], '\n'); i < 0 {
			return 0
		}
	}
	for i == 0 || r[i-1] != '\r' { // the last "\r\n" at or before it
		if i = bytes.LastIndexByte(r[:i], '\n'); i < 0 {
			return 0
		}
	}
	cut := i + 1
	if bytes.Count(r[:cut], []byte{'\n'}) < rows+minSkip {
		return 0
	}
	return cut
}

// plainAt reports whether the character at p[i] is plain text (a
// printable character, CR, LF, tab or backspace; not an escape, another
// control, DEL, a C1 control or invalid UTF-8), and its length in bytes.
func plainAt(p []byte, i int) (int, bool) {
	c := p[i]
	switch {
	case c == '\r' || c == '\n' || c == '\t' || c == '\b':
		return 1, true
	case c < 0x20 || c == 0x7f:
		return 1, false
	case c < utf8.RuneSelf:
		return 1, true
	}
	r, n := utf8.DecodeRune(p[i:])
	if r == utf8.RuneError || (r >= 0x80 && r <= 0x9f) {
		return 1, false
	}
	return n, true
}

// scan follows the escape sequences of p as the emulator's parser
// (charmbracelet/x/ansi) does, for those that change how a line feed
// scrolls (see screenFeed). Like it, a UTF-8 lead byte anywhere starts a
// character that ends any sequence, and a raw C1 byte is a control.
func (f *screenFeed) scan(p []byte) {
	for _, c := range p {
		if f.state == scanUTF8 { // the parser takes any byte as the rest
			if f.utf8Left--; f.utf8Left <= 0 {
				f.state = scanGround
			}
			continue
		}
		switch {
		case c == 0x18 || c == 0x1a || c == 0x9c || (c >= 0x80 && c <= 0x97) || c == 0x99 || c == 0x9a:
			f.state = scanGround // CAN, SUB, ST and other C1 controls end any sequence
			continue
		case c == 0x9b:
			f.state, f.params = scanCSI, f.params[:0]
			continue
		case c == 0x9d:
			f.state = scanOSC
			continue
		case c == 0x98 || c == 0x9e || c == 0x9f:
			f.state = scanString
			continue
		case c >= 0xc2 && c <= 0xf4:
			f.state, f.utf8Left = scanUTF8, 1
			if c >= 0xe0 {
				f.utf8Left = 2
			}
			if c >= 0xf0 {
				f.utf8Left = 3
			}
			continue
		case c == 0x1b && f.state != scanOSC && f.state != scanString:
			f.state = scanEsc
			continue
		}
		switch f.state {
		case scanEsc:
			switch {
			case c == '[':
				f.state, f.params = scanCSI, f.params[:0]
			case c == ']':
				f.state = scanOSC
			case c == 'P' || c == 'X' || c == '^' || c == '_':
				f.state = scanString
			case c == 'c': // RIS, a full reset
				f.regions, f.state = false, scanGround
			case c >= 0x20 && c <= 0x2f:
				f.state = scanEscInter
			case c >= 0x30 && c <= 0x7e:
				f.state = scanGround
			} // a C0 control inside is executed, and the sequence goes on
		case scanEscInter:
			if c >= 0x30 && c <= 0x7e {
				f.state = scanGround
			}
		case scanCSI:
			switch {
			case c >= 0x20 && c <= 0x3f: // parameters and intermediates
				if len(f.params) < 64 {
					f.params = append(f.params, c)
				} else {
					f.regions = true // too long to read: assume the worst
				}
			case c >= 0x40 && c <= 0x7e:
				f.csi(c)
				f.state = scanGround
			}
		case scanOSC, scanString:
			switch {
			case c == 0x07 && f.state == scanOSC:
				f.state = scanGround
			case c == 0x1b: // ST is ESC \: the ESC ends the string
				f.state = scanEsc
			}
		}
	}
}

// csi notes a control sequence that sets or resets a scroll region,
// margins or origin mode.
func (f *screenFeed) csi(final byte) {
	p := f.params
	switch final {
	case 'r':
		if len(p) == 0 { // DECSTBM without parameters: the whole screen
			f.regions = false
			return
		}
		f.regions = true
		// The emulator panics at the next line feed under a region past the
		// last row (or an empty one): it gets the region cut to the screen
		// right after, as a terminal takes it, or the whole screen.
		top, bottom, ok := regionParams(p, f.rows)
		if !ok || f.rows <= 0 || (bottom <= f.rows && top < bottom) {
			return
		}
		if bottom = min(bottom, f.rows); top < bottom {
			f.fix = fmt.Appendf(nil, "\x1b[%d;%dr", top, bottom)
		} else {
			f.fix = []byte("\x1b[r")
		}
	case 's':
		if len(p) > 0 { // DECSLRM; without parameters it saves the cursor
			f.regions = true
		}
	case 'h', 'l':
		if len(p) > 0 && p[0] == '?' && (hasParam(p[1:], "6") || hasParam(p[1:], "69")) {
			f.regions = true
		}
	}
}

// regionParams reads DECSTBM's top;bottom (1-based; a missing one is the
// screen's edge); ok false for what is not two numbers.
func regionParams(p []byte, rows int) (top, bottom int, ok bool) {
	parts := bytes.Split(p, []byte{';'})
	if len(parts) > 2 {
		return 0, 0, false
	}
	top, bottom = 1, rows
	for i, part := range parts {
		if len(part) == 0 {
			continue
		}
		n, err := strconv.Atoi(string(part))
		if err != nil {
			return 0, 0, false
		}
		if i == 0 {
			top = max(n, 1)
		} else {
			bottom = n
		}
	}
	return top, bottom, true
}

// hasParam reports whether the ;-separated parameters p hold v.
func hasParam(p []byte, v string) bool {
	for _, f := range bytes.Split(p, []byte{';'}) {
		if string(f) == v {
			return true
		}
	}
	return false
}
