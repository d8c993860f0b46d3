package tools

import (
	"encoding/json"
	"fmt"
	"reflect"

	"github.com/google/jsonschema-go/jsonschema"
)

// shellArg is terminal_exec's shell argument, in either form: the seed's
// boolean (true: run under the policy shell, shell.Default; false: decide
// by the command, as when it is absent) or the name or path of an allowed
// shell ("bash"; on Windows also "powershell", "pwsh", "cmd"), checked by
// shell.Resolve.
type shellArg struct {
	force bool   // true, or a name
	name  string // the string form; "" for the boolean
}

func (a *shellArg) UnmarshalJSON(b []byte) error {
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	switch v := v.(type) {
	case bool:
		*a = shellArg{force: v}
	case string:
		*a = shellArg{force: v != "", name: v}
	case nil:
		*a = shellArg{}
	default:
		return fmt.Errorf("shell: must be a boolean or a shell name, got %s", b)
	}
	return nil
}

// inputTypeSchemas are the schemas of argument types whose Go type does not
// say their JSON form.
var inputTypeSchemas = map[reflect.Type]*jsonschema.Schema{
	reflect.TypeFor[shellArg]():  {Types: []string{"boolean", "string"}},
	reflect.TypeFor[limitsArg](): {Type: "object"},
}
