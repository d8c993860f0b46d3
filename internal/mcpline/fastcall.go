package mcpline

import (
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// directCall is a tools/call read by readCall.
type directCall struct {
	req  *jsonrpc.Request
	name string
	args json.RawMessage // nil: no arguments key
}

// readCall reads line as the commonest message, without encoding/json's
// walk through reflection (decodeMessage, then goDirect's decoding of
// the params): a JSON object of the keys jsonrpc ("2.0"), id (digits, or
// a string of printable ASCII without escapes), method ("tools/call")
// and params, each once, params an object of name (as the id's strings)
// and arguments (any JSON value), each once. Whitespace goes anywhere
// JSON allows it. ok is false for anything else (the line is decoded as
// before). FuzzDecodeMessageAgrees holds what it reads to decodeMessage's
// and goDirect's reading.
func readCall(line []byte) (dc directCall, ok bool) {
	s := scan{b: line}
	var (
		id               jsonrpc.ID
		haveV, haveID    bool
		haveM, haveP     bool
		params, name     []byte
		args             []byte
		haveName, haveAr bool
	)
	if !s.object(func(key []byte) bool {
		switch string(key) {
		case "jsonrpc":
			v, ok := s.plainString()
			if haveV || !ok || string(v) != "2.0" {
				return false
			}
			haveV = true
		case "id":
			if haveID {
				return false
			}
			var err error
			if v, ok := s.plainString(); ok {
				id, err = jsonrpc.MakeID(string(v))
			} else if n, ok := s.smallInt(); ok {
				id, err = jsonrpc.MakeID(float64(n)) // as encoding/json reads it
			} else {
				return false
			}
			haveID = err == nil
			if !haveID {
				return false
			}
		case "method":
			v, ok := s.plainString()
			if haveM || !ok || string(v) != "tools/call" {
				return false
			}
			haveM = true
		case "params":
			if haveP {
				return false
			}
			s.space()
			start := s.i
			if !s.object(func(key []byte) bool {
				switch string(key) {
				case "name":
					v, ok := s.plainString()
					if haveName || !ok {
						return false
					}
					name, haveName = v, true
				case "arguments":
					if haveAr {
						return false
					}
					s.space()
					from := s.i
					if !s.value() {
						return false
					}
					args, haveAr = trimSpace(line[from:s.i]), true
				default:
					return false
				}
				return true
			}) {
				return false
			}
			params, haveP = line[start:s.i], true
		default:
			return false
		}
		return true
	}) {
		return directCall{}, false
	}
	s.space()
	if s.i != len(line) || !haveV || !haveID || !haveM || !haveP || !haveName {
		return directCall{}, false
	}
	if haveAr && !json.Valid(args) {
		return directCall{}, false
	}
	dc = directCall{req: &jsonrpc.Request{ID: id, Method: "tools/call", Params: append(json.RawMessage(nil), params...)}, name: string(name)}
	if haveAr {
		dc.args = append(json.RawMessage(nil), args...)
	}
	return dc, true
}

// scan reads JSON text from b at i.
type scan struct {
	b []byte
	i int
}

func (s *scan) space() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// object reads an object, calling member with each key (plain, as
// plainString reads it) for it to read the value; false if the text is
// not such an object or member said so.
func (s *scan) object(member func(key []byte) bool) bool {
	s.space()
	if s.i >= len(s.b) || s.b[s.i] != '{' {
		return false
	}
	s.i++
	s.space()
	if s.i < len(s.b) && s.b[s.i] == '}' {
		s.i++
		return true
	}
	for {
		key, ok := s.plainString()
		if !ok {
			return false
		}
		s.space()
		if s.i >= len(s.b) || s.b[s.i] != ':' {
			return false
		}
		s.i++
		if !member(key) {
			return false
		}
		s.space()
		if s.i >= len(s.b) {
			return false
		}
		switch s.b[s.i] {
		case ',':
			s.i++
		case '}':
			s.i++
			return true
		default:
			return false
		}
	}
}

// plainString reads a string of printable ASCII without escapes and
// returns its content.
func (s *scan) plainString() ([]byte, bool) {
	s.space()
	if s.i >= len(s.b) || s.b[s.i] != '"' {
		return nil, false
	}
	start := s.i + 1
	for j := start; j < len(s.b); j++ {
		switch c := s.b[j]; {
		case c == '"':
			s.i = j + 1
			return s.b[start:j], true
		case c < 0x20 || c > 0x7e || c == '\\':
			return nil, false
		}
	}
	return nil, false
}

// smallInt reads a non-negative integer of at most 15 digits (exact as a
// float64, as encoding/json reads an id), no leading zero.
func (s *scan) smallInt() (int64, bool) {
	s.space()
	start := s.i
	var n int64
	for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
		n = n*10 + int64(s.b[s.i]-'0')
		s.i++
	}
	digits := s.i - start
	if digits == 0 || digits > 15 || (digits > 1 && s.b[start] == '0') {
		return 0, false
	}
	if s.i < len(s.b) {
		switch s.b[s.i] {
		case '.', 'e', 'E':
			return 0, false
		}
	}
	return n, true
}

// value skips one JSON value, roughly: strings (with their escapes) and
// brackets are matched; what it skips is checked whole afterwards
// (json.Valid).
func (s *scan) value() bool {
	depth := 0
	for s.i < len(s.b) {
		switch c := s.b[s.i]; c {
		case '"':
			s.i++
			for s.i < len(s.b) && s.b[s.i] != '"' {
				if s.b[s.i] == '\\' {
					s.i++
				}
				s.i++
			}
			if s.i >= len(s.b) {
				return false
			}
			s.i++
		case '{', '[':
			depth++
			s.i++
		case '}', ']':
			if depth == 0 {
				return true // the end of what holds the value
			}
			depth--
			s.i++
		case ',':
			if depth == 0 {
				return true
			}
			s.i++
		default:
			s.i++
		}
		if depth == 0 && s.i > 0 && (s.b[s.i-1] == '"' || s.b[s.i-1] == '}' || s.b[s.i-1] == ']') {
			// A string or a container closed at the top: the value is whole.
			return true
		}
	}
	return depth == 0
}

// trimSpace drops the JSON whitespace at the end of b (after a number or
// a literal value skips to the comma or brace that ends it).
func trimSpace(b []byte) []byte {
	for len(b) > 0 {
		switch b[len(b)-1] {
		case ' ', '\t', '\n', '\r':
			b = b[:len(b)-1]
		default:
			return b
		}
	}
	return b
}
