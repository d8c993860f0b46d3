package pty

import (
	"fmt"
	"strings"
)

// namedKeys maps lower-cased key names to what an xterm sends for them
// (normal cursor-key mode, which full-screen programs accept too).
var namedKeys = map[string]string{
	"enter":     "\r",
	"return":    "\r",
	"tab":       "\t",
	"esc":       "\x1b",
	"escape":    "\x1b",
	"backspace": "\x7f",
	"space":     " ",
	"up":        "\x1b[A",
	"down":      "\x1b[B",
	"right":     "\x1b[C",
	"left":      "\x1b[D",
	"home":      "\x1b[H",
	"end":       "\x1b[F",
	"pageup":    "\x1b[5~",
	"pagedown":  "\x1b[6~",
	"insert":    "\x1b[2~",
	"delete":    "\x1b[3~",
	"f1":        "\x1bOP",
	"f2":        "\x1bOQ",
	"f3":        "\x1bOR",
	"f4":        "\x1bOS",
	"f5":        "\x1b[15~",
	"f6":        "\x1b[17~",
	"f7":        "\x1b[18~",
	"f8":        "\x1b[19~",
	"f9":        "\x1b[20~",
	"f10":       "\x1b[21~",
	"f11":       "\x1b[23~",
	"f12":       "\x1b[24~",
}

// ctrlPunct are the C- keys beyond letters.
var ctrlPunct = map[string]byte{
	"@": 0x00, "space": 0x00, "[": 0x1b, "\\": 0x1c, "]": 0x1d, "^": 0x1e, "_": 0x1f, "?": 0x7f,
}

// KeySequence turns key names into the bytes a terminal sends for them, in
// order. Names: Enter, Tab, Esc (Escape), Backspace, Space, Up, Down, Left,
// Right, Home, End, PageUp, PageDown, Insert, Delete, F1-F12 (any case);
// C-a..C-z for Ctrl-letter (C-c is "\x03"), also C-@ C-[ C-\ C-] C-^ C-_ C-?;
// M-x for Alt (Esc prefix) followed by one character or another name
// (M-Enter, M-C-a). An unknown name gives an error wrapping ErrInvalid that
// names the keys field.
func KeySequence(names []string) (string, error) {
	var b strings.Builder
	for i, name := range names {
		seq, ok := keySeq(name)
		if !ok {
			return "", fmt.Errorf("keys[%d] %q: unknown key (want Enter, Tab, Esc, Backspace, Space, Up, Down, Left, Right, Home, End, PageUp, PageDown, Insert, Delete, F1-F12, C-a..C-z, M-<key>): %w", i, name, ErrInvalid)
		}
		b.WriteString(seq)
	}
	return b.String(), nil
}

func keySeq(name string) (string, bool) {
	if seq, ok := namedKeys[strings.ToLower(name)]; ok {
		return seq, true
	}
	if rest, ok := cutPrefixFold(name, "M-"); ok {
		if len([]rune(rest)) == 1 {
			return "\x1b" + rest, true
		}
		seq, ok := keySeq(rest)
		if !ok {
			return "", false
		}
		return "\x1b" + seq, true
	}
	if rest, ok := cutPrefixFold(name, "C-"); ok {
		if len(rest) == 1 {
			c := rest[0] | 0x20 // lower case
			if c >= 'a' && c <= 'z' {
				return string(rune(c - 'a' + 1)), true
			}
		}
		if c, ok := ctrlPunct[strings.ToLower(rest)]; ok {
			return string(rune(c)), true
		}
	}
	return "", false
}

func cutPrefixFold(s, prefix string) (string, bool) {
	if len(s) > len(prefix) && strings.EqualFold(s[:len(prefix)], prefix) {
		return s[len(prefix):], true
	}
	return "", false
}
