// Package termsafe shows text that came from elsewhere (a job's command, a
// todo's summary, a message from chat or CI) on an operator's terminal
// without letting it drive the terminal: control characters are shown
// escaped, as `\x1b`, so an OSC sequence cannot set the window title or
// write the clipboard (OSC 52), a CSI cannot move the cursor over what was
// printed before, and a carriage return cannot hide the start of a line.
//
// What is escaped: every C0 control (U+0000–U+001F) but those a form
// keeps (Text keeps newline and tab), DEL, every C1 control (U+0080–
// U+009F, which some terminals obey), the bidirectional overrides and
// isolates (U+202A–U+202E, U+2066–U+2069: they reorder what is shown,
// "Trojan Source"), and bytes that are not UTF-8 (as `\xNN`). Everything
// else, other scripts and emoji included, is shown as it is.
package termsafe

import (
	"strings"
	"unicode/utf8"
)

// Line is s for one cell of a table or one line of a message: every
// control character is escaped, newline and tab too (`\n`, `\t`).
func Line(s string) string { return escape(s, false) }

// Text is s for a block of lines (a message's body, an error): newlines
// and tabs stay; a carriage return stays only before a newline.
func Text(s string) string { return escape(s, true) }

// escape escapes s; lines keeps newlines, tabs and CR LF.
func escape(s string, lines bool) string {
	if clean(s, lines) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			b.Write(appendQuote(nil, rune(s[i])))
		case lines && (r == '\n' || r == '\t' || r == '\r' && i+1 < len(s) && s[i+1] == '\n'):
			b.WriteRune(r)
		case unsafe(r):
			quote(&b, r)
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// clean reports whether s is printable ASCII (with newlines, tabs and
// CR LF if lines): the common case, returned without a copy.
func clean(s string, lines bool) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 0x20 && c < 0x7f:
		case lines && (c == '\n' || c == '\t' || c == '\r' && i+1 < len(s) && s[i+1] == '\n'):
		default:
			return false
		}
	}
	return true
}

// unsafe reports whether r is shown escaped.
func unsafe(r rune) bool {
	switch {
	case r < 0x20, r == 0x7f, r >= 0x80 && r <= 0x9f:
		return true
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
		return true
	}
	return false
}

// quote writes r's escape: `\n`, `\t`, `\r`, `\x1b` (up to U+00FF),
// `\u202e`.
func quote(b *strings.Builder, r rune) {
	switch r {
	case '\n':
		b.WriteString(`\n`)
	case '\t':
		b.WriteString(`\t`)
	case '\r':
		b.WriteString(`\r`)
	default:
		b.Write(appendQuote(nil, r))
	}
}
