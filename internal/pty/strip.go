package pty

import (
	"unicode/utf8"

	"github.com/charmbracelet/x/ansi/parser"
)

// strip returns the text of terminal output b: escape sequences (CSI, OSC,
// DCS, ...) and control characters other than \n, \t and \r are removed,
// \r\n (and \r\r\n) becomes \n, a \r at the start of a line (a no-op on a
// terminal) is dropped, and so is invalid UTF-8. Bytes >= 0x80 are read as
// UTF-8, never as C1 controls. lineStart tells whether the text before b
// ended a line (or there is none).
//
// used is how many bytes of b the text covers. Unless final, a cut-off
// escape sequence, UTF-8 character or run of \r at the end of b is left
// unused, so that the caller can strip it whole once more bytes arrive.
func strip(b []byte, final, lineStart bool) (text []byte, used int) {
	out := make([]byte, 0, len(b))
	state := parser.GroundState
	outSafe := 0 // len(out) at used
	for i := 0; i < len(b); {
		c := b[i]
		if state == parser.GroundState {
			switch {
			case c == '\r':
				j := i
				for j < len(b) && b[j] == '\r' {
					j++
				}
				if j == len(b) && !final {
					return out[:outSafe], used
				}
				atStart := len(out) == 0 && lineStart || len(out) > 0 && out[len(out)-1] == '\n'
				if (j == len(b) || b[j] != '\n') && !atStart {
					out = append(out, '\r')
				}
				i = j
			case c == '\n' || c == '\t' || (c >= 0x20 && c < 0x7f):
				out = append(out, c)
				i++
			case c >= 0x80:
				r, size := utf8.DecodeRune(b[i:])
				if r == utf8.RuneError && size <= 1 {
					if !final && !utf8.FullRune(b[i:]) {
						return out[:outSafe], used
					}
					i++ // invalid byte: drop it
					break
				}
				out = append(out, b[i:i+size]...)
				i += size
			default:
				next, _ := parser.Table.Transition(state, c)
				state = next
				i++
			}
			if state == parser.GroundState {
				used, outSafe = i, len(out)
			}
			continue
		}
		// Inside a sequence: follow the DEC parser, but keep bytes >= 0x80
		// as payload of string sequences (UTF-8 titles) instead of C1.
		if c >= 0x80 {
			switch state {
			case parser.OscStringState, parser.DcsStringState, parser.SosStringState,
				parser.PmStringState, parser.ApcStringState:
			default:
				state = parser.GroundState
			}
		} else {
			next, action := parser.Table.Transition(state, c)
			if action == parser.ExecuteAction && (c == '\n' || c == '\t') {
				out = append(out, c)
			}
			state = next
		}
		i++
		if state == parser.GroundState {
			used, outSafe = i, len(out)
		}
	}
	if final {
		return out, len(b)
	}
	return out[:outSafe], used
}
