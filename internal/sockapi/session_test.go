//go:build unix

package sockapi

import (
	"bufio"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hivetools/hive/internal/hivetest"
)

// A socket session's tool calls are told in the activity as unix-N (the
// session's number, not an address) with the name its client gave.
func TestSessionNamesInActivity(t *testing.T) {
	l, srv, _, served := serve(t)
	defer func() {
		cancelServe(t, l, served)
		srv.Close()
	}()
	inW, outR, closeStdio := openStdioMCP(t, l)
	defer closeStdio()
	inW.Write([]byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"claude-code","version":"1"}}}` + "\n" +
		`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n" +
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"set_status","arguments":{"text":"testing"}}}` + "\n"))
	outR.SetReadDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(outR)
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(line, `"id":2`) {
			break
		}
	}
	hivetest.Eventually(t, 10*time.Second, "the call in the activity", func() error {
		calls, _ := srv.svc.Activity.Since(0)
		for _, c := range calls {
			if c.Tool == "set_status" && c.Session == "unix-1" && c.Client == "claude-code" {
				return nil
			}
		}
		return fmt.Errorf("calls %+v: want set_status from unix-1, client claude-code", calls)
	})
}
