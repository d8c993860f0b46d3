package config

import (
	"errors"
	"flag"
	"os"
	"path/filepath"
	"reflect"
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
		{"[a.b]\n", "f:1: table [a.b]: a name of letters"},
		{"[[a]]\n", "f:1: [[a]]: want a table header"},
		{"[a]\nx = 1\n[a]\n", "f:3: table [a] given twice (first on line 1)"},
		{"[a] x\n", `f:1: table [a]: unexpected "x"`},
		{"[a]\nx = 1\nx = 2\n", "f:3: a.x: given twice (first on line 2)"},
		{"a = [\"x\"\n", "f:1: a: unterminated array"},
		{"a = [\"x\" \"y\"]\n", `f:1: a: array item 1: want , or ] after it`},
		{"a = [1]\n", `f:1: a: array item 1: arrays hold "strings" only`},
		{"a = [[\"x\"]]\n", "f:1: a: arrays hold strings only"},
		{"a = ['x]\n", "f:1: a: array item 1: unterminated 'string'"},
		{"a = [\"x\"] y\n", `f:1: a: unexpected "y"`},
		{"a = {}\n", "f:1: a: inline tables are not supported"},
		{"a = 1\nb\n", "f:2: want key = value"},
		{"a b = 1\n", `f:1: key "a b": must be`},
		{"a = 1\na = 2\n", "f:2: a: given twice (first on line 1)"},
		{"a = \"x\n", "f:1: a: unterminated"},
		{"a = \"x\" y\n", `f:1: a: unexpected "y" after the value`},
		{"a = 10s\n", `f:1: a: value 10s: want a "string"`},
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

func TestParseTablesAndArrays(t *testing.T) {
	in := `top = 1
deny = [
  "git push --force",   # no force pushes
  'rm -r -f /',
  # a comment line
]
empty = []
[limits]
memory_mb = 512 # a key in a table
one = ["a", "b\u00e9"] # on one line
[policy]
warn = ["curl | sh",]
`
	es, err := Parse(strings.NewReader(in), "hive.toml")
	if err != nil {
		t.Fatal(err)
	}
	want := []Entry{{"top", int64(1), 1}, {"deny", []string{"git push --force", "rm -r -f /"}, 2}, {"empty", []string{}, 7},
		{"limits.memory_mb", int64(512), 9}, {"limits.one", []string{"a", "bé"}, 10}, {"policy.warn", []string{"curl | sh"}, 12}}
	if !reflect.DeepEqual(es, want) {
		t.Errorf("entries\n%#v\nwant\n%#v", es, want)
	}
}

func TestApplyTablesAndLists(t *testing.T) {
	mk := func() (*flag.FlagSet, *List) {
		fs := flags()
		l := &List{Check: func(s string) error {
			if s == "" {
				return errors.New("empty")
			}
			return nil
		}}
		fs.Var(l, "policy-deny", "")
		fs.Int("limits-memory-mb", 0, "")
		return fs, l
	}
	fs, l := mk()
	es, err := Parse(strings.NewReader("[limits]\nmemory_mb = 64\n[policy]\ndeny = [\"a b\", \"c\"]\n"), "h.toml")
	if err != nil {
		t.Fatal(err)
	}
	src, err := Apply(fs, es, "h.toml")
	if err != nil {
		t.Fatal(err)
	}
	if v := fs.Lookup("limits-memory-mb").Value.String(); v != "64" {
		t.Errorf("limits.memory_mb -> --limits-memory-mb: %s", v)
	}
	if !reflect.DeepEqual(l.Values, []string{"a b", "c"}) || src["policy-deny"] != (Source{"file", "h.toml", 4}) {
		t.Errorf("policy.deny: %q %v", l.Values, src["policy-deny"])
	}
	// The command line wins over the file, for a list too.
	fs, l = mk()
	fs.Parse([]string{"--policy-deny", "x", "--policy-deny", "y"})
	if _, err := Apply(fs, es, "h.toml"); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(l.Values, []string{"x", "y"}) {
		t.Errorf("flags given: %q", l.Values)
	}
	for _, c := range []struct{ in, want string }{
		{"[policy]\ndeny = \"a\"\n", `h.toml:2: policy.deny: value "a": want an array of strings`},
		{"[policy]\ndeny = [\"a\", \"\"]\n", `h.toml:2: policy.deny: item 2 "": empty`},
		{"http = [\"a\"]\n", `h.toml:1: http: an array: want a "string"`},
		{"[limits]\nnope = 1\n", "h.toml:2: limits.nope: unknown key"},
	} {
		fs, _ := mk()
		es, err := Parse(strings.NewReader(c.in), "h.toml")
		if err == nil {
			_, err = Apply(fs, es, "h.toml")
		}
		if err == nil || !strings.HasPrefix(err.Error(), c.want) {
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
