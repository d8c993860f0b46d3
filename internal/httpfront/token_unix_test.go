//go:build unix

package httpfront

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// The token file is checked whatever it is; a FIFO must not block.
func TestTokenFileRead(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		os.Chmod(p, mode)
		return p
	}
	good := write("good", "  tok-1\n", 0o600)
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	os.Symlink(good, link)
	tests := []struct {
		name     string
		path     string
		noFollow bool
		err      string // "" for a good file
	}{
		{"good", good, false, ""},
		{"link followed", link, false, ""},
		{"link refused", link, true, "not a regular file"},
		{"fifo", fifo, false, "not a regular file"},
		{"readable by others", write("o", "tok\n", 0o604), false, "mode 0604"},
		{"writable by group", write("g", "tok\n", 0o620), false, "mode 0620"},
		{"empty", write("e", "\n \n", 0o600), false, "empty"},
		{"two words", write("w", "tok en\n", 0o400), false, "one word"},
		{"too long", write("l", strings.Repeat("x", maxTokenFile+1), 0o600), false, "longer than"},
		{"missing", filepath.Join(dir, "none"), false, "no such file"},
	}
	for _, tt := range tests {
		tf := &tokenFile{path: tt.path, name: "--http-token-file", noFollow: tt.noFollow, log: slog.New(slog.DiscardHandler)}
		err := tf.load()
		if tt.err == "" {
			if err != nil {
				t.Errorf("%s: %v", tt.name, err)
			} else if sum, _ := tf.current(); !authorized([]string{"Bearer tok-1"}, sum) {
				t.Errorf("%s: the token in the file is not accepted", tt.name)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tt.err) || !strings.Contains(err.Error(), tt.path) {
			t.Errorf("%s: error %v, want one naming %s with %q", tt.name, err, tt.path, tt.err)
		}
	}
}
