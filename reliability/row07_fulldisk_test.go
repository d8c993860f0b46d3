package reliability

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hivetools/hive/internal/hivetest"
	"github.com/hivetools/hive/internal/output"
	"github.com/hivetools/hive/internal/proto"
)

// Row 7: a full disk. The state dir is a small tmpfs, mounted in a private
// mount namespace (so nothing outside the test sees it) by a copy of this
// test run under unshare(1). On the full disk every new piece of work is
// refused with a clear error and starts no process, reads keep working,
// nothing answered is contradicted, the daemon starts on the full disk,
// and once space returns new work is accepted again.
func TestRow07FullDisk(t *testing.T) {
	if inside := os.Getenv("HIVE_ROW7_INSIDE"); inside != "" {
		fullDisk(t, inside)
		return
	}
	if os.Geteuid() != 0 {
		t.Skip("row 7 skipped: it needs root to mount a small tmpfs in a private mount namespace")
	}
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		t.Skip("row 7 skipped: no unshare(1) to make a private mount namespace")
	}
	if out, err := exec.Command(unshare, "--mount", "--propagation", "private", "true").CombinedOutput(); err != nil {
		t.Skipf("row 7 skipped: this machine allows no private mount namespace (%v: %s)", err, strings.TrimSpace(string(out)))
	}
	dir := newStateDir(t)
	args := []string{"--mount", "--propagation", "private", os.Args[0], "-test.run=^TestRow07FullDisk$", "-test.v", "-test.count=1"}
	if *full {
		args = append(args, "-full")
	}
	cmd := exec.Command(unshare, args...)
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "HIVE_RELIABILITY_REPORT=") {
			env = append(env, kv)
		}
	}
	cmd.Env = append(env, "HIVE_ROW7_INSIDE="+dir)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the full-disk run failed (%v):\n%s", err, out)
	}
	m := regexp.MustCompile(`row 7: (.*)`).FindSubmatch(out)
	if m == nil {
		t.Fatalf("the full-disk run printed no figure:\n%s", out)
	}
	figure(t, 7, "%s", m[1])
}

// outputFillsTheDisk: with 3 MiB left, commands print 8 MiB. Each is
// answered (not an error: the command ran), its meaning says the disk
// took only part of the output, the text says how much was not kept, the
// record is durable with the dropped bytes counted, and the disk keeps
// the records' reserve. It returns the bytes counted dropped by run.
func outputFillsTheDisk(t *testing.T, s *hivetest.Session, dir string) int64 {
	t.Helper()
	const room = 3 << 20
	filler := filepath.Join(dir, "filler-part")
	leaveRoom := func() {
		t.Helper()
		os.Remove(filler)
		free, ok := output.DiskFree(dir)
		if !ok {
			t.Fatal("the disk's free space cannot be told")
		}
		if err := os.WriteFile(filler, make([]byte, free-room), 0o600); err != nil {
			t.Fatalf("fill the disk but 3 MiB: %v", err)
		}
	}
	leaveRoom()
	const print8M = "head -c 8388608 /dev/zero | tr '\\0' x"
	var env struct {
		SemanticStatus  string `json:"semantic_status"`
		SemanticMessage string `json:"semantic_message"`
		Truncated       int64  `json:"stdout_truncated_bytes"`
	}
	text, isErr, err := s.TryCall("terminal_exec", map[string]any{"cmd": print8M}, &env)
	if err != nil || isErr {
		t.Fatalf("terminal_exec printing 8 MiB with 3 MiB free: %q %v, want an answer", text, err)
	}
	if env.SemanticStatus != "ok" || !strings.Contains(env.SemanticMessage, "nearly full") || !strings.Contains(text, "not kept") {
		t.Errorf("terminal_exec printing 8 MiB with 3 MiB free: %q %+v: want ok, a meaning naming the full disk and the bytes not kept", text, env)
	}
	leaveRoom()
	var ran task
	s.MustCall("run", map[string]any{"cmd": print8M, "wait_seconds": 30}, &ran)
	if ran.Status != "done" || ran.ExitCode == nil || *ran.ExitCode != 0 || ran.StdoutB != 8<<20 || ran.StdoutDrop < 8<<20-room {
		t.Errorf("run printing 8 MiB with little room: %+v: want done, 8 MiB counted, most of it dropped", ran)
	}
	var again task
	s.MustCall("status", map[string]any{"id": ran.ID}, &again)
	if again.Status != "done" || again.StdoutDrop != ran.StdoutDrop {
		t.Errorf("status of the job that filled the disk: %+v, answered %+v", again, ran)
	}
	if free, _ := output.DiskFree(dir); free < output.DefaultReserve/2 {
		t.Errorf("%d B free after output filled the disk: the records' reserve (%d B) was taken", free, output.DefaultReserve)
	}
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	return ran.StdoutDrop
}

// fullDisk is row 7 inside its mount namespace, on state dir dir.
func fullDisk(t *testing.T, dir string) {
	const size = 8 << 20
	defer mountTmpfs(t, dir, size)()
	d := startDaemon(t, dir)
	s := d.MCP()
	var before task
	s.MustCall("run", map[string]any{"cmd": "echo before"}, &before)
	if before.Status != "done" || before.ExitCode == nil || *before.ExitCode != 0 {
		t.Fatalf("before the disk filled: %+v", before)
	}
	dropped := outputFillsTheDisk(t, s, dir)
	var long task
	s.MustCall("run", map[string]any{"cmd": "exec sleep 30", "wait_seconds": 0}, &long)

	// Fill the disk.
	filler := filepath.Join(dir, "filler")
	f, err := os.OpenFile(filler, os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	chunk := make([]byte, 64<<10)
	for {
		if _, err := f.Write(chunk); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				f.Close()
				t.Fatalf("fill the disk: %v", err)
			}
			break
		}
	}
	f.Close()

	// New work: refused, clearly, and nothing runs. Each command would
	// leave a file outside the full disk if it ran.
	proof := t.TempDir()
	refused := 0
	refuse := func(what string, call func(cmd string) (string, bool)) {
		t.Helper()
		mark := filepath.Join(proof, fmt.Sprintf("ran-%d", refused))
		text, isErr := call("touch " + mark)
		if !isErr {
			t.Errorf("%s on a full disk: answered %q, want an error", what, text)
		}
		if !strings.Contains(text, "full") && !strings.Contains(text, "cannot be written") && !strings.Contains(text, "not recorded") {
			t.Errorf("%s on a full disk: error %q does not say the disk is full or the store fails", what, text)
		}
		if _, err := os.Stat(mark); err == nil {
			t.Errorf("%s on a full disk ran its command", what)
		}
		refused++
	}
	mcp := func(tool, field string, extra map[string]any) func(string) (string, bool) {
		return func(cmd string) (string, bool) {
			args := map[string]any{field: cmd}
			for k, v := range extra {
				args[k] = v
			}
			text, isErr, err := s.TryCall(tool, args, nil)
			if err != nil {
				t.Fatalf("%s: %v", tool, err)
			}
			return text, isErr
		}
	}
	socketRun := func(cmd string) (string, bool) {
		_, err := d.Call(proto.Request{Cmd: proto.CmdRun, Argv: []string{cmd}})
		if err == nil {
			return "", false
		}
		return err.Error(), true
	}
	refuse("run", mcp("run", "cmd", nil))
	refuse("run in the background", mcp("run", "cmd", map[string]any{"wait_seconds": 0}))
	refuse("terminal_exec", mcp("terminal_exec", "cmd", nil))
	refuse("terminal_job_start", mcp("terminal_job_start", "cmd", nil))
	refuse("hive run", socketRun)

	// Reads keep working and tell what was answered.
	var st task
	s.MustCall("status", map[string]any{"id": before.ID}, &st)
	if st.Status != "done" || *st.ExitCode != 0 {
		t.Errorf("status on a full disk: %+v, want done exit 0", st)
	}
	if _, err := d.Call(proto.Request{Cmd: proto.CmdPs, All: true}); err != nil {
		t.Errorf("ps on a full disk: %v", err)
	}
	// The kill signals the job; its record may not fit on the full disk
	// (as the WAL happens to stand): then the answer says both, clearly.
	if text, isErr, err := s.TryCall("kill", map[string]any{"id": long.ID, "force": true}, nil); err != nil {
		t.Fatal(err)
	} else if isErr && !(strings.Contains(text, "signalled") && strings.Contains(text, "not recorded")) {
		t.Errorf("kill on a full disk: %q, want it done, or signalled and said not recorded", text)
	}
	hivetest.Wait(10*time.Second, noneMarked(dir)) // what follows holds either way
	// Its end may not be recordable now: the answer is then an error,
	// never a state that a later answer contradicts.
	st = task{}
	text, isErr, err := s.TryCall("status", map[string]any{"id": long.ID}, &st)
	if err != nil {
		t.Fatal(err)
	}
	if !isErr && st.Status != "killed" && st.Status != "running" {
		t.Errorf("status of the killed job on a full disk: %q %+v", text, st)
	}
	s.Close()

	// The daemon stops, and a new one starts on the full disk.
	d.Stop()
	d = startDaemon(t, dir)
	base := d.Settled()
	s = d.MCP()
	refuse("run after a restart", mcp("run", "cmd", nil))
	s.MustCall("status", map[string]any{"id": before.ID}, &st)
	if st.Status != "done" || *st.ExitCode != 0 {
		t.Errorf("status after a restart on a full disk: %+v", st)
	}

	// Space returns: new work is accepted again, shortly.
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	freed := time.Now()
	var after task
	if err := hivetest.Wait(15*time.Second, func() error {
		text, isErr, err := s.TryCall("run", map[string]any{"cmd": "echo after"}, &after)
		if err != nil {
			return hivetest.Abort(err)
		}
		if isErr {
			return fmt.Errorf("new work refused: %s", text)
		}
		return nil
	}); err != nil {
		t.Fatalf("after space returned: %v\ndaemon log:\n%s", err, d.Log())
	}
	recovered := time.Since(freed)
	if after.Status != "done" || *after.ExitCode != 0 || after.StdoutTail != "after\n" {
		t.Errorf("after space returned: %+v", after)
	}
	s.MustCall("status", map[string]any{"id": long.ID}, &st)
	if st.Status != "killed" && st.Status != "interrupted" {
		t.Errorf("the killed job reads %s after space returned", st.Status)
	}
	s.MustCall("status", map[string]any{"id": before.ID}, &st)
	if st.Status != "done" || *st.ExitCode != 0 {
		t.Errorf("the first job reads %+v after space returned", st)
	}
	entries, _ := os.ReadDir(proof)
	figure(t, 7, "full disk (%d MiB tmpfs in a private mount namespace): output that filled the disk answered and recorded (%d B counted dropped, %d B kept for the records); %d kinds of new work refused with clear errors, %d commands run; reads answered; 0 answers contradicted; the daemon restarted on the full disk; new work accepted %v after space returned",
		size>>20, dropped, output.DefaultReserve, refused, len(entries), recovered.Round(10*time.Millisecond))
	s.Close()
	d.CheckBaseline(base)
	d.Stop()
}
