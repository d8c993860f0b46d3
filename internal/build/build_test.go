package build

import (
	"os"
	"path/filepath"
	"testing"
)

func TestSame(t *testing.T) {
	clean := Info{Version: "1", Revision: "abc"}
	dirty := Info{Version: "1", Revision: "abc", Modified: true}
	for _, c := range []struct {
		name string
		a, b Info
		same bool
	}{
		{"clean equal", clean, clean, true},
		{"clean, sums ignored", clean, Info{Version: "1", Revision: "abc", Sum: "x"}, true},
		{"version differs", clean, Info{Version: "2", Revision: "abc"}, false},
		{"revision differs", clean, Info{Version: "1", Revision: "abd"}, false},
		{"dirty vs clean", clean, dirty, false},
		{"dirty, no sums", dirty, dirty, false},
		{"dirty, same sum", withSum(dirty, "s"), withSum(dirty, "s"), true},
		{"dirty, other sum", withSum(dirty, "s"), withSum(dirty, "t"), false},
		{"unstamped, same sum", Info{Version: "1", Sum: "s"}, Info{Version: "1", Sum: "s"}, true},
		{"unstamped, one sum", Info{Version: "1", Sum: "s"}, Info{Version: "1"}, false},
		{"zero vs stamped", Info{}, clean, false},
		{"dirty, one file", Info{Version: "1", Modified: true, Revision: "a", File: "f"}, Info{Version: "1", Modified: true, Revision: "a", File: "f"}, true},
		{"dirty, two files, no sums", Info{Version: "1", Modified: true, Revision: "a", File: "f"}, Info{Version: "1", Modified: true, Revision: "a", File: "g"}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := Same(c.a, c.b); got != c.same {
				t.Errorf("Same(%v, %v) = %v, want %v", c.a, c.b, got, c.same)
			}
		})
	}
}

func withSum(in Info, s string) Info { in.Sum = s; return in }

func TestWithSumAndString(t *testing.T) {
	p := filepath.Join(t.TempDir(), "exe")
	os.WriteFile(p, []byte("hello"), 0o700)
	in, err := Info{Version: "1"}.WithSum(p)
	if err != nil || in.Sum != "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824" {
		t.Fatalf("sum %q %v", in.Sum, err)
	}
	if s := in.String(); s != "1 sha256:2cf24dba5fb0" {
		t.Errorf("String %q", s)
	}
	if s := (Info{Version: "1", Revision: "0123456789abcdef", Modified: true}).String(); s != "1 0123456789ab+dirty" {
		t.Errorf("String %q", s)
	}
	if _, err := (Info{}).WithSum(filepath.Join(t.TempDir(), "none")); err == nil {
		t.Error("digest of a missing file: no error")
	}
}

func TestTemporary(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "hive")
	os.WriteFile(p, nil, 0o700)
	if Temporary(p) {
		t.Errorf("%s: temporary", p)
	}
	gb := filepath.Join(dir, "go-build123", "b001", "exe")
	os.MkdirAll(gb, 0o700)
	os.WriteFile(filepath.Join(gb, "hive"), nil, 0o700)
	if !Temporary(filepath.Join(gb, "hive")) {
		t.Error("a go-build path: not temporary")
	}
	if !Temporary(filepath.Join(dir, "deleted")) {
		t.Error("a missing file: not temporary")
	}
}
