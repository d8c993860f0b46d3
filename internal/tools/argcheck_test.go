package tools

import (
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

// randomValue is a JSON value of a random type, as encoding/json decodes
// it; arrays and objects hold random values too.
func randomValue(r *rand.Rand, depth int) any {
	n := 7
	if depth > 2 {
		n = 5 // no more nesting
	}
	switch r.IntN(n) {
	case 0:
		return nil
	case 1:
		return r.IntN(2) == 0
	case 2:
		return float64(r.IntN(2000) - 1000)
	case 3:
		return r.Float64()*100 - 50
	case 4:
		return []string{"", "x", "rm -rf /", "é"}[r.IntN(4)]
	case 5:
		a := make([]any, r.IntN(3))
		for i := range a {
			a[i] = randomValue(r, depth+1)
		}
		return a
	default:
		m := map[string]any{}
		for range r.IntN(3) {
			m[[]string{"K", "PATH", "x"}[r.IntN(3)]] = randomValue(r, depth+1)
		}
		return m
	}
}

// TestArgCheckAgreesWithJSONSchema: for every tool's input schema, the
// cheap check accepts and rejects exactly what jsonschema's validator
// does, on random arguments (right and wrong types, missing and unknown
// properties, nested arrays and maps).
func TestArgCheckAgreesWithJSONSchema(t *testing.T) {
	registerAll(t)
	r := rand.New(rand.NewPCG(1, 2))
	tools := 0
	schemaCache.Range(func(k, v any) bool {
		sc := v.(*toolSchemas)
		name := k.(reflect.Type).In(2).String()
		if sc.check == nil {
			t.Errorf("%s: input schema outside the cheap check's subset", name)
			return true
		}
		tools++
		accepted, rejected := 0, 0
		for range 3000 {
			m := map[string]any{}
			for p := range sc.in.Properties {
				if r.IntN(10) < 8 {
					m[p] = randomValue(r, 0)
				}
			}
			if r.IntN(6) == 0 {
				m["no_such_arg"] = randomValue(r, 0)
			}
			var v any = m
			want := sc.resolved.Validate(&v)
			got := sc.check.check(m, "")
			if (want == nil) != (got == nil) {
				t.Fatalf("%s %v: jsonschema says %v, argCheck says %v", name, m, want, got)
			}
			if got == nil {
				accepted++
			} else {
				rejected++
			}
		}
		if accepted == 0 {
			// Random arguments never passed (many properties): the
			// required ones alone, each of its first type, must.
			m := map[string]any{}
			for _, p := range sc.in.Required {
				m[p] = sampleFor(sc.check.props[p])
			}
			var v any = m
			if err := sc.resolved.Validate(&v); err != nil || sc.check.check(m, "") != nil {
				t.Fatalf("%s %v: not accepted by both: %v / %v", name, m, err, sc.check.check(m, ""))
			}
		}
		if rejected == 0 {
			t.Errorf("%s: no random arguments were rejected", name)
		}
		return true
	})
	if tools < 20 {
		t.Fatalf("only %d tools checked", tools)
	}
}

// sampleFor is a value of the first type c allows.
func sampleFor(c *argCheck) any {
	if c == nil || len(c.types) == 0 {
		return "x"
	}
	switch c.types[0] {
	case "string":
		return "x"
	case "integer", "number":
		return float64(1)
	case "boolean":
		return true
	case "array":
		return []any{}
	case "object":
		return map[string]any{}
	}
	return nil
}

func TestArgCheckMessages(t *testing.T) {
	sc := schemasFor[execIn, Envelope]()
	for _, tt := range []struct {
		args map[string]any
		want string
	}{
		{map[string]any{}, `arguments: missing required property "cmd"`},
		{map[string]any{"cmd": 5.0}, "cmd: got integer 5, want string"},
		{map[string]any{"cmd": "x", "timeout_sec": "soon"}, `timeout_sec: got string "soon", want null or number`},
		{map[string]any{"cmd": "x", "env": map[string]any{"A": 1.0}}, "env/A: got integer 1, want string"},
		{map[string]any{"cmd": "x", "cmdd": "y"}, `arguments: unknown properties ["cmdd"]`},
	} {
		err := sc.check.check(tt.args, "")
		if err == nil || len(err.Error()) < len(tt.want) || err.Error()[:len(tt.want)] != tt.want {
			t.Errorf("%v: %v, want %q", tt.args, err, tt.want)
		}
	}
}

// Integers written as 80.0 or 8e1 (as some clients send them) and a key
// given twice are read as the schema check read them; an integer past
// Go's range is refused naming the field.
func TestDecodeArgsIntegersAndDuplicates(t *testing.T) {
	sc := schemasFor[ptyResizeIn, PTYInfo]()
	for _, args := range []string{
		`{"session_id":"s","cols":80.0,"rows":24}`,
		`{"session_id":"s","cols":8e1,"rows":2.4e1}`,
		`{"session_id":"s","cols":"wide","cols":80,"rows":24}`,
	} {
		in, err := decodeArgs[ptyResizeIn](json.RawMessage(args), sc)
		if err != nil || in.Cols != 80 || in.Rows != 24 {
			t.Errorf("%s: %+v %v, want cols 80 rows 24", args, in, err)
		}
	}
	_, err := decodeArgs[ptyResizeIn](json.RawMessage(`{"session_id":"s","cols":1e19,"rows":24}`), sc)
	if err == nil || !strings.HasPrefix(err.Error(), "cols: ") || !strings.Contains(err.Error(), "out of range") {
		t.Errorf("cols 1e19: %v, want an error naming cols", err)
	}
}
