package dashboard_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/hivetools/hive/internal/client"
	"github.com/hivetools/hive/internal/dashboard"
	"github.com/hivetools/hive/internal/proto"
)

// A job's log is its two streams merged in arrival order, read by
// ranges of any size (a range never splits a UTF-8 character), from a
// negative offset (the tail, with the number of lines before it), from
// memory and after a restart from the files; raw gives the bytes.
func TestLogRanges(t *testing.T) {
	state := shortDir(t)
	e := start(t, state)
	// The job switches streams with pauses, so the order of arrival is
	// the order of writing.
	script := `echo out1; sleep 0.2; echo err1 >&2; sleep 0.2; printf 'out2 é\n'; sleep 0.2; echo err2 >&2; sleep 0.2; echo out3`
	if _, err := client.Call(e.layout, proto.Request{Cmd: proto.CmdRun, Name: "mix", Argv: []string{"bash", "-c", script}}); err != nil {
		t.Fatal(err)
	}
	ev := e.events("")
	ev.next(t, func(x sseEvent) bool {
		return x.typ == "job" && strings.Contains(x.data, `"name":"mix"`) && strings.Contains(x.data, `"state":"done"`)
	})
	const want = "0out1\n1err1\n0out2 é\n1err2\n0out3\n"
	read := func(q string) (dashboard.Log, string) {
		var l dashboard.Log
		e.get("/api/jobs/mix/log?"+q, &l)
		var b strings.Builder
		for _, s := range l.Segments {
			b.WriteString(fmt.Sprint(s.Stream) + s.Data)
		}
		return l, b.String()
	}
	check := func(name string) {
		if l, got := read(""); got != want || !l.EOF || l.Next != l.Total || l.Total != 28 {
			t.Errorf("%s: the whole log %q %+v, want %q", name, got, l, want)
		}
		// Ranges of 3 bytes: é (2 bytes) is never split.
		var all strings.Builder
		off := int64(0)
		for n := 0; n < 50; n++ {
			l, _ := read(fmt.Sprintf("offset=%d&limit=3", off))
			for _, s := range l.Segments {
				if strings.ContainsRune(s.Data, '\uFFFD') {
					t.Fatalf("%s: range at %d split a character: %+v", name, off, l)
				}
				all.WriteString(s.Data)
			}
			off = l.Next
			if l.EOF {
				break
			}
		}
		if all.String() != "out1\nerr1\nout2 é\nerr2\nout3\n" {
			t.Errorf("%s: read by 3 bytes: %q", name, all.String())
		}
		if l, got := read("offset=-10&lines=1"); got != "1err2\n0out3\n" || l.Line != 3 || l.Offset != 18 {
			t.Errorf("%s: the tail: %q line %d offset %d, want the last two lines after 3", name, got, l.Line, l.Offset)
		}
		for q, want := range map[string]string{"": "out1\nerr1\nout2 é\nerr2\nout3\n", "stream=stderr": "err1\nerr2\n"} {
			if r := e.call("GET", "/api/jobs/mix/raw?"+q, nil, ""); r.status != http.StatusOK || r.body != want {
				t.Errorf("%s: raw ?%s: %d %q, want %q", name, q, r.status, r.body, want)
			}
		}
	}
	check("live")
	e.stop()
	e = start(t, state)
	check("after a restart")
	for _, q := range []string{"/log?limit=0", "/log?limit=1048577", "/log?offset=x", "/raw?stream=both"} {
		if r := e.call("GET", "/api/jobs/mix"+q, nil, ""); r.status != http.StatusBadRequest {
			t.Errorf("%s: %d %s", q, r.status, r.body)
		}
	}
	if r := e.call("GET", "/api/jobs/nope/log", nil, ""); r.status != http.StatusNotFound {
		t.Errorf("unknown job: %d %s", r.status, r.body)
	}
}
