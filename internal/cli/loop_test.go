package cli

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// HIVE_MESSAGE holds what an environment variable can: no NUL, at most
// maxEnvMessage bytes, cut at a character.
func TestEnvMessage(t *testing.T) {
	for _, tt := range []struct {
		name, in, want string
	}{
		{"short", "hello\nthere", "hello\nthere"},
		{"NUL", "a\x00b", "a\uFFFDb"},
		{"long", strings.Repeat("x", maxEnvMessage+10), strings.Repeat("x", maxEnvMessage)},
		{"cut inside a character", strings.Repeat("x", maxEnvMessage-1) + "é", strings.Repeat("x", maxEnvMessage-1)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := envMessage(tt.in)
			if got != tt.want || len(got) > maxEnvMessage || !utf8.ValidString(got) {
				t.Errorf("envMessage: %d bytes %.20q, want %d bytes %.20q", len(got), got, len(tt.want), tt.want)
			}
		})
	}
}
