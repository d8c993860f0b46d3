package tools

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"sort"
	"strings"
	"testing"
)

// fuzzTool is one tool's input schema and a decoder into its input type.
type fuzzTool struct {
	name   string // the input type, for messages
	sc     *toolSchemas
	decode func(json.RawMessage, *toolSchemas) error
}

func decoderFor[In any]() (reflect.Type, func(json.RawMessage, *toolSchemas) error) {
	return reflect.TypeFor[In](), func(args json.RawMessage, sc *toolSchemas) error {
		_, err := decodeArgs[In](args, sc)
		return err
	}
}

// fuzzTools lists every registered tool's input (schemaCache, as
// TestArgCheckAgreesWithJSONSchema iterates it) with decodeArgs for its
// type. A tool whose input type has no decoder here fails the test.
func fuzzTools(tb testing.TB) []fuzzTool {
	registerAll(tb)
	decoders := map[reflect.Type]func(json.RawMessage, *toolSchemas) error{}
	for _, add := range []func() (reflect.Type, func(json.RawMessage, *toolSchemas) error){
		decoderFor[runIn], decoderFor[statusIn], decoderFor[killIn],
		decoderFor[execIn], decoderFor[outputGetIn],
		decoderFor[jobStartIn], decoderFor[jobLogsIn], decoderFor[jobListIn], decoderFor[jobKillIn],
		decoderFor[ptyOpenIn], decoderFor[ptySendIn], decoderFor[ptyReadIn], decoderFor[ptyResizeIn], decoderFor[ptyIDIn],
		decoderFor[rgIn], decoderFor[globIn],
		decoderFor[cancelIn], decoderFor[markIn], decoderFor[statusTextIn],
		decoderFor[remindIn], decoderFor[readInboxIn], decoderFor[metaIn], decoderFor[looseEndsIn],
		decoderFor[struct{}],
	} {
		typ, dec := add()
		decoders[typ] = dec
	}
	var out []fuzzTool
	schemaCache.Range(func(k, v any) bool {
		in := k.(reflect.Type).In(2)
		dec, ok := decoders[in]
		if !ok {
			tb.Fatalf("%v: input type without a decoder in fuzzTools", in)
		}
		out = append(out, fuzzTool{name: in.String(), sc: v.(*toolSchemas), decode: dec})
		return true
	})
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	if len(out) < 20 {
		tb.Fatalf("only %d tools registered", len(out))
	}
	return out
}

// validatorVerdict is jsonschema's verdict on args, decoded the way
// decodeArgs decodes them (absent or null arguments are an empty object).
func validatorVerdict(sc *toolSchemas, args []byte) error {
	if len(args) == 0 {
		args = []byte("{}")
	}
	var v any
	if err := json.Unmarshal(args, &v); err != nil {
		return err
	}
	if v == nil {
		v = map[string]any{}
	}
	return sc.resolved.Validate(&v)
}

// FuzzArgCheck: on arbitrary bytes as the arguments of every tool,
// decodeArgs never panics, it accepts exactly what jsonschema's validator
// accepts, and its errors name a field (or say "not a JSON object").
//
// One disagreement is known and tolerated here (see knownTypedDecodeGap):
// the schema check passes but the final decode into the Go type fails.
func FuzzArgCheck(f *testing.F) {
	tools := fuzzTools(f)
	for _, s := range []string{
		``, `null`, `{}`, `[]`, `"cmd"`, `5`, `{"cmd":"ls -la"}`, `{"cmd":5}`,
		`{"cmd":"x","env":{"A":"1","B":2}}`, `{"cmd":"x","cmdd":"y"}`, `{"ids":[1,2,3]}`, `{"ids":[1.5]}`,
		`{"session_id":"p1","cols":80,"rows":24}`, `{"id":"t1","wait_seconds":null}`,
		`{"job_id":"j","since_offset":-1,"max_kb":1e3}`, `{"text":"\u00e9\ud800"}`, `{"pattern":"a","glob":["*.go",null]}`,
		`{"cmd":"x"`, "{\"cmd\":\"\xff\"}", `{"a":{"b":{"c":[[[[]]]]}}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, args []byte) {
		for _, tt := range tools {
			got := tt.decode(args, tt.sc)
			want := validatorVerdict(tt.sc, args)
			switch {
			case got == nil && want != nil:
				t.Fatalf("%s %q: decodeArgs accepts, jsonschema rejects: %v", tt.name, args, want)
			case got != nil && want == nil && !knownTypedDecodeGap(got, args):
				t.Fatalf("%s %q: jsonschema accepts, decodeArgs rejects: %v", tt.name, args, got)
			case got != nil:
				if why := unnamed(got, tt.sc); why != "" {
					t.Fatalf("%s %q: error %q %s", tt.name, args, got, why)
				}
			}
		}
	})
}

// knownTypedDecodeGap reports whether err is decodeArgs refusing, by
// name, an integer the schema accepts but Go's int cannot hold (1e19):
// the schema states no range. Integers written 1.0 or 1e3, and keys given
// twice, must agree with the validator.
func knownTypedDecodeGap(err error, args []byte) bool {
	return strings.Contains(err.Error(), "is out of range for")
}

// duplicateKeys reports whether some object in the JSON text b has a key
// twice.
func duplicateKeys(b []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(b))
	type frame struct {
		keys  map[string]bool
		isObj bool
		key   bool // the next string token of this object is a key
	}
	var stack []*frame
	for {
		tok, err := dec.Token()
		if err == io.EOF || err != nil {
			return false
		}
		top := (*frame)(nil)
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if top != nil && top.isObj && top.key {
			if s, ok := tok.(string); ok {
				if top.keys[s] {
					return true
				}
				top.keys[s] = true
				top.key = false
				continue
			}
		}
		switch tok {
		case json.Delim('{'):
			if top != nil && top.isObj {
				top.key = true
			}
			stack = append(stack, &frame{keys: map[string]bool{}, isObj: true, key: true})
			continue
		case json.Delim('['):
			if top != nil && top.isObj {
				top.key = true
			}
			stack = append(stack, &frame{})
			continue
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
		}
		if len(stack) > 0 && stack[len(stack)-1].isObj {
			stack[len(stack)-1].key = true // a value ended: a key follows
		}
	}
}

// unnamed says what is wrong with a decodeArgs error that names no field
// ("" if it names one): it must say "not a JSON object", or start with
// "arguments:" or a path whose first step is a property of the schema, or
// be a typed-decode error naming its field.
func unnamed(err error, sc *toolSchemas) string {
	msg := err.Error()
	var ute *json.UnmarshalTypeError
	switch {
	case strings.HasPrefix(msg, "not a JSON object: "):
		return ""
	case errors.As(err, &ute):
		if ute.Field == "" {
			return "names no field"
		}
		return ""
	}
	where, _, ok := strings.Cut(msg, ": ")
	if !ok {
		return "has no \"field: \" prefix"
	}
	if where == "arguments" {
		return ""
	}
	first, _, _ := strings.Cut(where, "/")
	if _, ok := sc.in.Properties[first]; !ok {
		return "names " + first + ", which is no property"
	}
	return ""
}
