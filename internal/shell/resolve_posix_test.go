//go:build !windows

package shell

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestResolve(t *testing.T) {
	dir := t.TempDir()
	fakeBash := filepath.Join(dir, "bash")
	if err := os.WriteFile(fakeBash, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	plain := filepath.Join(dir, "plain", "bash")
	if err := os.MkdirAll(filepath.Dir(plain), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(plain, []byte("not executable"), 0o644); err != nil {
		t.Fatal(err)
	}
	dirBash := filepath.Join(dir, "d", "bash")
	if err := os.MkdirAll(dirBash, 0o755); err != nil {
		t.Fatal(err)
	}

	for _, req := range []string{"", "bash"} {
		t.Run("default/"+req, func(t *testing.T) {
			s, err := Resolve(req)
			if err != nil {
				t.Fatalf("Resolve(%q): %v", req, err)
			}
			if s.Kind != KindBash || filepath.Base(s.Path) != "bash" || !filepath.IsAbs(s.Path) {
				t.Errorf("Resolve(%q) = %+v, want an absolute bash", req, s)
			}
		})
	}
	t.Run("path", func(t *testing.T) {
		s, err := Resolve(fakeBash)
		if err != nil || s != (Shell{Path: fakeBash, Kind: KindBash}) {
			t.Errorf("Resolve(%q) = %+v, %v; want that bash", fakeBash, s, err)
		}
	})

	refused := []struct{ req, msg string }{
		{"zsh", `shell "zsh": only bash is allowed on this platform (zsh has command classes that bypass bash-shaped checks)`},
		{"/bin/zsh", `shell "/bin/zsh": only bash is allowed on this platform (zsh has command classes that bypass bash-shaped checks)`},
		{"sh", `shell "sh": only bash is allowed on this platform`},
		{"/bin/sh", `shell "/bin/sh": only bash is allowed on this platform`},
		{"fish", `shell "fish": only bash is allowed on this platform`},
		{"powershell", `shell "powershell": only bash is allowed on this platform`},
		{"bash -x", `shell "bash -x": only bash is allowed on this platform`},
		{filepath.Join(dir, "bashful"), "only bash is allowed on this platform"},
	}
	for _, tt := range refused {
		t.Run("refused/"+tt.req, func(t *testing.T) {
			_, err := Resolve(tt.req)
			if !errors.Is(err, ErrNotAllowed) || !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("Resolve(%q) error = %v, want ErrNotAllowed containing %q", tt.req, err, tt.msg)
			}
		})
	}

	missing := []string{filepath.Join(dir, "nope", "bash"), plain, dirBash}
	for _, req := range missing {
		t.Run("missing/"+req, func(t *testing.T) {
			_, err := Resolve(req)
			if !errors.Is(err, ErrNotFound) || !strings.HasPrefix(err.Error(), fmt.Sprintf("shell %q: must be an existing executable file", req)) {
				t.Errorf("Resolve(%q) error = %v, want ErrNotFound naming the field", req, err)
			}
		})
	}
}
