package mcpline

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hivetools/hive/internal/hivetest"
)

// steps records, in order, what the reader and a direct call did.
type steps struct {
	mu  sync.Mutex
	got []string
}

func (s *steps) add(step string) {
	s.mu.Lock()
	s.got = append(s.got, step)
	s.mu.Unlock()
}

func (s *steps) list() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.got...)
}

// readSteps is a connection's input that records each read as it begins.
type readSteps struct {
	io.ReadCloser
	s *steps
}

func (r readSteps) Read(p []byte) (int, error) {
	r.s.add("read")
	return r.ReadCloser.Read(p)
}

// directSteps answers the tool "step" directly, recording the call.
type directSteps struct{ s *steps }

func (d directSteps) Has(name string) bool { return name == "step" }

func (d directSteps) Call(context.Context, *mcp.ServerSession, *mcp.CallToolParamsRaw) (*mcp.CallToolResult, error) {
	d.s.add("call")
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, nil
}

// A call Direct answers begins before the reader reads on: on a daemon
// with one processor for its goroutines the reader would otherwise read
// again (most often to find nothing, and wait) before the call ran.
func TestDirectCallRunsBeforeTheNextRead(t *testing.T) {
	var s steps
	var tr *Transport
	inW, out := serveLines(t, mcp.NewServer(&mcp.Implementation{Name: "order-test"}, nil), func(r io.ReadCloser, w io.WriteCloser) *Transport {
		tr = &Transport{Reader: readSteps{r, &s}, Writer: w, Direct: directSteps{&s}}
		return tr
	})

	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	// Each call: the read under way when its line was written returns
	// it; then the call, then the next read, which begins before any new
	// line comes (waited for: it may begin after the answer was read
	// here). Had the reader read on first, that read would be before the
	// call, and none would come after it until the next line. The race
	// detector shuffles the scheduler's order now and then: most calls,
	// not all, must show it.
	const calls = 5
	ordered := 0
	var last []string
	for i := range calls {
		before := len(s.list())
		send(t, inW, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"step","arguments":{}}}`, 2+i))
		if line := answerLine(t, out); !strings.Contains(line, `"done"`) {
			t.Fatalf("the call's answer: %s", line)
		}
		err := hivetest.Wait(2*time.Second, func() error {
			last = s.list()[before:]
			if i := slices.Index(last, "call"); i < 0 || !slices.Contains(last[i+1:], "read") {
				return fmt.Errorf("no read after the call: %q", last)
			}
			return nil
		})
		if err == nil {
			ordered++
		}
	}
	if tr.DirectCalls() != calls {
		t.Fatalf("%d calls went to Direct, want %d", tr.DirectCalls(), calls)
	}
	if ordered < calls-2 {
		t.Errorf("%d of %d calls ran before the reader read on (the last: %q); want most", ordered, calls, last)
	}
}
