package bench

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	creackpty "github.com/creack/pty"
)

// ptyAnswer is the part of terminal_pty_send's and terminal_pty_open's
// structured answers the benchmarks check.
type ptyAnswer struct {
	SessionID string `json:"session_id"`
	Data      string `json:"data"`
	Screen    string `json:"screen"`
	Matched   bool   `json:"matched"`
	Running   bool   `json:"running"`
	ExitCode  *int   `json:"exit_code"`
}

// ptyCall calls a terminal_pty_* tool through the raw client and decodes
// its structured answer.
func ptyCall(s *rawSession, tool string, args map[string]any) (ptyAnswer, error) {
	params, _ := json.Marshal(map[string]any{"name": tool, "arguments": args})
	out, err := s.call("tools/call", string(params))
	if err != nil {
		return ptyAnswer{}, err
	}
	var r struct {
		IsError           bool            `json:"isError"`
		StructuredContent json.RawMessage `json:"structuredContent"`
	}
	if err := json.Unmarshal(out, &r); err != nil || r.IsError {
		return ptyAnswer{}, fmt.Errorf("%s: %s", tool, out)
	}
	var a ptyAnswer
	if err := json.Unmarshal(r.StructuredContent, &a); err != nil {
		return ptyAnswer{}, fmt.Errorf("%s: %s: %w", tool, r.StructuredContent, err)
	}
	return a, nil
}

// rawPTY is a program on a pseudo-terminal of the benchmark's own: the
// baseline, the same program driven with no hive in between.
type rawPTY struct {
	cmd  *exec.Cmd
	ptmx *os.File
	buf  []byte
}

func startRawPTY(b *testing.B, name string, args ...string) *rawPTY {
	b.Helper()
	cmd := exec.Command(name, args...)
	cmd.Env = append(os.Environ(), "TERM=dumb")
	ptmx, err := creackpty.Start(cmd)
	if err != nil {
		b.Fatalf("start %s on a pty: %v", name, err)
	}
	r := &rawPTY{cmd: cmd, ptmx: ptmx}
	b.Cleanup(r.close)
	return r
}

// until reads until the output since the last call matches re.
func (r *rawPTY) until(re *regexp.Regexp) error {
	r.buf = r.buf[:0]
	chunk := make([]byte, 4096)
	for !re.Match(r.buf) {
		r.ptmx.SetReadDeadline(time.Now().Add(10 * time.Second))
		n, err := r.ptmx.Read(chunk)
		if err != nil {
			return fmt.Errorf("read %q so far: %w", r.buf, err)
		}
		r.buf = append(r.buf, chunk[:n]...)
	}
	return nil
}

// hangup closes the terminal (the kernel hangs it up: SIGHUP to the
// program) and reaps the program.
func (r *rawPTY) close() {
	if r.ptmx != nil {
		r.ptmx.Close()
		r.ptmx = nil
		r.cmd.Wait()
	}
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

func msPerOp(ds []time.Duration) float64 {
	var sum time.Duration
	for _, d := range ds {
		sum += d
	}
	return float64(sum.Microseconds()) / 1000 / float64(len(ds))
}

// BenchmarkPTYREPLRoundTrip: a python3 REPL's `1+1` round trip through a
// real bridge and daemon (raw client), alternating in one run:
//   - default: terminal_pty_send with no wait_ms or wait_for, which
//     returns once python waits for input again (was: 300 ms of quiet);
//   - wait_for: the same with wait_for "2\n>>> $", the client telling
//     what to wait for;
//   - raw: python3 -q on a pty of the benchmark's own, "1+1\n" written and
//     read until its next prompt;
//   - exec: terminal_exec("true") on the same session, the round trip of a
//     tool call that runs a process: wait_for/exec is a turn's cost in
//     those (2.4-3.9 while the holder throttled PTY output by 20 ms).
//
// Each answer is checked ("1+1\n2\n>>> "). Target: p50-default-ms <= 60.
func BenchmarkPTYREPLRoundTrip(b *testing.B) {
	if _, err := exec.LookPath("python3"); err != nil {
		b.Skip("python3 not installed")
	}
	d := startDaemon(b)
	s := connectRaw(b, d)
	open, err := ptyCall(s, "terminal_pty_open", map[string]any{"cmd": "python3 -q"})
	if err != nil {
		b.Fatal(err)
	}
	id := open.SessionID
	if a, err := ptyCall(s, "terminal_pty_send", map[string]any{"session_id": id, "input": "print('rea'+'dy')\n", "wait_for": "ready\\n>>> $"}); err != nil || !a.Matched {
		b.Fatalf("python3 not ready: %+v %v", a, err)
	}
	raw := startRawPTY(b, "python3", "-q")
	rawPrompt := regexp.MustCompile(`>>> $`)
	rawAnswer := regexp.MustCompile(`\n2\r?\n>>> $`)
	if err := raw.until(rawPrompt); err != nil {
		b.Fatal(err)
	}
	const want = "1+1\n2\n>>> "
	const execParams = `{"name":"terminal_exec","arguments":{"cmd":"true"}}`
	if _, err := s.call("tools/call", execParams); err != nil {
		b.Fatal(err)
	}
	var def, wf, rw, ex []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		out, err := s.call("tools/call", execParams)
		ex = append(ex, time.Since(t0))
		if err != nil || !bytes.Contains(out, []byte(`"exit_code":0`)) {
			b.Fatalf("terminal_exec true: %s %v", out, err)
		}

		t0 = time.Now()
		a, err := ptyCall(s, "terminal_pty_send", map[string]any{"session_id": id, "input": "1+1\n"})
		def = append(def, time.Since(t0))
		if err != nil || a.Data != want {
			b.Fatalf("default send: %q %v, want %q", a.Data, err, want)
		}

		t0 = time.Now()
		a, err = ptyCall(s, "terminal_pty_send", map[string]any{"session_id": id, "input": "1+1\n", "wait_for": "2\\n>>> $"})
		wf = append(wf, time.Since(t0))
		if err != nil || !a.Matched || a.Data != want {
			b.Fatalf("wait_for send: %+v %v, want %q", a, err, want)
		}

		t0 = time.Now()
		if _, err := raw.ptmx.WriteString("1+1\n"); err != nil {
			b.Fatal(err)
		}
		if err := raw.until(rawAnswer); err != nil {
			b.Fatal(err)
		}
		rw = append(rw, time.Since(t0))
	}
	b.StopTimer()
	b.ReportMetric(msPerOp(def), "default-ms/op")
	b.ReportMetric(msPerOp(wf), "wait_for-ms/op")
	b.ReportMetric(msPerOp(rw), "raw-ms/op")
	b.ReportMetric(float64(median(def).Microseconds())/1000, "p50-default-ms")
	b.ReportMetric(float64(median(wf).Microseconds())/1000, "p50-wait_for-ms")
	b.ReportMetric(msPerOp(def)/msPerOp(wf), "default/wait_for")
	b.ReportMetric(msPerOp(def)/msPerOp(rw), "default/raw")
	b.ReportMetric(msPerOp(ex), "exec-ms/op")
	b.ReportMetric(float64(median(ex).Microseconds())/1000, "p50-exec-ms")
	b.ReportMetric(msPerOp(wf)/msPerOp(ex), "wait_for/exec")
	b.ReportMetric(msPerOp(wf)/msPerOp(rw), "wait_for/raw")
}

// BenchmarkPTYClose: terminal_pty_close on a daemon that has served other
// work and that inherited an ignored SIGHUP (started through a shell that
// ignores it, as nohup does), alternating in one run:
//   - shell: a bash session closed right after the answer it waited for
//     (wait_for on the output: bash is still finishing the command);
//   - python: a `python3 -q` session, a program that leaves SIGHUP alone;
//   - raw: bash on a pty of the benchmark's own, closed (a real hangup)
//     and reaped right after the same answer.
//
// Each close is checked: the process ended by the hangup (exit code 129),
// not killed after a grace. Target: close-ms/op <= 50, max-close-ms well
// under 1000 (was about 1010 in the worst case).
func BenchmarkPTYClose(b *testing.B) {
	d := startDaemon(b, "bash", "-c", `trap '' HUP; exec "$@"`, "bash")
	s := connectRaw(b, d)
	_, hasPython := exec.LookPath("python3")
	// Other work first: jobs, commands, sessions opened and closed.
	for i := 0; i < 20; i++ {
		for _, p := range []string{
			`{"name":"run","arguments":{"cmd":"true","wait_seconds":5}}`,
			`{"name":"terminal_exec","arguments":{"cmd":"seq 1 10000"}}`,
		} {
			if _, err := s.call("tools/call", p); err != nil {
				b.Fatal(err)
			}
		}
		a, err := ptyCall(s, "terminal_pty_open", nil)
		if err != nil {
			b.Fatal(err)
		}
		ptyCall(s, "terminal_pty_send", map[string]any{"session_id": a.SessionID, "input": "ls /; echo w-$((1+1))\n", "wait_for": "w-2"})
		if _, err := ptyCall(s, "terminal_pty_close", map[string]any{"session_id": a.SessionID}); err != nil {
			b.Fatal(err)
		}
	}
	hungUp := func(a ptyAnswer, what string) {
		if a.Running || a.ExitCode == nil || *a.ExitCode != 129 {
			code := "none"
			if a.ExitCode != nil {
				code = fmt.Sprint(*a.ExitCode)
			}
			b.Fatalf("%s after close: running=%v exit_code=%s, want 129 (the hangup)", what, a.Running, code)
		}
	}
	answer := regexp.MustCompile(`x-2\r?\n`)
	var sh, py, rw []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		a, err := ptyCall(s, "terminal_pty_open", nil)
		if err != nil {
			b.Fatal(err)
		}
		id := a.SessionID
		if a, err := ptyCall(s, "terminal_pty_send", map[string]any{"session_id": id, "input": "echo x-$((1+1))\n", "wait_for": `x-2\n`}); err != nil || !a.Matched {
			b.Fatalf("shell: %+v %v", a, err)
		}
		b.StartTimer()
		t0 := time.Now()
		a, err = ptyCall(s, "terminal_pty_close", map[string]any{"session_id": id})
		sh = append(sh, time.Since(t0))
		if err != nil {
			b.Fatal(err)
		}
		hungUp(a, "shell")

		if hasPython == nil {
			b.StopTimer()
			a, err := ptyCall(s, "terminal_pty_open", map[string]any{"cmd": "python3 -q"})
			if err != nil {
				b.Fatal(err)
			}
			id := a.SessionID
			if a, err := ptyCall(s, "terminal_pty_send", map[string]any{"session_id": id, "input": "print('x-'+str(1+1))\n", "wait_for": `x-2\n>>> $`}); err != nil || !a.Matched {
				b.Fatalf("python: %+v %v", a, err)
			}
			b.StartTimer()
			t0 := time.Now()
			a, err = ptyCall(s, "terminal_pty_close", map[string]any{"session_id": id})
			py = append(py, time.Since(t0))
			if err != nil {
				b.Fatal(err)
			}
			hungUp(a, "python3 -q")
		}

		b.StopTimer()
		r := startRawPTY(b, "bash", "--norc", "--noprofile")
		if _, err := r.ptmx.WriteString("echo x-$((1+1))\n"); err != nil {
			b.Fatal(err)
		}
		if err := r.until(answer); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		t0 = time.Now()
		r.close()
		rw = append(rw, time.Since(t0))
		if !bytes.Contains(r.buf, []byte("x-2")) {
			b.Fatalf("raw bash: %q", r.buf)
		}
	}
	b.StopTimer()
	b.ReportMetric(msPerOp(sh), "close-ms/op")
	b.ReportMetric(float64(slices.Max(sh).Microseconds())/1000, "max-close-ms")
	if len(py) > 0 {
		b.ReportMetric(msPerOp(py), "py-close-ms/op")
		b.ReportMetric(float64(slices.Max(py).Microseconds())/1000, "max-py-close-ms")
	}
	b.ReportMetric(msPerOp(rw), "raw-close-ms/op")
	b.ReportMetric(msPerOp(sh)/msPerOp(rw), "ratio")
}

// BenchmarkPTYFlood: a bash session that prints 109 kB (`seq 1 20000`)
// as fast as it can, waited for with wait_for on a line printed after it,
// then its screen read (terminal_pty_read screen: once the terminal
// emulator has taken all of it), against the same on a pty of the
// benchmark's own, alternating in one run. What the daemon and the
// holder spend on it says whether the holder's notices of new output
// flood the daemon (one a write) or are coalesced (at most 8 per 20 ms
// under a burst).
//
// Metrics: hive-ms/op (the wait_for send), screen-ms/op (the screen read
// after it), raw-ms/op, ratio (hive / raw); daemon-cpu-ms/op and
// holder-cpu-ms/op (user+system during both hive calls).
func BenchmarkPTYFlood(b *testing.B) {
	d := startDaemon(b)
	s := connectRaw(b, d)
	open, err := ptyCall(s, "terminal_pty_open", map[string]any{"cmd": "bash --norc --noprofile"})
	if err != nil {
		b.Fatal(err)
	}
	id := open.SessionID
	const cmd = "seq 1 20000; echo END-$((1+1))\n"
	raw := startRawPTY(b, "bash", "--norc", "--noprofile")
	end := regexp.MustCompile(`END-2\r?\n`)
	cpu := func(pid int) time.Duration {
		if pid <= 0 {
			return 0
		}
		t, err := procCPU(pid)
		if err != nil {
			b.Fatal(err)
		}
		return t
	}
	var hive, screen, rw, dcpu, hcpu time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		d0, h0 := cpu(d.Pid), cpu(d.holderPID)
		t0 := time.Now()
		a, err := ptyCall(s, "terminal_pty_send", map[string]any{"session_id": id, "input": cmd, "wait_for": "END-2\\n"})
		hive += time.Since(t0)
		if err != nil || !a.Matched {
			b.Fatalf("send: %+v %v", a, err)
		}
		t0 = time.Now()
		a, err = ptyCall(s, "terminal_pty_read", map[string]any{"session_id": id, "screen": true})
		screen += time.Since(t0)
		dcpu += cpu(d.Pid) - d0
		hcpu += cpu(d.holderPID) - h0
		if err != nil || !strings.Contains(a.Screen, "END-2") {
			b.Fatalf("screen: %q %v", a.Screen, err)
		}
		t0 = time.Now()
		if _, err := raw.ptmx.WriteString(cmd); err != nil {
			b.Fatal(err)
		}
		if err := raw.until(end); err != nil {
			b.Fatal(err)
		}
		rw += time.Since(t0)
	}
	b.StopTimer()
	if _, err := ptyCall(s, "terminal_pty_close", map[string]any{"session_id": id}); err != nil {
		b.Fatal(err)
	}
	n := float64(b.N)
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 / n }
	b.ReportMetric(ms(hive), "hive-ms/op")
	b.ReportMetric(ms(screen), "screen-ms/op")
	b.ReportMetric(ms(rw), "raw-ms/op")
	b.ReportMetric(ms(hive)/ms(rw), "ratio")
	b.ReportMetric(ms(dcpu), "daemon-cpu-ms/op")
	b.ReportMetric(ms(hcpu), "holder-cpu-ms/op")
}
