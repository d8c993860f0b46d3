package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hivetools/hive/internal/jsonenc"
)

// toolSchemas are the schemas of one tool's input and output types.
type toolSchemas struct {
	in       *jsonschema.Schema
	resolved *jsonschema.Resolved // of in: what arguments are checked against
	check    *argCheck            // the same check, cheaper; nil: use resolved
	// The input schema and the compact output schema as JSON, marshaled
	// once: tools/list sends these bytes instead of marshaling every
	// schema of every tool on every list.
	inJSON, outJSON json.RawMessage
}

// schemaCache holds toolSchemas by handler type: every session builds its
// own server, and reflecting over the types once is enough.
var schemaCache sync.Map // reflect.Type (func type of the handler) → *toolSchemas

func schemasFor[In, Out any]() *toolSchemas {
	key := reflect.TypeFor[mcp.ToolHandlerFor[In, Out]]()
	if v, ok := schemaCache.Load(key); ok {
		return v.(*toolSchemas)
	}
	in, err := jsonschema.For[In](&jsonschema.ForOptions{TypeSchemas: inputTypeSchemas})
	if err != nil {
		panic(fmt.Sprintf("input schema of %v: %v", reflect.TypeFor[In](), err))
	}
	if in.Type != "object" {
		panic(fmt.Sprintf("input schema of %v: type %q, want object", reflect.TypeFor[In](), in.Type))
	}
	resolved, err := in.Resolve(&jsonschema.ResolveOptions{ValidateDefaults: true})
	if err != nil {
		panic(fmt.Sprintf("input schema of %v: %v", reflect.TypeFor[In](), err))
	}
	out, err := jsonschema.For[Out](nil)
	if err != nil {
		panic(fmt.Sprintf("output schema of %v: %v", reflect.TypeFor[Out](), err))
	}
	compact(out, true)
	sc := &toolSchemas{in: in, resolved: resolved}
	if sc.inJSON, err = listedInput(in); err != nil {
		panic(fmt.Sprintf("input schema of %v: %v", reflect.TypeFor[In](), err))
	}
	if sc.outJSON, err = json.Marshal(out); err != nil {
		panic(fmt.Sprintf("output schema of %v: %v", reflect.TypeFor[Out](), err))
	}
	if c, ok := compileArgCheck(in); ok {
		sc.check = c
	}
	v, _ := schemaCache.LoadOrStore(key, sc)
	return v.(*toolSchemas)
}

// addTool registers a typed tool, as mcp.AddTool does, but cheaper per
// call and with a compact output schema.
//
// mcp.AddTool decodes the arguments four times per call (into a map to
// validate, into the type; the output again to validate it) with a
// decoder that allocates 32 KiB each time, which was a third of a
// terminal_exec("true") round trip. Here the arguments are decoded twice
// with encoding/json (a map for the schema check, then the type), checked
// by argCheck, or, for the commonest arguments of terminal_exec and run,
// read once directly (flatargs.go); and the output is marshaled once (by
// its own AppendJSON where it has one: marshalOutput). The output is not
// validated at run time: it is marshaled from the very type its schema is
// derived from (TestOutputsMatchSchemas checks each type against its
// schema).
//
// The output schema drops "required" and "additionalProperties" (a client
// reads the output; it need not validate it). tools/list is paid for in
// every agent turn, so every byte of it counts.
func addTool[In, Out any](s *mcp.Server, t *mcp.Tool, h mcp.ToolHandlerFor[In, Out]) {
	sc := schemasFor[In, Out]()
	t.InputSchema = sc.inJSON
	t.OutputSchema = sc.outJSON
	h2 := func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		in, err := decodeArgs[In](req.Params.Arguments, sc)
		if err != nil {
			return errResult(fmt.Errorf("validating \"arguments\": %w", err)), nil
		}
		res, out, err := h(ctx, req, in)
		if err != nil {
			if werr, ok := err.(*jsonrpc.Error); ok {
				return nil, werr
			}
			return errResult(err), nil
		}
		if res == nil {
			res = &mcp.CallToolResult{}
		}
		raw, err := marshalOutput(out)
		if err != nil {
			return nil, fmt.Errorf("marshaling output: %w", err)
		}
		res.StructuredContent = raw
		if res.Content == nil {
			res.Content = []mcp.Content{&mcp.TextContent{Text: string(raw)}}
		}
		return res, nil
	}
	s.AddTool(t, h2)
	if d := DirectOf(s); d != nil {
		d.add(t.Name, h2)
	}
}

// decodeArgs checks a call's arguments against the input schema (types,
// required properties, no unknown ones) and decodes them. Absent
// arguments are an empty object. The commonest arguments of the hottest
// tools are read directly (flatDecoder, scanFlat); the rest, and every
// error, go decodeArgsLibrary's way.
func decodeArgs[In any](args json.RawMessage, sc *toolSchemas) (In, error) {
	var in In
	if len(args) == 0 || string(args) == "null" {
		args = json.RawMessage("{}")
	}
	if fd, ok := any(&in).(flatDecoder); ok && sc.check != nil {
		var buf [maxFlatArgs]flatArg
		if flat, ok := scanFlat(args, buf[:0]); ok && sc.check.checkFlat(flat) && fd.setFlat(flat) {
			return in, nil
		}
	}
	return decodeArgsLibrary[In](args, sc)
}

// decodeArgsLibrary is decodeArgs through encoding/json, for any
// arguments: the flat ones' way declines all but the commonest.
func decodeArgsLibrary[In any](args json.RawMessage, sc *toolSchemas) (In, error) {
	var in In
	if len(args) == 0 || string(args) == "null" {
		args = json.RawMessage("{}")
	}
	var m map[string]any
	if err := json.Unmarshal(args, &m); err != nil {
		return in, fmt.Errorf("not a JSON object: %w", err)
	}
	if m == nil {
		m = map[string]any{}
	}
	if sc.check != nil {
		if err := sc.check.check(m, ""); err != nil {
			return in, err
		}
	} else {
		var v any = m
		if err := sc.resolved.Validate(&v); err != nil {
			return in, err
		}
	}
	if err := json.Unmarshal(args, &in); err != nil {
		// The schema check passed, so the arguments are right by the
		// schema; encoding/json is stricter in two ways: an integer
		// written as 80.0 or 1e3, and a key given twice (the check saw the
		// last value). Decoding what the check saw settles both.
		again, merr := json.Marshal(m)
		if merr == nil {
			in = *new(In)
			if err = json.Unmarshal(again, &in); err == nil {
				return in, nil
			}
		}
		var ute *json.UnmarshalTypeError
		if errors.As(err, &ute) && ute.Field != "" {
			return in, fmt.Errorf("%s: %s is out of range for %s", ute.Field, strings.TrimPrefix(ute.Value, "number "), ute.Type)
		}
		return in, err
	}
	return in, nil
}

// jsonAppender is an output that writes its own JSON, byte for byte as
// json.Marshal does (each such type's test and fuzz target hold it to
// that): the answers of the hottest tools, encoded between a command's
// end and its answer.
type jsonAppender interface {
	AppendJSON(b []byte) []byte
}

// marshalOutput is json.Marshal(out), as compact JSON the answer's
// writer may copy as it is (jsonenc.Compact: json.Marshal's output is
// compact and HTML-escaped already).
func marshalOutput(out any) (jsonenc.Compact, error) {
	if a, ok := out.(jsonAppender); ok {
		return a.AppendJSON(make([]byte, 0, 512)), nil
	}
	raw, err := json.Marshal(out)
	return jsonenc.Compact(raw), err
}

func errResult(err error) *mcp.CallToolResult {
	var res mcp.CallToolResult
	res.SetError(err)
	return &res
}

// compact shortens an output schema (root: the top level). It types the
// top level's fields; a nested record (an object, a list of objects) is
// typed as an object or a list, without its fields: they are in every
// answer, and spelling them out cost 2 KB of tools/list (11 records).
// A list of scalars keeps its items' type.
func compact(s *jsonschema.Schema, root bool) {
	if s == nil {
		return
	}
	s.Required = nil
	s.AdditionalProperties = nil
	// Handlers answer an empty list as [], never null (each makes its
	// lists non-nil; a client validating against this schema would refuse
	// a null, and the e2e tests call every tool): "array" alone says it.
	if len(s.Types) == 2 && s.Types[0] == "null" && s.Types[1] == "array" {
		s.Types, s.Type = nil, "array"
	}
	if s.Items != nil && len(s.Items.Properties) > 0 {
		s.Items = nil
	}
	if !root {
		s.Properties = nil
		return
	}
	for _, p := range s.Properties {
		compact(p, false)
	}
}

// listedInput is the input schema as tools/list shows it, which is paid
// for in every agent turn; arguments are still checked against the whole
// schema. Three things are left out:
//   - "additionalProperties": false, 29 bytes a tool: unknown arguments
//     are refused with an error naming them, and the instructions say so
//     once for all tools;
//   - "null" in an optional pointer field's type ["null", T]: the field is
//     optional by not being required (an explicit null is still taken, as
//     absent); 9 bytes a field;
//   - the type of a map's values (env's "additionalProperties":
//     {"type":"string"}, 38 bytes a map): a value of another type is
//     refused with an error naming it (env/A: want string).
//
// And a property whose description is only its default number
// (`jsonschema:"default 64"`) is listed with that as its "default"
// instead, 14 bytes shorter.
func listedInput(in *jsonschema.Schema) (json.RawMessage, error) {
	raw, err := json.Marshal(in)
	if err != nil {
		return nil, err
	}
	var c jsonschema.Schema
	if err := json.Unmarshal(raw, &c); err != nil {
		return nil, err
	}
	if b, err := json.Marshal(c.AdditionalProperties); err == nil && string(b) == "false" {
		c.AdditionalProperties = nil
	}
	dropNull(&c)
	for _, p := range c.Properties {
		if p.Type == "object" {
			p.AdditionalProperties = nil
		}
		if v, ok := strings.CutPrefix(p.Description, "default "); ok {
			if _, err := strconv.ParseFloat(v, 64); err == nil {
				p.Description, p.Default = "", json.RawMessage(v)
			}
		}
	}
	return json.Marshal(&c)
}

func dropNull(s *jsonschema.Schema) {
	if s == nil {
		return
	}
	if len(s.Types) == 2 && s.Types[0] == "null" {
		s.Type, s.Types = s.Types[1], nil
	}
	for _, p := range s.Properties {
		dropNull(p)
	}
	dropNull(s.Items)
}
