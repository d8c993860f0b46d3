package tools

import (
	"slices"
	"strconv"
	"unicode/utf8"
)

// The arguments of the commonest calls ({"cmd":"make test"},
// {"cmd":"true","wait_seconds":10}) are a flat object of plain values.
// Such arguments are read here without encoding/json: decoding them into
// a map for the schema check and again into the type walked both through
// reflection, before the command starts (BenchmarkDecodeArgs). Anything
// else (a nested value, an escape in a string, a key given twice, a
// value the check refuses, a number the type does not take as written)
// is declined and goes the library's way, which gives the verdict and
// the error. FuzzDecodeArgsAgree holds the two to the same result.

// flatArg is one property of a flat argument object.
type flatArg struct {
	name string
	kind byte   // 's' string, 'n' number, 't' true, 'f' false, 'z' null
	text string // the string's bytes (no escape in them), or the number as written
}

// maxFlatArgs is the most properties a flat object may have here.
const maxFlatArgs = 12

// flatDecoder is an argument type that takes a flat object's properties
// (setFlat), reporting false for any it does not take as encoding/json
// would.
type flatDecoder interface {
	setFlat(args []flatArg) bool
}

// scanFlat reads b as a JSON object whose values are strings without
// escapes or control bytes (valid UTF-8), numbers, true, false or null,
// with no key given twice, into into[:0]. ok is false for anything else.
func scanFlat(b []byte, into []flatArg) (args []flatArg, ok bool) {
	args = into[:0]
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return nil, false
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return args, skipSpace(b, i+1) == len(b)
	}
	for {
		var a flatArg
		var s string
		if s, i, ok = plainString(b, i); !ok {
			return nil, false
		}
		a.name = s
		i = skipSpace(b, i)
		if i >= len(b) || b[i] != ':' {
			return nil, false
		}
		i = skipSpace(b, i+1)
		if i >= len(b) {
			return nil, false
		}
		switch c := b[i]; {
		case c == '"':
			if a.text, i, ok = plainString(b, i); !ok {
				return nil, false
			}
			a.kind = 's'
		case c == '-' || c >= '0' && c <= '9':
			j := numberEnd(b, i)
			if j < 0 {
				return nil, false
			}
			a.kind, a.text, i = 'n', string(b[i:j]), j
		case hasWord(b, i, "true"):
			a.kind, i = 't', i+4
		case hasWord(b, i, "false"):
			a.kind, i = 'f', i+5
		case hasWord(b, i, "null"):
			a.kind, i = 'z', i+4
		default:
			return nil, false
		}
		if len(args) == maxFlatArgs || slices.ContainsFunc(args, func(x flatArg) bool { return x.name == a.name }) {
			return nil, false
		}
		args = append(args, a)
		i = skipSpace(b, i)
		if i >= len(b) {
			return nil, false
		}
		switch b[i] {
		case ',':
			i = skipSpace(b, i+1)
		case '}':
			return args, skipSpace(b, i+1) == len(b)
		default:
			return nil, false
		}
	}
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// plainString reads the string at b[i] (a quote) that has no escape and
// no control byte and is valid UTF-8; next is the index after it.
func plainString(b []byte, i int) (s string, next int, ok bool) {
	if i >= len(b) || b[i] != '"' {
		return "", 0, false
	}
	ascii := true
	for j := i + 1; j < len(b); j++ {
		switch c := b[j]; {
		case c == '"':
			t := b[i+1 : j]
			if !ascii && !utf8.Valid(t) {
				return "", 0, false
			}
			return string(t), j + 1, true
		case c == '\\' || c < 0x20:
			return "", 0, false
		case c >= utf8.RuneSelf:
			ascii = false
		}
	}
	return "", 0, false
}

// numberEnd is the index after the JSON number at b[i], or -1 if there
// is none there.
func numberEnd(b []byte, i int) int {
	digits := func(j int) int {
		k := j
		for k < len(b) && b[k] >= '0' && b[k] <= '9' {
			k++
		}
		return k
	}
	if b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		i = digits(i)
	default:
		return -1
	}
	if i < len(b) && b[i] == '.' {
		j := digits(i + 1)
		if j == i+1 {
			return -1
		}
		i = j
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		j := digits(i)
		if j == i {
			return -1
		}
		i = j
	}
	return i
}

func hasWord(b []byte, i int, w string) bool {
	return len(b)-i >= len(w) && string(b[i:i+len(w)]) == w
}

// checkFlat reports whether args pass c as the decoded map would: every
// property known and of an allowed type, every required one there.
func (c *argCheck) checkFlat(args []flatArg) bool {
	for _, name := range c.required {
		if !slices.ContainsFunc(args, func(a flatArg) bool { return a.name == name }) {
			return false
		}
	}
	for _, a := range args {
		pc, known := c.props[a.name]
		if !known {
			return false // unknown (closed), or checked against additional: the library's way
		}
		if pc == nil || len(pc.types) == 0 {
			continue
		}
		var t string
		switch a.kind {
		case 's':
			t = "string"
		case 't', 'f':
			t = "boolean"
		case 'z':
			t = "null"
		case 'n':
			v, err := strconv.ParseFloat(a.text, 64)
			if err != nil {
				return false // out of float64's range: the library's error
			}
			t = numberType(v)
		}
		if !pc.allows(t) {
			return false
		}
	}
	return true
}

// flatFloat sets *p from a number or null as encoding/json decodes them
// into a *float64.
func flatFloat(p **float64, a flatArg) bool {
	switch a.kind {
	case 'z':
		*p = nil
	case 'n':
		v, err := strconv.ParseFloat(a.text, 64)
		if err != nil {
			return false
		}
		*p = &v
	default:
		return false
	}
	return true
}

// flatInt sets *p from an integer written as one (80, not 80.0 nor 8e1:
// those go the library's way) or null, as encoding/json decodes them
// into an *int.
func flatInt(p **int, a flatArg) bool {
	switch a.kind {
	case 'z':
		*p = nil
	case 'n':
		v, err := strconv.ParseInt(a.text, 10, strconv.IntSize)
		if err != nil {
			return false
		}
		n := int(v)
		*p = &n
	default:
		return false
	}
	return true
}

// setEach calls set for each of args, until one is not taken.
func setEach(args []flatArg, set func(a flatArg) bool) bool {
	for _, a := range args {
		if !set(a) {
			return false
		}
	}
	return true
}

func (in *execIn) setFlat(args []flatArg) bool {
	return setEach(args, func(a flatArg) bool {
		switch a.name {
		case "cmd":
			in.Cmd = a.text
		case "cwd":
			in.Cwd = a.text
		case "stdin":
			in.Stdin = a.text
		case "timeout_sec":
			return flatFloat(&in.TimeoutSec, a)
		case "auto_background_after_sec":
			return flatFloat(&in.AutoBackgroundAfterSec, a)
		case "max_output_kb":
			return flatInt(&in.MaxOutputKB, a)
		case "shell":
			switch a.kind {
			case 't', 'f':
				in.Shell = shellArg{force: a.kind == 't'}
			case 's':
				in.Shell = shellArg{force: a.text != "", name: a.text}
			case 'z':
				in.Shell = shellArg{}
			default:
				return false
			}
			return true
		default:
			return false
		}
		return a.kind == 's' // the string fields
	})
}

func (in *runIn) setFlat(args []flatArg) bool {
	return setEach(args, func(a flatArg) bool {
		switch a.name {
		case "cmd":
			in.Cmd = a.text
		case "name":
			in.Name = a.text
		case "timeout_secs":
			return flatFloat(&in.TimeoutSecs, a)
		case "wait_seconds":
			return flatFloat(&in.WaitSeconds, a)
		default:
			return false
		}
		return a.kind == 's' // the string fields
	})
}
