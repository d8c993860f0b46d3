package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hivetools/hive/internal/client"
	"github.com/hivetools/hive/internal/hivetest"
	"github.com/hivetools/hive/internal/paths"
	"github.com/hivetools/hive/internal/proto"
)

// agentScript is the scripted agent the loop tests drive: it logs every
// run to $LOOP_DIR/log as kind:id:from:message:stdin-check, and acts on
// some messages with hive's own CLI. A gate is a file the test creates to
// let a run go on.
const agentScript = `#!/usr/bin/env bash
set -u
log=$LOOP_DIR/log
hive() { "$HIVE_TEST_BIN" "$@"; }
gate() { for _ in $(seq 2000); do [ -e "$1" ] && return 0; sleep 0.01; done; return 1; }
if [ "${HIVE_COMPACT:-}" = 1 ]; then
	echo "compact:${HIVE_MESSAGE_ID:-}:${HIVE_MESSAGE_FROM:-}:$(cat)" >> "$log"
	gate "$LOOP_DIR/compact-gate"
	exit 0
fi
body=$(cat)
same=differs
[ "$body" = "$HIVE_MESSAGE" ] && same=same
echo "turn:$HIVE_MESSAGE_ID:$HIVE_MESSAGE_FROM:$HIVE_MESSAGE:$same" >> "$log"
case "$HIVE_MESSAGE" in
report) hive turn thinking --context-usage 0.9 > /dev/null ;;
wake-self) hive wake --from agent "woken from a turn" > /dev/null ;;
task) hive run --notify --name bg-task -- true > "$LOOP_DIR/bg-task.id" ;;
fail) exit 3 ;;
leave) sleep 300 > /dev/null 2>&1 & echo $! > "$LOOP_DIR/leftover.pid" ;;
hold) echo $$ > "$LOOP_DIR/agent.pid"; echo "holding" >> "$log"; gate "$LOOP_DIR/hold-gate" ;;
esac
`

// loopProc is a `hive loop` process running agentScript.
type loopProc struct {
	t      *testing.T
	dir    string // LOOP_DIR: the script, its log and gates
	cmd    *exec.Cmd
	stderr *lockedBuffer
	exited chan struct{} // closed when it exited; then err is its exit
	err    error
}

type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// startLoop starts `hive loop FLAGS -- bash agentScript` on state, with the
// script's files in dir. The test's cleanup opens every gate and kills
// the loop (by pid) if it still runs.
func startLoop(t *testing.T, state, dir string, flags ...string) *loopProc {
	t.Helper()
	script := filepath.Join(dir, "agent.sh")
	if err := os.WriteFile(script, []byte(agentScript), 0o700); err != nil {
		t.Fatal(err)
	}
	lp := &loopProc{t: t, dir: dir, stderr: &lockedBuffer{}, exited: make(chan struct{})}
	lp.cmd = hivetest.Command(t, state, append(append([]string{"loop"}, flags...), "--", "bash", script)...)
	lp.cmd.Env = append(append(lp.cmd.Env, "LOOP_DIR="+dir, "HIVE_TEST_BIN="+hivetest.Bin(t).Path), quickRaceExit()...)
	lp.cmd.Stderr = lp.stderr
	if err := lp.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { lp.err = lp.cmd.Wait(); close(lp.exited) }()
	t.Cleanup(func() {
		lp.open("hold-gate")
		lp.open("compact-gate")
		select {
		case <-lp.exited:
			return
		default:
		}
		lp.cmd.Process.Signal(syscall.SIGKILL)
		<-lp.exited
	})
	return lp
}

// open opens a gate.
func (lp *loopProc) open(gate string) {
	os.WriteFile(filepath.Join(lp.dir, gate), nil, 0o600)
}

// waitLog waits until the agent's log has a line with each of want, and
// returns the log.
func (lp *loopProc) waitLog(want ...string) string {
	lp.t.Helper()
	var b []byte
	hivetest.Eventually(lp.t, 20*time.Second, fmt.Sprintf("%q in the agent's log", want), func() error {
		b, _ = os.ReadFile(filepath.Join(lp.dir, "log"))
		ok := true
		for _, w := range want {
			ok = ok && strings.Contains(string(b), w)
		}
		if ok {
			return nil
		}
		select {
		case <-lp.exited:
			return hivetest.Abort(fmt.Errorf("the loop exited (%v) before the log had %q; log:\n%s\nstderr:\n%s", lp.err, want, b, lp.stderr.String()))
		default:
		}
		return fmt.Errorf("the log never had %q; log:\n%s\nstderr:\n%s", want, b, lp.stderr.String())
	})
	return string(b)
}

// waitStderr waits until the loop's stderr has want.
func (lp *loopProc) waitStderr(want string) {
	lp.t.Helper()
	hivetest.Eventually(lp.t, 20*time.Second, fmt.Sprintf("%q in the loop's stderr", want), func() error {
		if s := lp.stderr.String(); !strings.Contains(s, want) {
			return fmt.Errorf("the loop's stderr never had %q:\n%s", want, s)
		}
		return nil
	})
}

// wait waits for the loop to exit and returns its exit code.
func (lp *loopProc) wait() int {
	lp.t.Helper()
	select {
	case <-lp.exited:
	case <-time.After(30 * time.Second):
		lp.t.Fatalf("the loop did not exit; stderr:\n%s", lp.stderr.String())
	}
	return lp.cmd.ProcessState.ExitCode()
}

func wake(t *testing.T, state, from, body string) int64 {
	t.Helper()
	var w struct {
		MessageID int64 `json:"message_id"`
	}
	mustJSON(t, state, &w, "wake", "--from", from, body)
	return w.MessageID
}

// turnState is the turn state get_agent_meta tells.
func turnState(s *hivetest.Session) string {
	var m struct {
		TurnState string `json:"turn_state"`
	}
	s.MustCall("get_agent_meta", nil, &m)
	return m.TurnState
}

// waitTurnState waits until the turn state is want.
func waitTurnState(t *testing.T, s *hivetest.Session, want string) {
	t.Helper()
	hivetest.Eventually(t, 20*time.Second, "turn state "+want, func() error {
		if got := turnState(s); got != want {
			return fmt.Errorf("turn state %q, want %q", got, want)
		}
		return nil
	})
}

// hive loop drives a scripted agent through what a harness meets: a wake
// message (on stdin and in HIVE_MESSAGE), a wake sent from within a turn,
// a failing run (logged, the loop goes on), a background task's end (a
// changed todo wakes the loop as loose-ends), leftover processes (ended),
// a compaction (context usage reported by the agent, compact() over MCP:
// one more run with HIVE_COMPACT=1 under compacting), and SIGTERM: the
// current turn ends, a message that came meanwhile stays queued, the last
// turn gets graceful-stop, the loop exits 0. The loop starts the daemon.
func TestLoop(t *testing.T) {
	state := hivetest.StateDir(t)
	lp := startLoop(t, state, t.TempDir())
	lp.waitStderr("loop started")

	id := wake(t, state, "ci", "hello")
	lp.waitLog("turn:" + strconv.FormatInt(id, 10) + ":ci:hello:same")

	wake(t, state, "ci", "wake-self")
	lp.waitLog(":agent:woken from a turn:same")

	id = wake(t, state, "ci", "fail")
	lp.waitStderr("id=" + strconv.FormatInt(id, 10) + " from=ci exit=3 duration=")
	id = wake(t, state, "ci", "after the failure")
	lp.waitLog("turn:" + strconv.FormatInt(id, 10) + ":ci:after the failure:same")

	wake(t, state, "ci", "task")
	tlog := lp.waitLog("(bg-task) done, exit 0")
	if bg, _ := os.ReadFile(filepath.Join(lp.dir, "bg-task.id")); !strings.Contains(tlog, "turn:0:loose-ends:todo bash/"+strings.TrimSpace(string(bg))+": task ") {
		t.Errorf("the loose-ends turn of job %q (bg-task, --notify): log %q", bg, tlog)
	}

	wake(t, state, "ci", "leave")
	lp.waitLog(":ci:leave:same")
	var leftover int
	if err := hivetest.Wait(20*time.Second, func() error {
		b, _ := os.ReadFile(filepath.Join(lp.dir, "leftover.pid"))
		if leftover, _ = strconv.Atoi(strings.TrimSpace(string(b))); leftover == 0 {
			return errors.New("no pid in leftover.pid")
		}
		return hivetest.Gone(leftover)()
	}); err != nil {
		if leftover != 0 {
			hivetest.Kill(leftover)
		}
		t.Fatalf("the run's leftover process %d: %v", leftover, err)
	}

	// Compaction: the agent reports 90%, compact() is granted between
	// turns and runs after the next one.
	s := hivetest.Connect(t, state, t.TempDir())
	wake(t, state, "ci", "report")
	lp.waitLog(":ci:report:same")
	waitTurnState(t, s, "idle")
	var c struct {
		CompactPending bool `json:"compact_pending"`
	}
	s.MustCall("compact", nil, &c)
	if !c.CompactPending {
		t.Fatalf("compact: %+v", c)
	}
	id = wake(t, state, "ci", "next turn")
	log := lp.waitLog("turn:"+strconv.FormatInt(id, 10)+":ci:next turn:same", "compact:::")
	if strings.Count(log, "compact:") != 1 || strings.Index(log, "compact:") < strings.Index(log, ":ci:next turn:") {
		t.Fatalf("one compaction run after the turn:\n%s", log)
	}
	if st := turnState(s); st != "compacting" {
		t.Errorf("turn state during the compaction run: %q", st)
	}
	lp.open("compact-gate")
	waitTurnState(t, s, "idle")

	// SIGTERM during a turn.
	hold := wake(t, state, "ci", "hold")
	lp.waitLog("holding")
	late := wake(t, state, "ci", "late")
	if err := lp.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	lp.waitStderr("stop signal")
	lp.open("hold-gate")
	if code := lp.wait(); code != 0 {
		t.Fatalf("loop exit %d after SIGTERM; stderr:\n%s", code, lp.stderr.String())
	}
	log = lp.waitLog(":graceful-stop:The harness is stopping")
	if strings.Index(log, "holding") > strings.Index(log, ":graceful-stop:") || strings.Contains(log, ":ci:late:") {
		t.Errorf("after SIGTERM: the held turn, then graceful-stop, and not the late message:\n%s", log)
	}
	var ls struct {
		Undelivered int `json:"undelivered"`
		Messages    []struct {
			ID       int64 `json:"id"`
			InFlight bool  `json:"in_flight"`
		} `json:"messages"`
	}
	mustJSON(t, state, &ls, "inbox", "ls")
	if ls.Undelivered != 1 || len(ls.Messages) != 1 || ls.Messages[0].ID != late || ls.Messages[0].InFlight {
		t.Errorf("inbox after the stop (held %d acked, late %d queued): %+v", hold, late, ls)
	}
	if st := turnState(s); st != "idle" {
		t.Errorf("turn state after the stop: %q", st)
	}
}

// A message whose turn the daemon's kill -9 interrupted is delivered again,
// with the same id, to the next loop after the restart; the loop whose
// daemon died exits non-zero, mid-turn or waiting.
func TestLoopRedelivery(t *testing.T) {
	state := hivetest.StateDir(t)
	hivetest.StartDaemon(t, state)
	dir := t.TempDir()
	lp := startLoop(t, state, dir)
	id := wake(t, state, "ci", "hold")
	lp.waitLog("holding")
	killDaemon9(t, state)
	lp.open("hold-gate")
	if code := lp.wait(); code == 0 || !strings.Contains(lp.stderr.String(), "inbox ack "+strconv.FormatInt(id, 10)) {
		t.Fatalf("loop after its daemon's kill -9: exit %d; stderr:\n%s", code, lp.stderr.String())
	}

	// The next loop starts a daemon and gets the message again.
	lp2 := startLoop(t, state, dir)
	log := lp2.waitLog("turn:1:ci:hold:same\n" + "holding\n" + "turn:1:ci:hold:same\n")
	if strings.Count(log, ":ci:hold:") != 2 {
		t.Fatalf("log:\n%s", log)
	}
	lp2.waitStderr("id=1 from=ci exit=0")
	waitInboxWaiters(t, state, 1) // the turn is over: acked, idle, waiting again
	var ls struct {
		Undelivered int                  `json:"undelivered"`
		Messages    []struct{ ID int64 } `json:"messages"`
	}
	mustJSON(t, state, &ls, "inbox", "ls")
	if ls.Undelivered != 0 || len(ls.Messages) != 0 {
		t.Fatalf("inbox after the redelivered turn: %+v", ls)
	}
	// Waiting for the next message, it notices its daemon dying.
	killDaemon9(t, state)
	if code := lp2.wait(); code == 0 || !strings.Contains(lp2.stderr.String(), "inbox next") {
		t.Fatalf("waiting loop after its daemon's kill -9: exit %d; stderr:\n%s", code, lp2.stderr.String())
	}
}

// A loop killed mid-turn (kill -9: no cleanup of its own) takes its agent
// run with it (the parent-death signal), and the next loop gets the
// message it held again; two loops on one agent are refused. SIGHUP (a
// lost terminal) stops a loop as SIGTERM does: the graceful-stop turn,
// then exit 0.
func TestLoopKilledAndHangup(t *testing.T) {
	state := hivetest.StateDir(t)
	hivetest.StartDaemon(t, state)
	dir := t.TempDir()
	lp := startLoop(t, state, dir)
	id := wake(t, state, "ci", "hold")
	lp.waitLog("holding")
	b, err := os.ReadFile(filepath.Join(dir, "agent.pid"))
	if err != nil {
		t.Fatal(err)
	}
	agentPid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	second := hivetest.Command(t, state, "loop", "--", "true")
	second.Env = append(second.Env, quickRaceExit()...)
	if out, err := second.CombinedOutput(); err == nil || !strings.Contains(string(out), "another hive loop drives this agent") {
		t.Errorf("a second loop: %v %s", err, out)
	}
	lp.cmd.Process.Signal(syscall.SIGKILL)
	lp.wait()
	if err := hivetest.Wait(10*time.Second, hivetest.Gone(agentPid)); err != nil {
		hivetest.Kill(agentPid)
		t.Fatalf("the agent run %d outlived its loop's kill -9: %v", agentPid, err)
	}

	lp2 := startLoop(t, state, dir)
	lp2.waitStderr("messages a stopped loop had taken are queued again")
	want := "turn:" + strconv.FormatInt(id, 10) + ":ci:hold:same\n"
	log := lp2.waitLog(want + "holding\n" + want)
	if strings.Count(log, want) != 2 {
		t.Fatalf("log:\n%s", log)
	}
	lp2.open("hold-gate")
	waitInboxWaiters(t, state, 1)
	lp2.cmd.Process.Signal(syscall.SIGHUP)
	if code := lp2.wait(); code != 0 {
		t.Fatalf("loop after SIGHUP: exit %d; stderr:\n%s", code, lp2.stderr.String())
	}
	lp2.waitLog(":graceful-stop:")
}

// An agent run past --timeout is stopped (SIGTERM to its group): logged
// with its exit status, its message acked, the loop goes on.
func TestLoopTimeout(t *testing.T) {
	state := hivetest.StateDir(t)
	hivetest.StartDaemon(t, state)
	lp := startLoop(t, state, t.TempDir(), "--timeout", "0.5")
	id := wake(t, state, "ci", "hold")
	lp.waitLog("holding")
	lp.waitStderr("agent run timed out")
	lp.waitStderr("id=" + strconv.FormatInt(id, 10) + " from=ci exit=143 duration=")
	next := wake(t, state, "ci", "after the timeout")
	lp.waitLog("turn:" + strconv.FormatInt(next, 10) + ":ci:after the timeout:same")
	waitInboxWaiters(t, state, 1) // the turn is over: acked, idle, waiting again
	var ls struct {
		Undelivered int               `json:"undelivered"`
		Messages    []json.RawMessage `json:"messages"`
	}
	mustJSON(t, state, &ls, "inbox", "ls")
	if len(ls.Messages) != 0 {
		t.Errorf("inbox: %+v", ls)
	}
	lp.cmd.Process.Signal(syscall.SIGTERM)
	if code := lp.wait(); code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", code, lp.stderr.String())
	}
}

// waitInboxWaiters waits until n clients wait in inbox_next (stats).
func waitInboxWaiters(t *testing.T, state string, n int) {
	t.Helper()
	hivetest.Eventually(t, 20*time.Second, fmt.Sprintf("%d inbox waiters", n), func() error {
		resp, err := client.Call(paths.Layout{Dir: state}, proto.Request{Cmd: proto.CmdStats})
		if err != nil {
			t.Fatal(err)
		}
		if resp.Stats.InboxWaiters != n {
			return fmt.Errorf("inbox waiters %d, want %d", resp.Stats.InboxWaiters, n)
		}
		return nil
	})
}
