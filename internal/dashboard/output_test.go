package dashboard_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hivetools/hive/internal/client"
	"github.com/hivetools/hive/internal/daemon"
	"github.com/hivetools/hive/internal/dashboard"
	"github.com/hivetools/hive/internal/proto"
	"github.com/hivetools/hive/internal/view"
)

// A job's output reads by ranges: from memory while the daemon holds the
// job, from its file after a restart; a range never splits a UTF-8
// character; a negative offset counts from the end.
func TestOutputRanges(t *testing.T) {
	state := shortDir(t)
	e := start(t, state)
	// 100 000 lines "é0000000\n".. : 10 bytes each, é is two.
	script := `i=0; while [ $i -lt 100000 ]; do printf 'é%07d\n' $i; i=$((i+1)); done; echo bad >&2`
	resp, err := client.Call(e.layout, proto.Request{Cmd: proto.CmdRun, Name: "big", Argv: []string{"bash", "-c", script}})
	if err != nil || resp.Job == nil {
		t.Fatalf("run: %+v %v", resp, err)
	}
	ev := e.events("")
	ev.next(t, func(x sseEvent) bool {
		return x.typ == "job" && strings.Contains(x.data, `"name":"big"`) && strings.Contains(x.data, `"state":"done"`)
	})
	check := func(name string) {
		var j view.Job
		e.get("/api/jobs/big", &j)
		if j.StdoutBytes != 1000000 || j.StderrBytes != 4 || j.ExitCode == nil || *j.ExitCode != 0 || j.SemanticStatus != "ok" {
			t.Fatalf("%s: job %+v", name, j)
		}
		var all strings.Builder
		off := int64(0)
		for n := 0; ; n++ {
			var o dashboard.Output
			e.get(fmt.Sprintf("/api/jobs/big/output?offset=%d&limit=65535", off), &o)
			if o.Offset != off || o.Total != 1000000 || len(o.Data) > 65535 {
				t.Fatalf("%s: range at %d: %+v", name, off, o)
			}
			if strings.ContainsRune(o.Data, '\uFFFD') {
				t.Fatalf("%s: range at %d split a character", name, off)
			}
			all.WriteString(o.Data)
			off = o.Next
			if o.EOF || n > 100 {
				break
			}
		}
		if all.Len() != 1000000 || !strings.HasPrefix(all.String(), "é0000000\n") || !strings.HasSuffix(all.String(), "é0099999\n") {
			t.Fatalf("%s: %d bytes read back", name, all.Len())
		}
		var o dashboard.Output
		e.get("/api/jobs/big/output?offset=-10", &o)
		if o.Data != "é0099999\n" || o.Offset != 999990 || !o.EOF {
			t.Errorf("%s: the last 10 bytes: %+v", name, o)
		}
		e.get("/api/jobs/big/output?stream=stderr", &o)
		if o.Data != "bad\n" || o.Stream != "stderr" {
			t.Errorf("%s: stderr %+v", name, o)
		}
	}
	check("live")
	e.stop()
	e = start(t, state) // the job is now only a record and its files
	check("after a restart")
	for _, q := range []string{"stream=both", "limit=0", "limit=1048577", "offset=x"} {
		if r := e.call("GET", "/api/jobs/big/output?"+q, nil, ""); r.status != http.StatusBadRequest {
			t.Errorf("?%s: %d %s", q, r.status, r.body)
		}
	}
	if r := e.call("GET", "/api/jobs/nope/output", nil, ""); r.status != http.StatusNotFound {
		t.Errorf("unknown job: %d %s", r.status, r.body)
	}
}

// An event stream resumes from its Last-Event-ID with what it missed; an
// id of another daemon (a restart) or one no longer kept gets "reset".
func TestEventsResume(t *testing.T) {
	state := shortDir(t)
	e := start(t, state)
	s := e.events("")
	hello := s.next(t, func(x sseEvent) bool { return true })
	if hello.typ != "hello" || hello.id == "" {
		t.Fatalf("first event %+v", hello)
	}
	run := func(name string) {
		if _, err := client.Call(e.layout, proto.Request{Cmd: proto.CmdRun, Name: name, Argv: []string{"true"}}); err != nil {
			t.Fatal(err)
		}
	}
	run("one")
	first := s.next(t, func(x sseEvent) bool { return x.typ == "job" && strings.Contains(x.data, `"name":"one"`) })
	s.close()
	run("two")
	again := e.events(first.id)
	got := again.next(t, func(x sseEvent) bool { return x.typ != "comment" })
	if got.typ == "hello" || got.typ == "reset" {
		t.Fatalf("a resumed stream began with %s", got.typ)
	}
	missed := func(x sseEvent) bool {
		if x.id == first.id {
			t.Errorf("event %s sent again", x.id)
		}
		return x.typ == "job" && strings.Contains(x.data, `"name":"two"`)
	}
	if !missed(got) {
		again.next(t, missed)
	}
	e.stop()
	e = start(t, state)
	if r := e.events(first.id).next(t, func(x sseEvent) bool { return true }); r.typ != "reset" {
		t.Errorf("an id of the previous daemon: %+v", r)
	}
}

// The write deadline of normal requests does not cut an event stream: a
// stream outlives many --http-write-timeouts and still gets events.
func TestEventsOutliveWriteTimeout(t *testing.T) {
	e := startWith(t, shortDir(t), "127.0.0.1:0", func(c *daemon.Config) { c.HTTPWriteTimeout = 50 * time.Millisecond })
	s := e.events("")
	s.next(t, func(x sseEvent) bool { return x.typ == "hello" })
	// The job ends after 20 write timeouts.
	if _, err := client.Call(e.layout, proto.Request{Cmd: proto.CmdRun, Name: "slow", Argv: []string{"sleep", "1"}}); err != nil {
		t.Fatal(err)
	}
	s.next(t, func(x sseEvent) bool {
		return x.typ == "job" && strings.Contains(x.data, `"name":"slow"`) && strings.Contains(x.data, `"state":"done"`)
	})
}

// Past the file cap an ended job's bytes are only counted: once the job
// is no longer in memory, a range at or past the file's end skips to the
// stream's end (skipped, eof), as a job in memory does, instead of an
// empty answer for ever. The file is never read through a link.
func TestOutputPastFileCap(t *testing.T) {
	state := shortDir(t)
	e := startWith(t, state, "127.0.0.1:0", func(c *daemon.Config) { c.FileCap = 1000 })
	resp, err := client.Call(e.layout, proto.Request{Cmd: proto.CmdRun, Name: "capped", Argv: []string{"sh", "-c", "head -c 3000 /dev/zero | tr '\\0' x; echo err >&2"}})
	if err != nil || resp.Job == nil {
		t.Fatalf("run: %+v %v", resp, err)
	}
	ev := e.events("")
	ev.next(t, func(x sseEvent) bool {
		return x.typ == "job" && strings.Contains(x.data, `"name":"capped"`) && strings.Contains(x.data, `"state":"done"`)
	})
	e.stop()
	e = startWith(t, state, "127.0.0.1:0", func(c *daemon.Config) { c.FileCap = 1000 })
	var j view.Job
	e.get("/api/jobs/capped", &j)
	if j.StdoutBytes != 3000 || j.StdoutDropped != 2000 {
		t.Fatalf("job %+v", j)
	}
	for _, tc := range []struct {
		off                  int64
		data                 int
		next, skipped, total int64
		eof                  bool
	}{
		{0, 1000, 1000, 0, 3000, false},
		{1000, 0, 3000, 2000, 3000, true},
		{2500, 0, 3000, 500, 3000, true},
		{3000, 0, 3000, 0, 3000, true},
		{-10, 0, 3000, 10, 3000, true},
	} {
		var o dashboard.Output
		e.get(fmt.Sprintf("/api/jobs/capped/output?offset=%d", tc.off), &o)
		if len(o.Data) != tc.data || o.Next != tc.next || o.Skipped != tc.skipped || o.Total != tc.total || o.EOF != tc.eof {
			t.Errorf("offset %d: %d bytes, next %d, skipped %d, total %d, eof %v; want %+v", tc.off, len(o.Data), o.Next, o.Skipped, o.Total, o.EOF, tc)
		}
	}
	// The stderr file replaced by a link to another file: not followed.
	secret := filepath.Join(state, "secret")
	if err := os.WriteFile(secret, []byte("secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	errPath := filepath.Join(state, "bash-tasks", resp.Job.ID+".err")
	if err := os.Remove(errPath); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secret, errPath); err != nil {
		t.Fatal(err)
	}
	r := e.call("GET", "/api/jobs/capped/output?stream=stderr", nil, "")
	if r.status == http.StatusOK || strings.Contains(r.body, `"data":"secret`) {
		t.Errorf("stderr through a link: %d %s", r.status, r.body)
	}
}

// A job with a 100 KB command that prints a line every 0.3 s: its
// counter ticks carry no command, and its job events carry it cut to
// about 1 KiB, marked; GET /api/jobs/{id} has the whole of it.
func TestEventsSmall(t *testing.T) {
	e := start(t, shortDir(t))
	ev := e.events("")
	cmd := ": " + strings.Repeat("x", 100000) + "; for i in 1 2 3 4; do echo $i; sleep 0.3; done"
	if _, err := client.Call(e.layout, proto.Request{Cmd: proto.CmdRun, Name: "long", Argv: []string{"bash", "-c", cmd}}); err != nil {
		t.Fatal(err)
	}
	counters := 0
	last := ev.next(t, func(x sseEvent) bool {
		if x.typ != "job" && x.typ != "job_counters" {
			return false
		}
		if len(x.data) > 2<<10 {
			t.Fatalf("a %s event of %d bytes", x.typ, len(x.data))
		}
		if x.typ == "job_counters" {
			counters++
			if strings.Contains(x.data, "xxx") {
				t.Errorf("a counter event carries the command: %.200s", x.data)
			}
		}
		return x.typ == "job" && strings.Contains(x.data, `"state":"done"`)
	})
	var j view.Job
	if err := json.Unmarshal([]byte(last.data), &j); err != nil {
		t.Fatal(err)
	}
	if !j.CmdTruncated || len(j.Cmd) > 1<<10 || j.Argv != nil || j.StdoutBytes != 8 {
		t.Errorf("the ended job's event: truncated %v, cmd %d bytes, argv %d, stdout %d", j.CmdTruncated, len(j.Cmd), len(j.Argv), j.StdoutBytes)
	}
	if counters == 0 {
		t.Error("no job_counters event while it printed")
	}
	var whole view.Job
	e.get("/api/jobs/long", &whole)
	if whole.CmdTruncated || len(whole.Cmd) < len(cmd) {
		t.Errorf("GET the job: truncated %v, cmd %d bytes", whole.CmdTruncated, len(whole.Cmd))
	}
}
