package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/hivetools/hive/internal/agent"
	"github.com/hivetools/hive/internal/client"
	"github.com/hivetools/hive/internal/paths"
	"github.com/hivetools/hive/internal/proto"
)

func init() {
	register(command{name: "loop", usage: "loop [--timeout S] -- AGENT-COMMAND...   drive an agent: one run of the command per inbox message (starts the daemon if needed)", run: runLoop})
}

// Agent-run bounds.
const (
	// loopGrace is the time between SIGTERM and SIGKILL when the loop
	// stops an agent run (its timeout, a second signal) or what a run
	// left in its process group.
	loopGrace = 10 * time.Second
	// leftoverGrace is that time for what a run left behind once its
	// command exited.
	leftoverGrace = 2 * time.Second
	// maxEnvMessage bounds HIVE_MESSAGE (Linux refuses a single
	// environment string over 128 KiB); stdin always has the whole body.
	maxEnvMessage = 64 << 10
)

// runLoop is the harness loop. For each message inbox_next delivers it
// sets the turn to thinking, runs the agent command once with the message
// on stdin and in HIVE_MESSAGE, HIVE_MESSAGE_FROM and HIVE_MESSAGE_ID,
// acks the message (not the synthetic loose-ends one) and sets the turn
// to idle; when that reports a pending compaction it runs the command
// once more with HIVE_COMPACT=1 under compacting. The first SIGTERM or
// SIGINT fences the inbox: the current turn ends as usual, then one last
// turn gets the graceful-stop message, and runLoop returns nil. A second
// signal stops the running agent and returns an error. The daemon going
// away (or failing a request) is an error; a failing agent run is not.
func runLoop(ctx context.Context, e Env, args []string) error {
	fs, dir := newFlags("loop", e)
	timeout := fs.Float64("timeout", 0, "stop an agent run after this many seconds (SIGTERM to its process group, SIGKILL 10 s later); 0: no limit")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return fmt.Errorf("%w: hive loop [--timeout S] -- AGENT-COMMAND...", ErrUsage)
	}
	if !(*timeout >= 0 && *timeout <= 1e8) {
		return fmt.Errorf("%w: --timeout %v: must be 0..1e8 seconds (0: no limit)", ErrUsage, *timeout)
	}
	argv := fs.Args()
	if _, err := exec.LookPath(argv[0]); err != nil {
		return fmt.Errorf("%w: AGENT-COMMAND %q: %v", ErrUsage, argv[0], err)
	}
	l, err := layout(*dir)
	if err != nil {
		return err
	}
	if err := client.Ensure(l, e.Exe, 5*time.Second); err != nil {
		return err
	}
	// One loop per agent: it owns the messages in flight. Whatever a loop
	// that died (kill -9, a lost terminal) had popped is queued again.
	unlock, err := lockLoop(filepath.Join(l.Dir, "loop.lock"))
	if err != nil {
		return err
	}
	defer unlock()
	resp, err := client.Call(l, proto.Request{Cmd: proto.CmdInboxRequeue})
	if err != nil {
		return fmt.Errorf("inbox requeue: %w", err)
	}
	lp := &looper{e: e, l: l, argv: argv, timeout: time.Duration(*timeout * float64(time.Second)),
		log: slog.New(slog.NewTextHandler(e.Stderr, nil)).With("loop", os.Getpid()), hurry: make(chan struct{})}
	if resp.Requeued != nil && *resp.Requeued > 0 {
		lp.log.Info("messages a stopped loop had taken are queued again", "count", *resp.Requeued)
	}

	// The first signal fences the inbox, a second one hurries.
	// SIGHUP (the terminal went away) and SIGQUIT stop it as SIGTERM does:
	// the agent runs in its own process group, which no terminal signals.
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT)
	defer signal.Stop(sigs)
	fenced, fence := context.WithCancel(ctx)
	defer fence()
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		select {
		case s := <-sigs:
			lp.log.Info("stop signal: the inbox is fenced; the current turn ends, then the graceful-stop turn runs (a second signal stops the agent)", "signal", s.String())
			fence()
		case <-done:
			return
		}
		select {
		case s := <-sigs:
			lp.log.Warn("second stop signal: stopping the agent", "signal", s.String())
			close(lp.hurry)
		case <-done:
		}
	}()
	defer func() { close(done); wg.Wait() }()
	return lp.run(fenced)
}

// looper runs the turns of one hive loop.
type looper struct {
	e       Env
	l       paths.Layout
	argv    []string
	timeout time.Duration // of one agent run; 0: none
	log     *slog.Logger
	hurry   chan struct{} // closed on a second stop signal
}

// errHurried is a loop cut short by a second signal.
var errHurried = errors.New("stopped by a second signal while the agent ran")

func (lp *looper) run(fenced context.Context) error {
	lp.log.Info("loop started", "state_dir", lp.l.Dir, "agent", strings.Join(lp.argv, " "))
	// A loop that died mid-turn left its state behind; a compaction
	// asked for meanwhile runs now.
	if err := lp.idle(); err != nil {
		return err
	}
	for fenced.Err() == nil {
		resp, err := client.CallWait(fenced, lp.l, proto.Request{Cmd: proto.CmdInboxNext, Wait: true})
		if err != nil {
			return fmt.Errorf("inbox next: %w (see %s)", err, lp.l.Log())
		}
		if resp.Message == nil {
			continue
		}
		if err := lp.turn(fenced, *resp.Message); err != nil {
			return err
		}
	}
	resp, err := client.Call(lp.l, proto.Request{Cmd: proto.CmdGracefulStop})
	if err != nil {
		return fmt.Errorf("graceful_stop: %w", err)
	}
	if err := lp.turn(context.Background(), *resp.Message); err != nil {
		return err
	}
	lp.log.Info("loop stopped after the graceful-stop turn")
	return nil
}

// turn runs one message's turn and acks the message: unless the run
// ended by a signal after the inbox was fenced (a stop that reached the
// agent too, as systemd's does), when the message stays in flight for the
// next loop. An ack that finds the message gone (dropped meanwhile with
// cancel_loose_end) is logged, not fatal.
func (lp *looper) turn(fenced context.Context, m proto.Message) error {
	if _, err := lp.setTurn(agent.Thinking); err != nil {
		return err
	}
	signaled, err := lp.runAgent(&m)
	if err != nil {
		return err
	}
	switch {
	case m.ID == 0:
	case signaled && fenced.Err() != nil:
		lp.log.Warn("the agent run was ended by a signal during the stop: its message stays in flight for the next loop", "id", m.ID)
	default:
		if resp, err := client.Call(lp.l, proto.Request{Cmd: proto.CmdInboxAck, ID: strconv.FormatInt(m.ID, 10)}); err != nil {
			if resp.Error == "" { // not the daemon's answer: it went away
				return fmt.Errorf("inbox ack %d: %w", m.ID, err)
			}
			lp.log.Warn("ack refused", "id", m.ID, "err", resp.Error)
		}
	}
	return lp.idle()
}

// idle sets the turn to idle and runs the compaction that reports
// pending, if one does.
func (lp *looper) idle() error {
	pending, err := lp.setTurn(agent.Idle)
	if err != nil || !pending {
		return err
	}
	if _, err := lp.setTurn(agent.Compacting); err != nil {
		return err
	}
	if _, err := lp.runAgent(nil); err != nil {
		return err
	}
	if pending, err = lp.setTurn(agent.Idle); pending {
		lp.log.Warn("a compaction asked for during the compaction run was dropped")
	}
	return err
}

func (lp *looper) setTurn(state string) (compactPending bool, err error) {
	resp, err := client.Call(lp.l, proto.Request{Cmd: proto.CmdTurn, State: state})
	if err != nil {
		return false, fmt.Errorf("turn %s: %w", state, err)
	}
	return resp.CompactPending != nil && *resp.CompactPending, nil
}

// runAgent runs the agent command once: for message m, or for a
// compaction when m is nil. Its exit code and duration are logged; it
// failing is not an error. It runs in its own process group (a terminal's
// ^C reaches the loop, not the agent), which is emptied when it exits.
// signaled is a run a signal ended (exit 128+n). The error is a command that could
// not start, or errHurried.
func (lp *looper) runAgent(m *proto.Message) (signaled bool, err error) {
	cmd := exec.Command(lp.argv[0], lp.argv[1:]...)
	cmd.Env = lp.env(m)
	cmd.Stdout, cmd.Stderr = lp.e.Stdout, lp.e.Stderr
	cmd.SysProcAttr = groupAttr()
	cmd.WaitDelay = leftoverGrace // a leftover holding a copied stdout or stderr
	what := []any{"compaction", true}
	if m != nil {
		what = []any{"id", m.ID, "from", m.From}
		f, err := bodyFile(m.Body)
		if err != nil {
			return false, err
		}
		defer closeBody(f)
		cmd.Stdin = f
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return false, fmt.Errorf("start the agent command: %w", err)
	}
	exited := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	hurried := false
	go func() {
		defer wg.Done()
		var deadline <-chan time.Time
		if lp.timeout > 0 {
			t := time.NewTimer(lp.timeout)
			defer t.Stop()
			deadline = t.C
		}
		select {
		case <-exited:
			return
		case <-deadline:
			lp.log.Warn("agent run timed out: stopping it", append(what, "timeout", lp.timeout)...)
		case <-lp.hurry:
			hurried = true
		}
		signalGroup(cmd.Process, false)
		t := time.NewTimer(loopGrace)
		defer t.Stop()
		select {
		case <-exited:
		case <-t.C:
			signalGroup(cmd.Process, true)
		}
	}()
	err = cmd.Wait()
	close(exited)
	wg.Wait()
	emptyGroup(cmd.Process)
	code := -1
	if cmd.ProcessState != nil {
		code = exitCode(cmd.ProcessState)
	}
	attrs := append(what, "exit", code, "duration", time.Since(start).Round(time.Millisecond))
	if err != nil && cmd.ProcessState == nil {
		attrs = append(attrs, "err", err.Error())
	}
	lp.log.Info("agent run ended", attrs...)
	if hurried {
		if m != nil && m.ID != 0 {
			return true, fmt.Errorf("%w: message %d stays in flight (the next hive loop takes it again)", errHurried, m.ID)
		}
		return true, errHurried
	}
	// 128+n: a signal ended it, or a shell that caught one said so.
	return code > 128 && code <= 128+64, nil
}

// env is the agent's environment: the loop's, with HIVE_STATE_DIR and the
// message (or HIVE_COMPACT=1).
func (lp *looper) env(m *proto.Message) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "HIVE_STATE_DIR", "HIVE_MESSAGE", "HIVE_MESSAGE_FROM", "HIVE_MESSAGE_ID", "HIVE_COMPACT":
			continue
		}
		env = append(env, kv)
	}
	env = append(env, "HIVE_STATE_DIR="+lp.l.Dir)
	if m == nil {
		return append(env, "HIVE_COMPACT=1")
	}
	return append(env, "HIVE_MESSAGE="+envMessage(m.Body), "HIVE_MESSAGE_FROM="+m.From,
		"HIVE_MESSAGE_ID="+strconv.FormatInt(m.ID, 10))
}

// envMessage is a body as an environment variable can hold it: NUL bytes
// become U+FFFD, and past maxEnvMessage bytes it is cut (at a character).
func envMessage(body string) string {
	body = strings.ReplaceAll(body, "\x00", "\uFFFD")
	if len(body) <= maxEnvMessage {
		return body
	}
	cut := maxEnvMessage
	for cut > 0 && !utf8.RuneStart(body[cut]) {
		cut--
	}
	return body[:cut]
}

// bodyFile is a file holding body, read from its start: the agent's stdin
// (a file, not a pipe, so a run that never reads it cannot block the
// loop). It is removed at once where the platform allows; close it with
// closeBody.
func bodyFile(body string) (*os.File, error) {
	f, err := os.CreateTemp("", "hive-message-*")
	if err != nil {
		return nil, fmt.Errorf("message file: %w", err)
	}
	if _, err = f.WriteString(body); err == nil {
		_, err = f.Seek(0, 0)
	}
	if err != nil {
		closeBody(f)
		return nil, fmt.Errorf("message file: %w", err)
	}
	os.Remove(f.Name()) // unix: the open file stays readable
	return f, nil
}

// closeBody closes and removes a bodyFile.
func closeBody(f *os.File) {
	f.Close()
	os.Remove(f.Name())
}
