package reliability

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/hivetools/hive/internal/proto"
)

// Row 18: get_loose_ends is bounded whatever a local program raises: with
// thousands of todos open, one answer lists 50 (the default) with the
// total, and todos_offset pages through all of them, each once.
func TestRow18LooseEndsBounded(t *testing.T) {
	n := count(2000, 10000)
	d := startDaemon(t, newStateDir(t))
	summary := strings.Repeat("a todo's summary, as a program words it; ", 2)
	for i := range n {
		if _, err := d.Call(proto.Request{Cmd: proto.CmdTodo, Subsystem: "ci", Key: fmt.Sprintf("build-%05d", i), Summary: summary}); err != nil {
			t.Fatalf("todo %d: %v", i, err)
		}
	}
	s := d.MCP()
	type page struct {
		Todos []struct {
			ID  int64  `json:"id"`
			Key string `json:"key"`
		} `json:"todos"`
		TodosTotal int `json:"todos_total"`
	}
	var raw map[string]any
	s.MustCall("get_loose_ends", nil, &raw)
	b, _ := json.Marshal(raw)
	var first page
	json.Unmarshal(b, &first)
	if len(first.Todos) != 50 || first.TodosTotal != n {
		t.Fatalf("get_loose_ends with %d todos: %d listed of %d, want 50 of %d", n, len(first.Todos), first.TodosTotal, n)
	}
	seen := map[string]bool{}
	for off := 0; off < n; off += 500 {
		var p page
		s.MustCall("get_loose_ends", map[string]any{"limit": 500, "todos_offset": off}, &p)
		for _, td := range p.Todos {
			if seen[td.Key] {
				t.Fatalf("todo %s listed twice", td.Key)
			}
			seen[td.Key] = true
		}
	}
	if len(seen) != n {
		t.Errorf("the pages listed %d todos, want %d", len(seen), n)
	}
	if _, isErr := s.Call("get_loose_ends", map[string]any{"limit": 100000}, nil); !isErr {
		t.Error("get_loose_ends with limit 100000: no error, want the rule named")
	}
	if len(b) > 64<<10 {
		t.Errorf("get_loose_ends with %d todos answers %d bytes of structured content, want a bounded answer", n, len(b))
	}
	figure(t, 18, "get_loose_ends with %d todos: 50 listed by default with the total (%d bytes); %d pages of 500 list each once", n, len(b), (n+499)/500)
}
