package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A holder stopped with SIGSTOP stalls nothing but the starts that need
// it: while a start waits for it, `hive ps`, `status` and
// `terminal_job_list` of the jobs there are answer at once (no lock is
// held across the holder's call); the starts fail within 5 s saying the
// holder does not answer. Once it runs again, a new job runs and ends
// done, and nothing of the given-up starts runs (the holder refused
// them, or their processes were stopped).
func TestStoppedHolderStallsNothing(t *testing.T) {
	state := stateDir(t)
	startDaemon(t, state)
	s := connect(t, state, t.TempDir())
	var running, ended taskStatus
	s.mustCall("run", map[string]any{"cmd": "sleep 600", "wait_seconds": 0}, &running)
	s.mustCall("run", map[string]any{"cmd": "echo ended", "wait_seconds": 10}, &ended)
	if ended.Status != "done" {
		t.Fatalf("the ended job: %+v", ended)
	}
	h := holderPid(state)
	if h == 0 {
		t.Fatal("no holder runs")
	}
	t.Cleanup(func() { syscall.Kill(h, syscall.SIGCONT) }) // never left stopped
	if err := syscall.Kill(h, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); procState(h) != 'T'; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the holder %d is not stopped: state %c", h, procState(h))
		}
	}

	// Starts while it is stopped, each timed: through the CLI (one of a
	// command whose process would be easy to find should it run), and
	// through MCP on a session of its own.
	marker := strconv.Itoa(1_000_000 + os.Getpid()%1_000_000)
	type outcome struct {
		what string
		out  string
		err  bool
		took time.Duration
	}
	outcomes := make(chan outcome, 4)
	cli := func(args ...string) {
		t0 := time.Now()
		cmd := hiveCmd(state, args...)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		outcomes <- outcome{"hive " + strings.Join(args, " "), out.String(), err != nil, time.Since(t0)}
	}
	s2 := connect(t, state, t.TempDir())
	tool := func(name string, args map[string]any) {
		t0 := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		res, err := s2.cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		o := outcome{what: name, took: time.Since(t0), err: true}
		if err != nil {
			o.out = "protocol error: " + err.Error()
		} else {
			o.err = res.IsError
			for _, c := range res.Content {
				if tc, ok := c.(*mcp.TextContent); ok {
					o.out += tc.Text
				}
			}
		}
		outcomes <- o
	}
	go cli("run", "--name", "stalled", "--", "sleep", marker)
	go cli("run", "--", "true")
	go tool("run", map[string]any{"cmd": "true", "wait_seconds": 0})
	go tool("terminal_pty_open", nil)

	// The CLI's start is in flight once its job is listed, pending.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		t0 := time.Now()
		st, ok := psAll(t, state)["stalled"]
		if d := time.Since(t0); d > 2*time.Second {
			t.Fatalf("hive ps took %v while a start waited for the stopped holder", d)
		}
		if ok && st.State == "pending" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the start to the stopped holder is not listed pending: %+v %v", st, ok)
		}
	}
	// Each view answers at once, the best of 3 tries under 200 ms.
	checks := []struct {
		what string
		f    func() error
	}{
		{"hive ps", func() error {
			out, err := hive(t, state, "ps", "-a")
			if err == nil && (!strings.Contains(out, running.ID) || !strings.Contains(out, ended.ID)) {
				err = fmt.Errorf("the jobs are not listed: %s", out)
			}
			return err
		}},
		{"status", func() error {
			var st taskStatus
			if text, isErr := s.call("status", map[string]any{"id": running.ID}, &st); isErr || st.Status != "running" {
				return fmt.Errorf("%s %+v", text, st)
			}
			if text, isErr := s.call("status", map[string]any{"id": ended.ID}, &st); isErr || st.Status != "done" {
				return fmt.Errorf("%s %+v", text, st)
			}
			return nil
		}},
		{"terminal_job_list", func() error {
			var list struct {
				Jobs []struct {
					JobID string `json:"job_id"`
				} `json:"jobs"`
			}
			text, isErr := s.call("terminal_job_list", map[string]any{}, &list)
			seen := map[string]bool{}
			for _, j := range list.Jobs {
				seen[j.JobID] = true
			}
			if isErr || !seen[running.ID] || !seen[ended.ID] {
				return fmt.Errorf("%s", text)
			}
			return nil
		}},
	}
	for _, c := range checks {
		best := time.Hour
		for range 3 {
			t0 := time.Now()
			if err := c.f(); err != nil {
				t.Fatalf("%s while the holder is stopped: %v", c.what, err)
			}
			best = min(best, time.Since(t0))
		}
		t.Logf("%s while a start waits for the stopped holder: best of 3 %v", c.what, best)
		if best > 200*time.Millisecond {
			t.Errorf("%s while a start waits for the stopped holder: best of 3 took %v, want < 200ms", c.what, best)
		}
	}
	for range 4 {
		o := <-outcomes
		t.Logf("%s while the holder is stopped: failed after %v", o.what, o.took)
		if !o.err || !strings.Contains(o.out, "does not answer") || !strings.Contains(o.out, strconv.Itoa(h)) {
			t.Errorf("%s while the holder is stopped: error %v: %q, want an error saying the holder (pid %d) does not answer", o.what, o.err, o.out, h)
		}
		if o.took > 5*time.Second {
			t.Errorf("%s while the holder is stopped failed after %v, want within 5 s", o.what, o.took)
		}
	}

	if err := syscall.Kill(h, syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	var after taskStatus
	s.mustCall("run", map[string]any{"cmd": "echo after", "wait_seconds": 10}, &after)
	if after.Status != "done" || after.StdoutTail != "after\n" {
		t.Errorf("a job once the holder runs again: %+v", after)
	}
	if st := psAll(t, state)["stalled"]; st.State != "failed" || !strings.Contains(st.Error, "does not answer") {
		t.Errorf("the given-up start's job: %+v, want failed saying why", st)
	}
	var st taskStatus
	s.mustCall("status", map[string]any{"id": running.ID}, &st)
	if st.Status != "running" {
		t.Errorf("the job that ran through the stop: %+v", st)
	}
	// Nothing of the given-up starts runs: the holder, which read them
	// once it ran again, refused them or stopped what it had started.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		pids := processesRunning("sleep\x00" + marker + "\x00")
		if len(pids) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the given-up start of sleep %s runs: pids %v", marker, pids)
		}
	}
}

// procState is the state letter of a process ('T': stopped), 0 if gone.
func procState(pid int) byte {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return 0
	}
	return b[i+2]
}

// processesRunning lists the live processes whose command line is
// cmdline (its arguments each ended by NUL).
func processesRunning(cmdline string) []int {
	var pids []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && string(b) == cmdline && processAlive(pid) {
			pids = append(pids, pid)
		}
	}
	return pids
}
