package tools

import (
	"encoding/json"
	"github.com/hivetools/hive/internal/service"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// registerAll adds every tool to a throwaway server (registration only:
// no handler runs), which fills schemaCache with every tool's types.
func registerAll(t testing.TB) *mcp.Server {
	t.Helper()
	srv := mcp.NewServer(&mcp.Implementation{Name: "hive-test"}, nil)
	h := &handlers{d: service.New(service.Service{}), sess: &Session{}}
	h.addExecution(srv)
	h.addInbox(srv)
	h.addTerminal(srv, &terminal{})
	h.addPTY(srv)
	h.addSearch(srv)
	h.addAlways(srv)
	return srv
}

// TestOutputsMatchSchemas stands in for the run-time output validation
// that addTool skips: every output type, empty and with every field set,
// marshals to JSON that its full schema (required properties, no unknown
// ones) accepts.
func TestOutputsMatchSchemas(t *testing.T) {
	registerAll(t)
	n := 0
	schemaCache.Range(func(k, v any) bool {
		out := k.(reflect.Type).Out(1)
		n++
		full, err := jsonschema.ForType(out, nil)
		if err != nil {
			t.Fatalf("%v: %v", out, err)
		}
		resolved, err := full.Resolve(nil)
		if err != nil {
			t.Fatalf("%v: %v", out, err)
		}
		for _, val := range []reflect.Value{reflect.New(out).Elem(), filled(out, 0)} {
			raw, err := json.Marshal(val.Interface())
			if err != nil {
				t.Fatalf("%v: marshal: %v", out, err)
			}
			var doc any
			if err := json.Unmarshal(raw, &doc); err != nil {
				t.Fatal(err)
			}
			if err := resolved.Validate(&doc); err != nil {
				t.Errorf("%v: %s does not match its schema: %v", out, raw, err)
			}
		}
		return true
	})
	if n < 20 {
		t.Fatalf("only %d tool types registered; want every tool", n)
	}
}

// filled makes a value of type rt with every field, element and pointer
// set to something non-zero.
func filled(rt reflect.Type, depth int) reflect.Value {
	v := reflect.New(rt).Elem()
	if depth > 4 {
		return v
	}
	switch rt.Kind() {
	case reflect.String:
		v.SetString("x")
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(7)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(7)
	case reflect.Float32, reflect.Float64:
		v.SetFloat(1.5)
	case reflect.Pointer:
		v.Set(filled(rt.Elem(), depth+1).Addr())
	case reflect.Slice:
		v.Set(reflect.Append(v, filled(rt.Elem(), depth+1)))
	case reflect.Map:
		v.Set(reflect.MakeMap(rt))
		v.SetMapIndex(filled(rt.Key(), depth+1), filled(rt.Elem(), depth+1))
	case reflect.Struct:
		for i := range rt.NumField() {
			if rt.Field(i).IsExported() {
				v.Field(i).Set(filled(rt.Field(i).Type, depth+1))
			}
		}
	}
	return v
}

func TestDecodeArgs(t *testing.T) {
	sc := schemasFor[runIn, TaskStatus]()
	in, err := decodeArgs[runIn](json.RawMessage(`{"cmd":"echo hi","name":"web","wait_seconds":1.5}`), sc)
	if err != nil || in.Cmd != "echo hi" || in.Name != "web" || in.WaitSeconds == nil || *in.WaitSeconds != 1.5 {
		t.Fatalf("good arguments: %+v %v", in, err)
	}
	bad := []struct {
		args string
		want string // the field the error must name
	}{
		{`{}`, "cmd"},
		{``, "cmd"},
		{`null`, "cmd"},
		{`{"cmd":5}`, "cmd"},
		{`{"cmd":"true","name":["a"]}`, "name"},
		{`{"cmd":"true","wait_seconds":"soon"}`, "wait_seconds"},
		{`{"cmd":"true","cmdd":"x"}`, "cmdd"},
		{`[1]`, "object"},
		{`{"cmd":`, "JSON"},
	}
	for _, tt := range bad {
		_, err := decodeArgs[runIn](json.RawMessage(tt.args), sc)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: error %v, want one naming %q", tt.args, err, tt.want)
		}
	}
}

// tools/list sends the schemas marshaled once at registration: a client
// sees the input schema's types and required properties, and the compact
// output schema.
func TestListedSchemas(t *testing.T) {
	srv := registerAll(t)
	ct, st := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(t.Context(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t"}, nil).Connect(t.Context(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var exec, page *mcp.Tool
	for _, tool := range res.Tools {
		switch tool.Name {
		case "terminal_exec":
			exec = tool
		case "terminal_output_get":
			page = tool
		}
	}
	if exec == nil {
		t.Fatalf("terminal_exec not listed among %d tools", len(res.Tools))
	}
	var in, out struct {
		Type                 string                     `json:"type"`
		Required             []string                   `json:"required"`
		Properties           map[string]json.RawMessage `json:"properties"`
		AdditionalProperties any                        `json:"additionalProperties"`
	}
	inRaw, _ := json.Marshal(exec.InputSchema)
	outRaw, _ := json.Marshal(exec.OutputSchema)
	// Listed without "additionalProperties": false, without "null" in
	// optional fields' types, without env's value type (TestDecodeArgs:
	// all three are still enforced).
	if err := json.Unmarshal(inRaw, &in); err != nil || in.Type != "object" || !slices.Contains(in.Required, "cmd") ||
		!strings.Contains(string(in.Properties["timeout_sec"]), `"type":"number"`) ||
		in.AdditionalProperties != nil || strings.Contains(string(inRaw), "null") || string(in.Properties["env"]) != `{"type":"object"}` {
		t.Errorf("input schema %s", inRaw)
	}
	if err := json.Unmarshal(outRaw, &out); err != nil || out.Properties["exit_code"] == nil || out.Required != nil {
		t.Errorf("output schema (compact) %s", outRaw)
	}
	// A description that is only a default number is listed as the
	// "default" keyword.
	pageRaw, _ := json.Marshal(page.InputSchema)
	if !strings.Contains(string(pageRaw), `"max_kb":{"default":64,"type":"integer"}`) {
		t.Errorf("terminal_output_get's input schema %s: want max_kb with \"default\":64 and no description", pageRaw)
	}
}
