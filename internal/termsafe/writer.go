package termsafe

import (
	"fmt"
	"io"
	"unicode/utf8"
)

// maxSGR bounds a colour sequence that is let through; a longer one is
// escaped (and nothing longer is ever held back).
const maxSGR = 64

// Writer is a stream of output (a job's, as `hive logs` shows it) for a
// terminal: what Text escapes is escaped, but carriage returns pass
// (progress bars redraw their line with them) and so do colours (SGR:
// ESC [ digits and ; or : then m, which change nothing but the colour of
// what follows). A sequence or a UTF-8 character cut by the end of a
// Write is held until the next, or Flush.
type Writer struct {
	w    io.Writer
	held []byte
}

// NewWriter returns a Writer to w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: w} }

// Write writes p, escaped, to the underlying writer. It returns len(p)
// unless the underlying write fails.
func (x *Writer) Write(p []byte) (int, error) {
	buf := p
	if len(x.held) > 0 {
		buf = append(x.held, p...)
		x.held = nil
	}
	out := make([]byte, 0, len(buf)+16)
	i := 0
scan:
	for i < len(buf) {
		c := buf[i]
		switch {
		case c == 0x1b:
			if n, whole := sgr(buf[i:]); n > 0 {
				out = append(out, buf[i:i+n]...)
				i += n
				continue
			} else if !whole {
				break scan // cut: held
			}
			out = append(out, `\x1b`...)
			i++
		case c == '\n' || c == '\t' || c == '\r' || c >= 0x20 && c < 0x7f:
			out = append(out, c)
			i++
		case c < 0x80:
			out = fmt.Appendf(out, `\x%02x`, c)
			i++
		default:
			if !utf8.FullRune(buf[i:]) {
				break scan
			}
			r, n := utf8.DecodeRune(buf[i:])
			switch {
			case r == utf8.RuneError && n == 1:
				out = fmt.Appendf(out, `\x%02x`, c)
			case unsafe(r):
				out = appendQuote(out, r)
			default:
				out = append(out, buf[i:i+n]...)
			}
			i += n
		}
	}
	if i < len(buf) {
		x.held = append([]byte(nil), buf[i:]...)
	}
	if len(out) > 0 {
		if _, err := x.w.Write(out); err != nil {
			return 0, err
		}
	}
	return len(p), nil
}

// Flush writes what is held, escaped: the stream ended within it.
func (x *Writer) Flush() error {
	if len(x.held) == 0 {
		return nil
	}
	s := Line(string(x.held))
	x.held = nil
	_, err := io.WriteString(x.w, s)
	return err
}

// sgr is the length of the colour sequence b starts with (0: none);
// whole is false when b ends before it can tell.
func sgr(b []byte) (n int, whole bool) {
	if len(b) < 2 {
		return 0, false
	}
	if b[1] != '[' {
		return 0, true
	}
	for k := 2; k < len(b) && k < maxSGR; k++ {
		switch c := b[k]; {
		case c >= '0' && c <= '9' || c == ';' || c == ':':
		case c == 'm':
			return k + 1, true
		default:
			return 0, true
		}
	}
	return 0, len(b) >= maxSGR
}

func appendQuote(out []byte, r rune) []byte {
	if r <= 0xff {
		return fmt.Appendf(out, `\x%02x`, r)
	}
	return fmt.Appendf(out, `\u%04x`, r)
}
