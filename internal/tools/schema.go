package tools

import (
	"fmt"
	"reflect"
	"sync"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// outSchemas caches compact output schemas by Go type.
var outSchemas sync.Map // reflect.Type → *jsonschema.Schema

// addTool is mcp.AddTool with a compact output schema: the same types,
// without "required" and "additionalProperties" (a client reads the
// output; it need not validate it). tools/list is paid for in every agent
// turn, so every byte of it counts.
func addTool[In, Out any](s *mcp.Server, t *mcp.Tool, h mcp.ToolHandlerFor[In, Out]) {
	rt := reflect.TypeFor[Out]()
	v, ok := outSchemas.Load(rt)
	if !ok {
		sch, err := jsonschema.For[Out](nil)
		if err != nil {
			panic(fmt.Sprintf("output schema of %s: %v", t.Name, err))
		}
		compact(sch)
		v, _ = outSchemas.LoadOrStore(rt, sch)
	}
	t.OutputSchema = v.(*jsonschema.Schema)
	mcp.AddTool(s, t, h)
}

func compact(s *jsonschema.Schema) {
	if s == nil {
		return
	}
	s.Required = nil
	s.AdditionalProperties = nil
	for _, p := range s.Properties {
		compact(p)
	}
	compact(s.Items)
}
