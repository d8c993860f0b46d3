//go:build unix

package sockapi

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hivetools/hive/internal/hivetest"
	"github.com/hivetools/hive/internal/mcpline"
	"github.com/hivetools/hive/internal/proto"
)

// serveAgree serves a socket for the test (stopped at its end) and
// returns its server and an opener of stdio MCP sessions on it.
func serveAgree(t testing.TB) (*Server, func(proto.Request) (*os.File, *os.File, func())) {
	l, srv, _, served := serve(t)
	t.Cleanup(func() {
		cancelServe(t, l, served)
		srv.Close()
	})
	return srv, func(req proto.Request) (*os.File, *os.File, func()) { return openStdioMCPWith(t, l, req) }
}

// agreeSession is a stdio MCP session of a test, initialized.
type agreeSession struct {
	t   testing.TB
	in  *os.File
	out *os.File
	br  *bufio.Reader
}

func openAgreeSession(t testing.TB, srv *Server, l func(proto.Request) (*os.File, *os.File, func()), answers string, direct bool) (*agreeSession, *mcpline.Transport) {
	t.Helper()
	told := make(chan *mcpline.Transport, 1)
	f := func(lt *mcpline.Transport) { told <- lt }
	srv.onMCP.Store(&f)
	srv.noDirect.Store(!direct)
	in, out, closeAll := l(proto.Request{Cmd: proto.CmdMCP, Answers: answers})
	t.Cleanup(closeAll)
	// Told once the transport knows its session (SetSession): the calls
	// sent from then on may take the short path.
	var lt *mcpline.Transport
	select {
	case lt = <-told:
	case <-time.After(20 * time.Second):
		t.Fatal("the session's transport was not told")
	}
	s := &agreeSession{t: t, in: in, out: out, br: bufio.NewReader(out)}
	s.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"agree","version":"1"}}}`)
	s.answer("1")
	s.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return s, lt
}

func (s *agreeSession) send(line string) {
	s.t.Helper()
	if _, err := s.in.Write([]byte(line + "\n")); err != nil {
		s.t.Fatal(err)
	}
}

// answer reads lines until the answer to the call with id (its JSON
// text) and returns it; notifications are skipped.
func (s *agreeSession) answer(id string) string {
	s.t.Helper()
	s.out.SetReadDeadline(time.Now().Add(20 * time.Second))
	for {
		line, err := s.br.ReadString('\n')
		if err != nil {
			s.t.Fatalf("waiting for the answer to %s: %v", id, err)
		}
		if strings.HasPrefix(line, `{"jsonrpc":"2.0","id":`+id+`,`) {
			return line
		}
	}
}

// The parts of an answer that differ from one call to the next: job ids,
// times, durations, pids, CPU use.
var (
	agreeIDs   = regexp.MustCompile(`\b[0-9a-f]{8}\b`)
	agreeNums  = regexp.MustCompile(`"([a-z_]*(?:_ms|_at|pid))":\d+`)
	agreeTimes = regexp.MustCompile(`\b\d+(\.\d+)?(ns|µs|ms|s|m|h)\b|\b\d+ ms\b`)
)

func agreeForm(line string) string {
	line = agreeIDs.ReplaceAllString(line, "ID")
	line = agreeNums.ReplaceAllString(line, `"$1":N`)
	return agreeTimes.ReplaceAllString(line, "T")
}

// A tools/call that mcpline's Direct answers (the daemon's short path,
// past the go-sdk's dispatch) gets the answer the go-sdk's server gives:
// the same calls on a session with the short path and on one without,
// the answers compared byte for byte but for ids, times and counters.
// With structured and with text answers; calls the short path must
// leave to the server (an unknown tool, a folded key, _meta of the newer
// protocol) are answered alike too, and the short path is seen to have
// taken exactly the calls it may.
func TestDirectAgrees(t *testing.T) {
	srv, open := serveAgree(t)
	calls := []struct {
		params string
		direct bool
	}{
		{`{"name":"set_status","arguments":{"text":"agreeing"}}`, true},
		{`{"name":"terminal_exec","arguments":{"cmd":"printf '<a&b> \u00e9'; echo err >&2; exit 3"}}`, true},
		{`{"name":"terminal_exec","arguments":{"cmd":1}}`, true},
		{`{"name":"terminal_exec","arguments":{"cmd":"true","bogus":1}}`, true},
		{`{"name":"terminal_exec"}`, true},
		{`{"name":"terminal_exec","arguments":null}`, true},
		{`{"name":"terminal_exec","arguments":5}`, true},
		{`{"name":"terminal_exec","arguments":{"cmd":"true"},"_meta":null}`, true},
		{`{"name":"run","arguments":{"cmd":"echo hi","wait_seconds":5}}`, true},
		{`{"name":"terminal_exec","arguments":{"cmd":"echo meta"},"_meta":{"progressToken":7,"x/y":"z"}}`, true},
		{`{"name":"nope","arguments":{}}`, false},
		{`{"Name":"terminal_exec","arguments":{"cmd":"true"}}`, false},
		{`{"name":"terminal_exec","arguments":{"cmd":"true"},"extra":1}`, false},
		{`{"name":"terminal_exec","arguments":{"cmd":"true"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2025-06-18"}}`, false},
		{`{"name":"terminal_exec","arguments":{"cmd":"true"},"_meta":[1]}`, false},
		{`{"name":7}`, false},
	}
	want := int64(0)
	for _, c := range calls {
		if c.direct {
			want++
		}
	}
	for _, answers := range []string{"structured", "text"} {
		t.Run(answers, func(t *testing.T) {
			direct, dt := openAgreeSession(t, srv, open, answers, true)
			viaSDK, st := openAgreeSession(t, srv, open, answers, false)
			for i, c := range calls {
				id := fmt.Sprint(100 + i)
				line := `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":` + c.params + `}`
				direct.send(line)
				a := direct.answer(id)
				viaSDK.send(line)
				b := viaSDK.answer(id)
				if agreeForm(a) != agreeForm(b) {
					t.Errorf("params %s:\nshort path %s\ngo-sdk     %s", c.params, a, b)
				}
			}
			if n := dt.DirectCalls(); n != want {
				t.Errorf("the short path took %d calls, want %d", n, want)
			}
			if n := st.DirectCalls(); n != 0 {
				t.Errorf("the session without the short path took %d calls by it", n)
			}
		})
	}
}

// A call the short path answers is cancelled by the client's
// notifications/cancelled as the go-sdk's are: the same answer comes,
// at once, not when the command would have ended.
func TestDirectCancel(t *testing.T) {
	srv, open := serveAgree(t)
	var answers []string
	for _, direct := range []bool{true, false} {
		s, lt := openAgreeSession(t, srv, open, "", direct)
		t0 := time.Now()
		// Cancelled once its command runs: a call the go-sdk has not
		// handed to its handler yet is answered "context canceled".
		mark := filepath.Join(t.TempDir(), "started")
		s.send(`{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"terminal_exec","arguments":{"cmd":"touch ` + mark + `; exec sleep 60"}}}`)
		hivetest.Eventually(t, 10*time.Second, "the command runs", func() error {
			_, err := os.Stat(mark)
			return err
		})
		s.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":9}}`)
		answers = append(answers, agreeForm(s.answer("9")))
		if d := time.Since(t0); d > 30*time.Second {
			t.Errorf("direct %v: the cancelled call was answered after %v", direct, d)
		}
		if got := lt.DirectCalls(); got != map[bool]int64{true: 1, false: 0}[direct] {
			t.Errorf("direct %v: %d calls by the short path", direct, got)
		}
	}
	if answers[0] != answers[1] {
		t.Errorf("cancelled call:\nshort path %s\ngo-sdk     %s", answers[0], answers[1])
	}
}

// BenchmarkDirectCall: a terminal_exec("true") on a stdio session with
// the short path (mcpline's Direct) and on one without (the go-sdk's
// dispatch), interleaved, on the same server. Metrics: direct-us and
// sdk-us (means of the round trips) and ratio (direct / sdk).
func BenchmarkDirectCall(b *testing.B) {
	srv, open := serveAgree(b)
	sessions := map[bool]*agreeSession{}
	for _, direct := range []bool{true, false} {
		s, _ := openAgreeSession(b, srv, open, "", direct)
		sessions[direct] = s
	}
	var took [2]time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for _, direct := range []bool{i%2 == 0, i%2 != 0} {
			s := sessions[direct]
			id := fmt.Sprint(1000 + i)
			t0 := time.Now()
			s.send(`{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"terminal_exec","arguments":{"cmd":"true"}}}`)
			if a := s.answer(id); !strings.Contains(a, `"exit_code":0`) {
				b.Fatalf("answer %s", a)
			}
			if direct {
				took[0] += time.Since(t0)
			} else {
				took[1] += time.Since(t0)
			}
		}
	}
	b.ReportMetric(float64(took[0].Microseconds())/float64(b.N), "direct-us")
	b.ReportMetric(float64(took[1].Microseconds())/float64(b.N), "sdk-us")
	b.ReportMetric(float64(took[0])/float64(took[1]), "ratio")
}
