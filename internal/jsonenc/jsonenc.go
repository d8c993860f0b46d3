// Package jsonenc writes the JSON of a few values on hot paths directly,
// byte for byte as encoding/json's Marshal writes them (each caller's
// test and fuzz target hold it to that), without reflection.
package jsonenc

import "unicode/utf8"

const hexDigits = "0123456789abcdef"

// AppendString appends s quoted as json.Marshal quotes a string: HTML's
// <, > and & escaped (\u003c, \u003e, \u0026), the control bytes as
// \b, \f, \n, \r, \t or \u00XX, an invalid UTF-8 byte as \ufffd and the
// separators U+2028 and U+2029 escaped.
func AppendString(b []byte, s string) []byte {
	b = append(b, '"')
	from := 0 // s[from:i] is still to copy
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[from:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, `\b`...)
			case '\f':
				b = append(b, `\f`...)
			case '\n':
				b = append(b, `\n`...)
			case '\r':
				b = append(b, `\r`...)
			case '\t':
				b = append(b, `\t`...)
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			from = i
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			b = append(b, s[from:i]...)
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, s[from:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
		default:
			i += n
			continue
		}
		i += n
		from = i
	}
	b = append(b, s[from:]...)
	return append(b, '"')
}

// Compact is JSON that is compact and HTML-escaped already, as
// json.Marshal writes it: what an encoder would do to it again (compact
// it, escape HTML) changes nothing, so a writer that knows it may copy it
// as it is. It marshals as itself.
type Compact []byte

// MarshalJSON returns c.
func (c Compact) MarshalJSON() ([]byte, error) {
	if c == nil {
		return []byte("null"), nil
	}
	return c, nil
}
