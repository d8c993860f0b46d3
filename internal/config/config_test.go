package config

import (
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hivetools/hive/internal/hivetest"
	"github.com/hivetools/hive/internal/paths"
)

func TestParse(t *testing.T) {
	in := `# hive settings
max_running = 3   # at most three
http = "127.0.0.1:8765"
name = 'lit\eral'
grace = "2s"
http_no_auth = true
ratio = 1.5
big = 1_000
hex = 0x10
esc = "a\"b\u00e9\n"
`
	es, err := Parse(strings.NewReader(in), "hive.toml")
	if err != nil {
		t.Fatal(err)
	}
	want := []Entry{{"max_running", int64(3), 2}, {"http", "127.0.0.1:8765", 3}, {"name", `lit\eral`, 4},
		{"grace", "2s", 5}, {"http_no_auth", true, 6}, {"ratio", 1.5, 7}, {"big", int64(1000), 8}, {"hex", int64(16), 9},
		{"esc", "a\"bé\n", 10}}
	if len(es) != len(want) {
		t.Fatalf("entries %v", es)
	}
	for i := range want {
		if es[i] != want[i] {
			t.Errorf("entry %d: %#v, want %#v", i, es[i], want[i])
		}
	}
}

func TestParseErrors(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"[daemon]\n", "f:1: tables ([daemon]) are not supported"},
		{"a = 1\nb\n", "f:2: want key = value"},
		{"a b = 1\n", `f:1: key "a b": must be`},
		{"a = 1\na = 2\n", "f:2: a: given twice (first on line 1)"},
		{"a = \"x\n", "f:1: a: unterminated"},
		{"a = \"x\" y\n", `f:1: a: unexpected "y" after the value`},
		{"a = 10s\n", `f:1: a: value 10s: want a "string"`},
		{"a = [1]\n", "f:1: a: arrays and inline tables are not supported"},
		{"a = \"\\q\"\n", `f:1: a: unknown escape \q`},
		{"a =\n", "f:1: a: no value"},
	} {
		_, err := Parse(strings.NewReader(c.in), "f")
		var ce *Error
		if !errors.As(err, &ce) || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%q: %v, want %q", c.in, err, c.want)
		}
	}
}

func flags() *flag.FlagSet {
	fs := flag.NewFlagSet("daemon", flag.ContinueOnError)
	fs.Int("max-running", 64, "")
	fs.String("http", "", "")
	fs.Bool("http-no-auth", false, "")
	fs.Duration("grace", 10*time.Second, "")
	fs.Int64("file-cap", 1<<30, "")
	fs.String("state-dir", "", "")
	return fs
}

func TestApply(t *testing.T) {
	fs := flags()
	fs.Parse([]string{"--http", "127.0.0.1:1"})
	es, _ := Parse(strings.NewReader("max_running = 1\nhttp = \"127.0.0.1:2\"\ngrace = \"3s\"\n"), "h.toml")
	src, err := Apply(fs, es, "h.toml", "state-dir")
	if err != nil {
		t.Fatal(err)
	}
	if v := fs.Lookup("max-running").Value.String(); v != "1" || src["max-running"] != (Source{"file", "h.toml", 1}) {
		t.Errorf("max-running %s %v", v, src["max-running"])
	}
	if v := fs.Lookup("http").Value.String(); v != "127.0.0.1:1" || src["http"].From != "flag" {
		t.Errorf("a flag given on the command line must win over the file: %s %v", v, src["http"])
	}
	if v := fs.Lookup("grace").Value.String(); v != "3s" {
		t.Errorf("grace %s", v)
	}
	if src["file-cap"].From != "default" {
		t.Errorf("file-cap %v", src["file-cap"])
	}
	for _, c := range []struct{ in, want string }{
		{"nope = 1\n", "h.toml:1: nope: unknown key"},
		{"state_dir = \"/x\"\n", "h.toml:1: state_dir: unknown key"},
		{"max_running = \"3\"\n", `h.toml:1: max_running: value "3": want an integer`},
		{"http_no_auth = 1\n", "h.toml:1: http_no_auth: value 1: want true or false"},
		{"grace = 10\n", "h.toml:1: grace: value 10: want a duration string"},
		{"\ngrace = \"10x\"\n", "h.toml:2: grace: value 10x: "},
		{"http = 8765\n", `h.toml:1: http: value 8765: want a "string"`},
	} {
		es, err := Parse(strings.NewReader(c.in), "h.toml")
		if err == nil {
			_, err = Apply(flags(), es, "h.toml", "state-dir")
		}
		if err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%q: %v, want %q", c.in, err, c.want)
		}
	}
}

func TestRead(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "hive.toml")
	if es, err := Read(p, true); err != nil || es != nil {
		t.Errorf("missing optional file: %v %v", es, err)
	}
	if _, err := Read(p, false); err == nil {
		t.Error("missing file given with --config: no error")
	}
	os.WriteFile(filepath.Join(dir, "real.toml"), []byte("max_running = 2\n"), 0o600)
	hivetest.Symlink(t, filepath.Join(dir, "real.toml"), p)
	if _, err := Read(p, true); !errors.Is(err, paths.ErrInsecure) {
		t.Errorf("a symlinked hive.toml: %v, want it refused", err)
	}
}
