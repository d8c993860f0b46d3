// Package config reads hive.toml, the file of the daemon's settings: a
// small subset of TOML, one `key = value` a line, where a key is a daemon
// flag's name with `_` for `-` and a value is a string ("basic" or
// 'literal'), an integer, a float, a boolean or an array of strings (it
// may span lines); # starts a comment. Durations are strings ("10s"). A
// table header `[name]` puts the keys after it in that table: `[limits]`
// then `memory_mb = 512` is the key limits.memory_mb, the flag
// --limits-memory-mb. Nested tables, inline tables, arrays of other
// values and dates are refused.
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

// Entry is one `key = value` line. Value is a string, int64, float64,
// bool or []string. Key is table.key for a key in a table.
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
	tables := map[string]int{}
	table := ""
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
			name, err := tableHeader(line)
			if err != nil {
				return nil, bad("", "%v", err)
			}
			if prev, ok := tables[name]; ok {
				return nil, bad("", "table [%s] given twice (first on line %d)", name, prev)
			}
			tables[name], table = n, name
			continue
		}
		eq := strings.IndexByte(line, '=')
		if eq < 0 {
			return nil, bad("", "want key = value")
		}
		key := strings.TrimSpace(line[:eq])
		if !bareKey(key) {
			return nil, bad("", "key %q: must be letters, digits, _ and - (a daemon flag's name with _ for -)", key)
		}
		if table != "" {
			key = table + "." + key
		}
		first := n
		text := strings.TrimSpace(line[eq+1:])
		var val any
		var err error
		if strings.HasPrefix(text, "[") {
			// An array may span lines: read on until it closes.
			for {
				var more bool
				val, more, err = array(text)
				if err != nil || !more {
					break
				}
				if !sc.Scan() {
					err = errors.New("unterminated array (no closing ])")
					break
				}
				n++
				size += len(sc.Text()) + 1
				if size > MaxSize {
					return nil, &Error{File: file, Line: n, Msg: fmt.Sprintf("the file is larger than %d bytes", MaxSize)}
				}
				if !utf8.ValidString(sc.Text()) {
					return nil, bad("", "not valid UTF-8")
				}
				text += "\n" + sc.Text()
			}
		} else {
			val, err = value(text)
		}
		if err != nil {
			return nil, bad(key, "%v", err)
		}
		if prev, ok := seen[key]; ok {
			return nil, bad(key, "given twice (first on line %d)", prev)
		}
		seen[key] = first
		out = append(out, Entry{Key: key, Value: val, Line: first})
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, &Error{File: file, Line: n + 1, Msg: fmt.Sprintf("line longer than %d bytes", MaxSize)}
		}
		return nil, fmt.Errorf("read %s: %w", file, err)
	}
	return out, nil
}

// tableHeader reads a `[name]` line (a comment may follow).
func tableHeader(line string) (string, error) {
	end := strings.IndexByte(line, ']')
	if strings.HasPrefix(line, "[[") || end < 0 {
		return "", fmt.Errorf("%s: want a table header [name] (arrays of tables are not supported)", line)
	}
	name := strings.TrimSpace(line[1:end])
	if !bareKey(name) {
		return "", fmt.Errorf("table [%s]: a name of letters, digits, _ and - (nested tables are not supported)", name)
	}
	if err := trailing(line[end+1:]); err != nil {
		return "", fmt.Errorf("table [%s]: %v", name, err)
	}
	return name, nil
}

// array parses an array of strings, s starting with its [. more says
// that it has not closed yet: the caller adds the next line and asks
// again.
func array(s string) (items []string, more bool, err error) {
	items = []string{}
	s = s[1:]
	for {
		s = strings.TrimLeft(s, " \t\n")
		if s == "" {
			return nil, true, nil
		}
		switch c := s[0]; {
		case c == '#':
			nl := strings.IndexByte(s, '\n')
			if nl < 0 {
				return nil, true, nil
			}
			s = s[nl:]
			continue
		case c == ']':
			return items, false, trailing(s[1:])
		case c == '"' || c == '\'':
			var v string
			if c == '"' {
				v, s, err = basicString(s[1:])
				if err != nil {
					return nil, false, fmt.Errorf("array item %d: %v", len(items)+1, err)
				}
			} else {
				end := strings.IndexAny(s[1:], "'\n")
				if end < 0 || s[1+end] != '\'' {
					return nil, false, fmt.Errorf("array item %d: unterminated 'string'", len(items)+1)
				}
				v, s = s[1:1+end], s[2+end:]
			}
			items = append(items, v)
			s = strings.TrimLeft(s, " \t\n")
			if s == "" {
				return nil, true, nil
			}
			switch s[0] {
			case ',':
				s = s[1:]
			case ']', '#':
			default:
				return nil, false, fmt.Errorf("array item %d: want , or ] after it, not %q", len(items), s)
			}
		case c == '[' || c == '{':
			return nil, false, errors.New("arrays hold strings only (no nested arrays or inline tables)")
		default:
			return nil, false, fmt.Errorf("array item %d: arrays hold \"strings\" only", len(items)+1)
		}
	}
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
	case '{':
		return nil, errors.New("inline tables are not supported")
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
		name := strings.NewReplacer("_", "-", ".", "-").Replace(e.Key)
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
		if l, ok := f.Value.(*List); ok {
			items, ok := e.Value.([]string)
			if !ok {
				return nil, bad("value %v: want an array of strings, such as [\"a\", \"b\"]", display(e.Value))
			}
			if src[name].From == "flag" {
				continue
			}
			l.Values = nil
			for i, it := range items {
				if err := l.Set(it); err != nil {
					return nil, bad("item %d %q: %v", i+1, it, err)
				}
			}
			src[name] = Source{From: "file", File: file, Line: e.Line}
			continue
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

// List is a flag of many values: each use on the command line adds one
// (`--policy-deny 'git push --force' --policy-deny 'rm -r -f /'`), and a
// file sets them all with an array. Check, if set, checks each value.
type List struct {
	Values []string
	Check  func(string) error
}

// Set adds a value.
func (l *List) Set(v string) error {
	if l.Check != nil {
		if err := l.Check(v); err != nil {
			return err
		}
	}
	l.Values = append(l.Values, v)
	return nil
}

func (l *List) String() string {
	if l == nil {
		return ""
	}
	return strings.Join(l.Values, ", ")
}

// Get returns the values.
func (l *List) Get() any { return l.Values }

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
	if _, ok := v.([]string); ok {
		return "", fmt.Errorf("an array: want %s (this key takes one value)", want)
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
