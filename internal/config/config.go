// Package config reads hive.toml, the file of the daemon's settings: a
// small subset of TOML, one `key = value` a line, where a key is a daemon
// flag's name with `_` for `-` and a value is a string ("basic" or
// 'literal'), an integer, a float or a boolean; # starts a comment.
// Durations are strings ("10s"). Tables, arrays and dates are refused.
package config

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/hivetools/hive/internal/paths"
)

// MaxSize bounds the file.
const MaxSize = 1 << 20

// Entry is one `key = value` line. Value is a string, int64, float64 or
// bool.
type Entry struct {
	Key   string
	Value any
	Line  int
}

// Error is a problem in the file, at a line.
type Error struct {
	File string
	Line int
	Key  string // "" when the line has none
	Msg  string
}

func (e *Error) Error() string {
	if e.Key != "" {
		return fmt.Sprintf("%s:%d: %s: %s", e.File, e.Line, e.Key, e.Msg)
	}
	return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
}

// Parse reads the entries of r; file names it in errors. A key given
// twice is an error.
func Parse(r io.Reader, file string) ([]Entry, error) {
	var out []Entry
	seen := map[string]int{}
	sc := bufio.NewScanner(io.LimitReader(r, MaxSize+1))
	sc.Buffer(make([]byte, 64<<10), MaxSize+1)
	n, size := 0, 0
	for sc.Scan() {
		n++
		raw := sc.Text()
		size += len(raw) + 1
		if size > MaxSize {
			return nil, &Error{File: file, Line: n, Msg: fmt.Sprintf("the file is larger than %d bytes", MaxSize)}
		}
		bad := func(key, f string, a ...any) error {
			return &Error{File: file, Line: n, Key: key, Msg: fmt.Sprintf(f, a...)}
		}
		if !utf8.ValidString(raw) {
			return nil, bad("", "not valid UTF-8")
		}
		line := strings.TrimSpace(raw)
		if line == "" || line[0] == '#' {
			continue
		}
		if line[0] == '[' {
			return nil, bad("", "tables (%s) are not supported: write the keys at the top level", line)
		}
		eq := strings.IndexByte(line, '=')
		if eq < 0 {
			return nil, bad("", "want key = value")
		}
		key := strings.TrimSpace(line[:eq])
		if !bareKey(key) {
			return nil, bad("", "key %q: must be letters, digits, _ and - (a daemon flag's name with _ for -)", key)
		}
		val, err := value(strings.TrimSpace(line[eq+1:]))
		if err != nil {
			return nil, bad(key, "%v", err)
		}
		if prev, ok := seen[key]; ok {
			return nil, bad(key, "given twice (first on line %d)", prev)
		}
		seen[key] = n
		out = append(out, Entry{Key: key, Value: val, Line: n})
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, &Error{File: file, Line: n + 1, Msg: fmt.Sprintf("line longer than %d bytes", MaxSize)}
		}
		return nil, fmt.Errorf("read %s: %w", file, err)
	}
	return out, nil
}

func bareKey(k string) bool {
	if k == "" {
		return false
	}
	for _, r := range k {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-') {
			return false
		}
	}
	return true
}

// value parses a value and what may follow it (a comment).
func value(s string) (any, error) {
	if s == "" {
		return nil, errors.New("no value")
	}
	switch s[0] {
	case '"':
		v, rest, err := basicString(s[1:])
		if err != nil {
			return nil, err
		}
		return v, trailing(rest)
	case '\'':
		end := strings.IndexByte(s[1:], '\'')
		if end < 0 {
			return nil, errors.New("unterminated 'string'")
		}
		return s[1 : 1+end], trailing(s[2+end:])
	case '[', '{':
		return nil, errors.New("arrays and inline tables are not supported")
	}
	word := s
	if i := strings.IndexByte(s, '#'); i >= 0 {
		word = strings.TrimSpace(s[:i])
	}
	switch word {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	num := strings.ReplaceAll(word, "_", "")
	base := 10
	if len(num) > 2 && num[0] == '0' && strings.ContainsRune("xob", rune(num[1])) {
		base = 0 // 0x, 0o, 0b
	}
	if i, err := strconv.ParseInt(num, base, 64); err == nil {
		return i, nil
	}
	if f, err := strconv.ParseFloat(num, 64); err == nil && strings.ContainsAny(num, ".eE") {
		return f, nil
	}
	return nil, fmt.Errorf("value %s: want a \"string\", an integer, a float or true/false (a duration is a string: \"10s\")", word)
}

// basicString parses the rest of a "string" after its opening quote.
func basicString(s string) (string, string, error) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"':
			return b.String(), s[i+1:], nil
		case c == '\\':
			if i+1 >= len(s) {
				return "", "", errors.New("unterminated \"string\"")
			}
			i++
			switch s[i] {
			case '"', '\\':
				b.WriteByte(s[i])
			case 'n':
				b.WriteByte('\n')
			case 't':
				b.WriteByte('\t')
			case 'r':
				b.WriteByte('\r')
			case 'u', 'U':
				n := 4
				if s[i] == 'U' {
					n = 8
				}
				if i+n >= len(s) {
					return "", "", errors.New("short \\u escape")
				}
				r, err := strconv.ParseUint(s[i+1:i+1+n], 16, 32)
				if err != nil || !utf8.ValidRune(rune(r)) {
					return "", "", fmt.Errorf("bad escape \\%c%s", s[i], s[i+1:i+1+n])
				}
				b.WriteRune(rune(r))
				i += n
			default:
				return "", "", fmt.Errorf("unknown escape \\%c", s[i])
			}
		case c < 0x20 && c != '\t':
			return "", "", errors.New("control character in a string")
		default:
			b.WriteByte(c)
		}
	}
	return "", "", errors.New("unterminated \"string\"")
}

// trailing accepts what may follow a value: nothing or a comment.
func trailing(rest string) error {
	rest = strings.TrimSpace(rest)
	if rest == "" || rest[0] == '#' {
		return nil
	}
	return fmt.Errorf("unexpected %q after the value", rest)
}

// Source says where a flag's value came from.
type Source struct {
	From string // "default", "file" or "flag"
	File string // From "file": the file
	Line int    // and its line
}

// Apply sets the flags of fs the entries name, except those given on the
// command line (already set: flags override the file), and returns where
// every flag's value came from. A key that names no flag, or one of skip
// (flags that make no sense in the file, like state_dir), is an error;
// so is a value of the wrong kind for its flag (a bool flag wants true or
// false, a number flag a number, a duration flag a string like "10s") or
// one the flag refuses. Errors are *Error naming the file, line and key.
func Apply(fs *flag.FlagSet, entries []Entry, file string, skip ...string) (map[string]Source, error) {
	src := map[string]Source{}
	fs.VisitAll(func(f *flag.Flag) { src[f.Name] = Source{From: "default"} })
	fs.Visit(func(f *flag.Flag) { src[f.Name] = Source{From: "flag"} })
	for _, e := range entries {
		name := strings.ReplaceAll(e.Key, "_", "-")
		bad := func(f string, a ...any) error {
			return &Error{File: file, Line: e.Line, Key: e.Key, Msg: fmt.Sprintf(f, a...)}
		}
		f := fs.Lookup(name)
		for _, s := range skip {
			if s == name {
				f = nil
			}
		}
		if f == nil {
			return nil, bad("unknown key (keys are the daemon's flags with _ for -; see hive daemon -h)")
		}
		text, err := flagText(f, e.Value)
		if err != nil {
			return nil, bad("%v", err)
		}
		if src[name].From == "flag" {
			continue
		}
		if err := fs.Set(name, text); err != nil {
			return nil, bad("value %s: %v", text, unwrapFlagErr(err))
		}
		src[name] = Source{From: "file", File: file, Line: e.Line}
	}
	return src, nil
}

// flagText turns a file value into the text its flag parses, checking
// its kind.
func flagText(f *flag.Flag, v any) (string, error) {
	var want string
	g, _ := f.Value.(flag.Getter)
	var cur any
	if g != nil {
		cur = g.Get()
	}
	switch cur.(type) {
	case bool:
		if b, ok := v.(bool); ok {
			return strconv.FormatBool(b), nil
		}
		want = "true or false"
	case time.Duration:
		if s, ok := v.(string); ok {
			return s, nil
		}
		want = `a duration string such as "10s" or "1h30m"`
	case int, int64, uint, uint64:
		if i, ok := v.(int64); ok {
			return strconv.FormatInt(i, 10), nil
		}
		want = "an integer"
	case float64:
		switch n := v.(type) {
		case float64:
			return strconv.FormatFloat(n, 'g', -1, 64), nil
		case int64:
			return strconv.FormatInt(n, 10), nil
		}
		want = "a number"
	default: // string, or a flag.Value of its own: it parses text
		if s, ok := v.(string); ok {
			return s, nil
		}
		want = `a "string"`
	}
	return "", fmt.Errorf("value %v: want %s", display(v), want)
}

func display(v any) string {
	if s, ok := v.(string); ok {
		return strconv.Quote(s)
	}
	return fmt.Sprint(v)
}

// unwrapFlagErr drops the flag package's own wording around a parse error.
func unwrapFlagErr(err error) error {
	var ne *strconv.NumError
	if errors.As(err, &ne) {
		return ne.Err
	}
	return err
}

// Read reads the file at path the way hive reads its state files
// (paths.OpenFile: no symlink, a regular file of yours). A missing file
// is no error when optional: it returns no entries.
func Read(path string, optional bool) ([]Entry, error) {
	f, err := paths.OpenFile(path, os.O_RDONLY)
	if err != nil {
		if optional && errors.Is(err, os.ErrNotExist) {
			return nil, nil
		}
		return nil, fmt.Errorf("config file: %w", err)
	}
	defer f.Close()
	return Parse(f, path)
}
