package tools

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
)

// argCheck validates decoded arguments (the values encoding/json makes:
// nil, bool, float64, string, []any, map[string]any) against an input
// schema of the kind jsonschema.For makes from a Go type: types,
// properties, required, additionalProperties and items. It gives the same
// verdicts as jsonschema's Resolved.Validate on such schemas
// (TestArgCheckAgreesWithJSONSchema) for a fraction of the cost: that one
// recursed deep enough to grow each call's fresh goroutine stack, and the
// two together were a tenth of the daemon's CPU per terminal_exec.
type argCheck struct {
	types      []string // allowed JSON types; empty: any
	props      map[string]*argCheck
	required   []string
	closed     bool      // additionalProperties: false
	additional *argCheck // additionalProperties: a schema (maps)
	items      *argCheck
}

// compileArgCheck builds the check for s, or reports false if s uses a
// keyword the check does not know (the caller then keeps jsonschema's
// validator).
func compileArgCheck(s *jsonschema.Schema) (*argCheck, bool) {
	if s == nil {
		return nil, true
	}
	rest := *s
	rest.Type, rest.Types, rest.Properties, rest.Required = "", nil, nil, nil
	rest.AdditionalProperties, rest.Items, rest.PropertyOrder = nil, nil, nil
	rest.Title, rest.Description, rest.Comment, rest.Examples = "", "", "", nil
	rest.Deprecated, rest.ReadOnly, rest.WriteOnly = false, false, false
	if !isEmptySchema(&rest) {
		return nil, false // a keyword outside the subset
	}
	c := &argCheck{required: s.Required}
	if s.Type != "" {
		c.types = []string{s.Type}
	} else {
		c.types = s.Types
	}
	for name, ps := range s.Properties {
		pc, ok := compileArgCheck(ps)
		if !ok {
			return nil, false
		}
		if c.props == nil {
			c.props = map[string]*argCheck{}
		}
		c.props[name] = pc
	}
	if a := s.AdditionalProperties; a != nil {
		if isFalseSchema(a) {
			c.closed = true
		} else {
			ac, ok := compileArgCheck(a)
			if !ok {
				return nil, false
			}
			c.additional = ac
		}
	}
	if s.Items != nil {
		ic, ok := compileArgCheck(s.Items)
		if !ok {
			return nil, false
		}
		c.items = ic
	}
	return c, true
}

// isFalseSchema reports whether s is the schema nothing matches ({"not":{}}).
func isFalseSchema(s *jsonschema.Schema) bool {
	if s.Not == nil || !isEmptySchema(s.Not) {
		return false
	}
	rest := *s
	rest.Not = nil
	return isEmptySchema(&rest)
}

// isEmptySchema reports whether s has no keyword at all (it matches
// everything; jsonschema marshals it as true).
func isEmptySchema(s *jsonschema.Schema) bool {
	b, err := json.Marshal(s)
	return err == nil && (string(b) == "true" || string(b) == "{}")
}

// check validates v; path names where, for the error ("" is the root).
func (c *argCheck) check(v any, path string) error {
	if c == nil {
		return nil
	}
	if len(c.types) > 0 {
		t := jsonType(v)
		if !c.allows(t) {
			return fmt.Errorf("%s: got %s %s, want %s", where(path), t, short(v), strings.Join(c.types, " or "))
		}
	}
	switch v := v.(type) {
	case map[string]any:
		for _, name := range c.required {
			if _, ok := v[name]; !ok {
				return fmt.Errorf("%s: missing required property %q", where(path), name)
			}
		}
		var unknown []string
		for name, pv := range v {
			if pc, ok := c.props[name]; ok {
				if err := pc.check(pv, path+"/"+name); err != nil {
					return err
				}
				continue
			}
			switch {
			case c.closed:
				unknown = append(unknown, name)
			case c.additional != nil:
				if err := c.additional.check(pv, path+"/"+name); err != nil {
					return err
				}
			}
		}
		if len(unknown) > 0 {
			sort.Strings(unknown)
			return fmt.Errorf("%s: unknown properties %q (known: %s)", where(path), unknown, strings.Join(c.known(), ", "))
		}
	case []any:
		for i, e := range v {
			if err := c.items.check(e, fmt.Sprintf("%s/%d", path, i)); err != nil {
				return err
			}
		}
	}
	return nil
}

func (c *argCheck) known() []string {
	names := make([]string, 0, len(c.props))
	for n := range c.props {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func where(path string) string {
	if path == "" {
		return "arguments"
	}
	return strings.TrimPrefix(path, "/")
}

// jsonType is the JSON Schema type of a value decoded by encoding/json;
// a number with no fraction is an "integer".
func jsonType(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case float64:
		return numberType(v)
	case string:
		return "string"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return fmt.Sprintf("%T", v)
}

// numberType is the JSON Schema type of a number: "integer" if it has
// no fraction.
func numberType(v float64) string {
	if v == math.Trunc(v) && !math.IsInf(v, 0) {
		return "integer"
	}
	return "number"
}

// allows reports whether c's types take a value of JSON type t (an
// integer is a number too); c has types.
func (c *argCheck) allows(t string) bool {
	return slices.Contains(c.types, t) || (t == "integer" && slices.Contains(c.types, "number"))
}

// short quotes a scalar for an error message.
func short(v any) string {
	switch v.(type) {
	case []any, map[string]any:
		return ""
	}
	b, _ := json.Marshal(v)
	if len(b) > 40 {
		b = append(b[:37], "..."...)
	}
	return string(b)
}
