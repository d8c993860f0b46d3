package pty

import (
	"errors"
	"strings"
	"testing"
)

func TestKeySequence(t *testing.T) {
	for _, c := range []struct {
		keys []string
		want string
	}{
		{[]string{"C-c"}, "\x03"},
		{[]string{"C-A", "C-z"}, "\x01\x1a"},
		{[]string{"Enter", "tab", "ESC", "Escape", "Backspace", "Space"}, "\r\t\x1b\x1b\x7f "},
		{[]string{"Up", "Down", "Right", "Left", "Home", "End"}, "\x1b[A\x1b[B\x1b[C\x1b[D\x1b[H\x1b[F"},
		{[]string{"PageUp", "PageDown", "Insert", "Delete"}, "\x1b[5~\x1b[6~\x1b[2~\x1b[3~"},
		{[]string{"F1", "F5", "F12"}, "\x1bOP\x1b[15~\x1b[24~"},
		{[]string{"M-x", "M-X", "M-Enter", "M-C-a"}, "\x1bx\x1bX\x1b\r\x1b\x01"},
		{[]string{"C-[", "C-\\", "C-@"}, "\x1b\x1c\x00"},
		{nil, ""},
	} {
		got, err := KeySequence(c.keys)
		if err != nil || got != c.want {
			t.Errorf("KeySequence(%q) = %q, %v; want %q", c.keys, got, err, c.want)
		}
	}
	for _, bad := range [][]string{{"Enter", "Hyper"}, {"C-1"}, {"M-"}, {"F13"}, {""}} {
		_, err := KeySequence(bad)
		if !errors.Is(err, ErrInvalid) || !strings.HasPrefix(err.Error(), "keys[") {
			t.Errorf("KeySequence(%q) = %v, want ErrInvalid naming keys", bad, err)
		}
	}
}
