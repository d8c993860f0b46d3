package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/hivetools/hive/internal/hivetest"
)

// hiveJSON runs a hive command with --json and decodes its output.
func hiveJSON(t *testing.T, state string, out any, args ...string) {
	t.Helper()
	s, err := hivetest.Run(t, state, append(args, "--json")...)
	if err != nil {
		t.Fatalf("hive %v: %v: %s", args, err, s)
	}
	if err := json.Unmarshal([]byte(s), out); err != nil {
		t.Fatalf("hive %v --json: %q: %v", args, s, err)
	}
}

// waitGone waits for a process that is not our child to end.
func waitGone(t *testing.T, pid int, what string) {
	t.Helper()
	hivetest.Eventually(t, 20*time.Second, what+" to end", hivetest.Gone(pid))
}

func TestVersionFlag(t *testing.T) {
	state := filepath.Join(t.TempDir(), "never-created")
	for _, f := range []string{"--version", "-v"} {
		out, err := hivetest.Run(t, state, f)
		if err != nil || !strings.HasPrefix(out, "hive ") || !strings.Contains(out, "(go1.") {
			t.Errorf("hive %s: %q %v", f, out, err)
		}
	}
	if _, err := os.Stat(state); err == nil {
		t.Error("--version created the state dir")
	}
}

// hive stop ends running jobs (the whole group), records them as
// interrupted with a loose end saying the daemon was stopped, and ends
// the daemon: process gone, socket removed.
func TestStopWithJobs(t *testing.T) {
	state := hivetest.StateDir(t)
	pidFile := filepath.Join(t.TempDir(), "pid")
	if out, err := hivetest.Run(t, state, "run", "--name", "long", "--notify", "--", fmt.Sprintf("sleep 3600 & echo $! > %s; wait", pidFile)); err != nil {
		t.Fatalf("run: %v %s", err, out)
	}
	child := waitPidFile(t, pidFile)
	daemon := hivetest.DaemonPid(state)
	out, err := hivetest.Run(t, state, "stop", "--grace", "2s")
	if err != nil || !strings.Contains(out, fmt.Sprintf("stopped the daemon (pid %d); 1 job(s) were stopped", daemon)) {
		t.Fatalf("stop: %v %q", err, out)
	}
	// stop returns once the daemon has released the state dir; the
	// process ends right after.
	waitGone(t, daemon, "the stopped daemon")
	if hivetest.Alive(child) {
		t.Errorf("job process %d survived hive stop", child)
	}
	if _, err := os.Stat(filepath.Join(state, "hive.sock")); !os.IsNotExist(err) {
		t.Errorf("socket left behind: %v", err)
	}
	if out, err := hivetest.Run(t, state, "stop"); err != nil || !strings.Contains(out, "no hive daemon was running") {
		t.Errorf("second stop: %v %q", err, out)
	}
	// restart with no daemon starts one.
	if out, err := hivetest.Run(t, state, "restart"); err != nil || !strings.Contains(out, "started one") {
		t.Fatalf("restart without a daemon: %v %q", err, out)
	}
	var todos struct {
		Todos []struct{ Key, Summary string }
	}
	hiveJSON(t, state, &todos, "todo", "ls")
	found := false
	for _, td := range todos.Todos {
		if strings.Contains(td.Summary, "sleep 3600") {
			found = true
			if !strings.Contains(td.Summary, "interrupted") || !strings.Contains(td.Summary, "the daemon was stopped by hive stop") {
				t.Errorf("loose end of the stopped job: %q", td.Summary)
			}
		}
	}
	if !found {
		t.Errorf("no loose end for the stopped job: %+v", todos)
	}
}

// hive restart replaces the daemon with one started with the same flags.
func TestRestart(t *testing.T) {
	state := hivetest.StateDir(t)
	hivetest.StartDaemon(t, state, "--max-running", "2")
	old := hivetest.DaemonPid(state)
	out, err := hivetest.Run(t, state, "restart")
	if err != nil || !strings.Contains(out, fmt.Sprintf("pid %d stopped", old)) {
		t.Fatalf("restart: %v %q", err, out)
	}
	now := hivetest.DaemonPid(state)
	if now == old || now == 0 {
		t.Fatalf("pid after restart: %d (was %d)", now, old)
	}
	// From one of its own jobs, a restart would end with the stop: refused.
	c := hivetest.Command(t, state, "restart")
	c.Env = append(c.Env, "HIVE_JOB_OWNER="+state)
	if b, err := c.CombinedOutput(); err == nil || !strings.Contains(string(b), "inside a job of this daemon") || hivetest.DaemonPid(state) != now {
		t.Errorf("restart from a job: %v %q", err, b)
	}
	var cfg struct {
		Differs map[string]string `json:"daemon_differs"`
		PID     int               `json:"daemon_pid"`
	}
	hiveJSON(t, state, &cfg, "config")
	if cfg.PID != now || cfg.Differs["max-running"] != "2" {
		t.Errorf("the restarted daemon's flags: %+v, want max-running 2 kept", cfg)
	}
}

// A hive.toml is read by a daemon any command starts; flags override it;
// hive config says where each setting came from; a bad file is refused
// with its file, line and key.
func TestConfigFile(t *testing.T) {
	state := hivetest.StateDir(t)
	toml := filepath.Join(state, "hive.toml")
	if err := os.WriteFile(toml, []byte("# test\nmax_running = 1\ngrace = \"3s\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		if out, err := hivetest.Run(t, state, "run", "--", "sleep 30"); err != nil {
			t.Fatalf("run: %v %s", err, out)
		}
	}
	var jobs []struct{ State string }
	hiveJSON(t, state, &jobs, "ps")
	states := map[string]int{}
	for _, j := range jobs {
		states[j.State]++
	}
	if states["running"] != 1 || states["pending"] != 1 {
		t.Errorf("with max_running = 1 in hive.toml: %v, want one running and one pending", states)
	}
	var cfg struct {
		File     string `json:"file"`
		Settings []struct {
			Name, Value, Source, File string
			Line                      int
		} `json:"settings"`
	}
	hiveJSON(t, state, &cfg, "config", "--grace", "1s")
	got := map[string]string{}
	for _, s := range cfg.Settings {
		got[s.Name] = fmt.Sprintf("%s %s %s:%d", s.Value, s.Source, s.File, s.Line)
	}
	if want := "1 file " + toml + ":2"; got["max-running"] != want {
		t.Errorf("config max-running: %q, want %q", got["max-running"], want)
	}
	if got["grace"] != "1s flag :0" || got["file-cap"] != "1073741824 default :0" {
		t.Errorf("config grace %q, file-cap %q", got["grace"], got["file-cap"])
	}
	out, err := hivetest.Run(t, state, "config")
	if err != nil || !regexp.MustCompile(`max_running\s+1\s+file \(line 2\)`).MatchString(out) {
		t.Errorf("config: %v %q", err, out)
	}

	// A bad file: the daemon an auto-start runs refuses it, and the
	// caller hears why.
	other := hivetest.StateDir(t)
	os.WriteFile(filepath.Join(other, "hive.toml"), []byte("max_running = 2\nmax_runing = 1\n"), 0o600)
	out, err = hivetest.Run(t, other, "run", "--", "true")
	if want := filepath.Join(other, "hive.toml") + ":2: max_runing: unknown key"; err == nil || !strings.Contains(out, want) {
		t.Errorf("run with a bad hive.toml: %v %q, want %q", err, out, want)
	}
	os.WriteFile(filepath.Join(other, "hive.toml"), []byte("max_running = \"2\"\n"), 0o600)
	out, err = hivetest.Run(t, other, "config")
	if err == nil || !strings.Contains(out, `hive.toml:1: max_running: value "2": want an integer`) {
		t.Errorf("config with a string for a number: %v %q", err, out)
	}
	// Read like every state file: never through a symlink.
	os.Remove(filepath.Join(other, "hive.toml"))
	hivetest.Symlink(t, toml, filepath.Join(other, "hive.toml"))
	if out, err := hivetest.Run(t, other, "config"); err == nil || !strings.Contains(out, "symlink") {
		t.Errorf("config through a symlinked hive.toml: %v %q", err, out)
	}
}

// twoBuilds builds hive twice, stamped with versions skew-A and skew-B.
func twoBuilds(t *testing.T) (a, b string) {
	t.Helper()
	if testing.Short() {
		t.Skip("builds hive twice")
	}
	dir := t.TempDir()
	for _, v := range []string{"A", "B"} {
		cmd := exec.Command("go", "build", "-ldflags", "-X github.com/hivetools/hive/internal/cli.Version=skew-"+v,
			"-o", filepath.Join(dir, "hive-"+v), ".")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go build: %v: %s", err, out)
		}
	}
	return filepath.Join(dir, "hive-A"), filepath.Join(dir, "hive-B")
}

// run runs a hive binary (not the test binary) for the state dir.
func runBin(t *testing.T, bin, state string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "HIVE_STATE_DIR="+state)
	var o, e strings.Builder
	cmd.Stdout, cmd.Stderr = &o, &e
	err = cmd.Run()
	return o.String(), e.String(), err
}

// A command of one build that finds the daemon of another says so once;
// an idle daemon is replaced by the caller's build, a busy one is left
// until hive restart.
func TestVersionSkew(t *testing.T) {
	a, b := twoBuilds(t)
	state := hivetest.StateDir(t)
	if out, errs, err := runBin(t, a, state, "restart"); err != nil {
		t.Fatalf("start A: %v %s %s", err, out, errs)
	}
	pidA := hivetest.DaemonPid(state)
	out, _, err := runBin(t, b, state, "version")
	if err != nil || !strings.Contains(out, "client  hive skew-B") || !strings.Contains(out, "daemon  hive skew-A") ||
		!strings.Contains(out, "another build") {
		t.Errorf("version of B with A's daemon: %v %q", err, out)
	}
	// B's run finds A idle: replaced.
	out, errs, err := runBin(t, b, state, "run", "--name", "busy", "--", "sleep 3600")
	if err != nil || strings.Count(errs, "another build") != 1 || !strings.Contains(errs, "it was idle, so it was replaced by this build") {
		t.Fatalf("run of B with A's idle daemon: %v %q %q", err, out, errs)
	}
	waitGone(t, pidA, "A's replaced daemon")
	pidB := hivetest.DaemonPid(state)
	var v struct {
		DaemonVersion string `json:"daemon_version"`
		Same          bool   `json:"same_build"`
	}
	s, _, _ := runBin(t, b, state, "version", "--json")
	if json.Unmarshal([]byte(s), &v); v.DaemonVersion != "skew-B" || !v.Same {
		t.Errorf("after the replacement: %s", s)
	}
	// A's run finds B busy with nothing but a running job: the holder
	// keeps the job, so B is replaced by A, and the job runs on.
	out, errs, err = runBin(t, a, state, "run", "--", "true")
	if err != nil || strings.Count(errs, "another build") != 1 || !strings.Contains(errs, "the jobs keep running") {
		t.Errorf("run of A with B's daemon running a job: %v %q %q", err, out, errs)
	}
	waitGone(t, pidB, "B's daemon, replaced with its job running")
	s, _, _ = runBin(t, a, state, "ps", "--json", "--filter", "name=busy")
	if !strings.Contains(s, `"running"`) {
		t.Errorf("the busy job after the replacement: %s", s)
	}
	// B's bridge replaces A the same way and holds a session: busy with
	// it, B is warned about and left alone by A's run.
	bridge := exec.Command(b, "mcp")
	bridge.Env = append(os.Environ(), "HIVE_STATE_DIR="+state)
	keepOpen, _ := bridge.StdinPipe()
	if err := bridge.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { keepOpen.Close(); bridge.Wait() }()
	hivetest.Eventually(t, 10*time.Second, "B's bridge's session on B's daemon", func() error {
		s, _, _ = runBin(t, b, state, "version", "--json")
		if !strings.Contains(s, `"mcp_sessions":1`) || !strings.Contains(s, `"same_build":true`) {
			return fmt.Errorf("B's bridge has no session on B's daemon: %s", s)
		}
		return nil
	})
	pidB = hivetest.DaemonPid(state)
	out, errs, err = runBin(t, a, state, "run", "--", "true")
	if err != nil || strings.Count(errs, "another build") != 1 || !strings.Contains(errs, "1 MCP session(s)") ||
		!strings.Contains(errs, "hive restart replaces it now") {
		t.Errorf("run of A with B's busy daemon: %v %q %q", err, out, errs)
	}
	if hivetest.DaemonPid(state) != pidB || !hivetest.Alive(pidB) {
		t.Errorf("the busy daemon was replaced")
	}
	// hive restart replaces it on demand, onto another build, and the
	// busy job keeps running: same id, same process.
	var before, after []struct {
		ID    string `json:"id"`
		State string `json:"state"`
		Pid   int    `json:"pid"`
	}
	s, _, _ = runBin(t, a, state, "ps", "--json", "--filter", "name=busy")
	json.Unmarshal([]byte(s), &before)
	if out, errs, err := runBin(t, a, state, "restart", "--grace", "1s"); err != nil || !strings.Contains(out, "runs hive skew-A") {
		t.Errorf("restart by A: %v %q %q", err, out, errs)
	}
	s, _, _ = runBin(t, a, state, "ps", "--json", "--filter", "name=busy")
	json.Unmarshal([]byte(s), &after)
	if len(before) != 1 || len(after) != 1 || after[0] != before[0] || after[0].State != "running" || !hivetest.Alive(after[0].Pid) {
		t.Errorf("the busy job across hive restart onto another build: before %+v, after %+v", before, after)
	}
	if out, errs, err := runBin(t, a, state, "kill", "busy"); err != nil {
		t.Errorf("kill busy: %v %q %q", err, out, errs)
	}
	// The same build says nothing.
	if _, errs, err := runBin(t, a, state, "run", "--", "true"); err != nil || errs != "" {
		t.Errorf("run of A with A's daemon: %v %q", err, errs)
	}
	// hive mcp does the same as the CLI: B's bridge replaces A's idle
	// daemon (its jobs have ended) and serves the session.
	pidA = hivetest.DaemonPid(state)
	hivetest.Eventually(t, 10*time.Second, "the last `run -- true` to end", func() error {
		s, _, _ = runBin(t, a, state, "ps", "--json")
		if strings.Contains(s, `"running"`) || strings.Contains(s, `"pending"`) {
			return fmt.Errorf("jobs still running: %s", s)
		}
		return nil
	})
	cmd := exec.Command(b, "mcp")
	cmd.Env = append(os.Environ(), "HIVE_STATE_DIR="+state)
	cmd.Stdin = strings.NewReader("")
	var e strings.Builder
	cmd.Stderr = &e
	if err := cmd.Run(); err != nil || !strings.Contains(e.String(), "replaced by this build") {
		t.Errorf("mcp of B with A's idle daemon: %v %q", err, e.String())
	}
	if hivetest.DaemonPid(state) == pidA {
		t.Error("the bridge did not replace the idle daemon")
	}
	// A daemon systemd runs is not replaced by another build's command,
	// idle or not: that would leave the unit stopped and a daemon outside
	// it. The command says how to replace it.
	if _, errs, err := runBin(t, b, state, "stop"); err != nil {
		t.Fatalf("stop B: %v %q", err, errs)
	}
	d := exec.Command(a, "daemon")
	d.Env = append(os.Environ(), "HIVE_STATE_DIR="+state, "HIVE_SUPERVISOR=systemd")
	hivetest.StartDaemonCmd(t, state, d)
	pidA = hivetest.DaemonPid(state)
	if _, errs, err := runBin(t, b, state, "run", "--", "true"); err != nil || !strings.Contains(errs, "systemd runs it") {
		t.Errorf("run of B with A's daemon under systemd: %v %q", err, errs)
	}
	if hivetest.DaemonPid(state) != pidA || !hivetest.Alive(pidA) {
		t.Error("the daemon systemd runs was replaced")
	}
}

// service install writes a systemd user unit running hive daemon with
// the state dir (and --http); without systemd it prints the unit and says
// so; with systemctl it reloads and enables it.
func TestServiceInstall(t *testing.T) {
	state := filepath.Join(t.TempDir(), "st")
	xdg := t.TempDir()
	exe := filepath.Join(t.TempDir(), "bin dir", "hive")
	os.MkdirAll(filepath.Dir(exe), 0o755)
	os.WriteFile(exe, []byte("#!/bin/sh\n"), 0o755)
	env := func(c *exec.Cmd, systemctl string) *exec.Cmd {
		c.Env = append(c.Env, "XDG_CONFIG_HOME="+xdg, "HIVE_SYSTEMCTL="+systemctl)
		return c
	}
	run := func(systemctl string, args ...string) (string, error) {
		c := env(hivetest.Command(t, state, args...), systemctl)
		out, err := c.CombinedOutput()
		return string(out), err
	}
	// This test binary is go test's temporary build: no unit runs it.
	if out, err := run("/nonexistent/systemctl", "service", "install"); err == nil || !strings.Contains(out, "temporary build") {
		t.Errorf("install from a temporary build: %v %q", err, out)
	}
	out, err := run("/nonexistent/systemctl", "service", "install", "--http", "127.0.0.1:8765", "--exe", exe)
	if err != nil || !strings.Contains(out, "systemd is not available here") || !strings.Contains(out, "[Service]") {
		t.Fatalf("install without systemd: %v %q", err, out)
	}
	unit := filepath.Join(xdg, "systemd", "user", "hive.service")
	b, err := os.ReadFile(unit)
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("ExecStart=%q \"daemon\" \"--state-dir\" %q \"--http\" \"127.0.0.1:8765\"\n", exe, state)
	for _, w := range []string{want, "Environment=HIVE_SUPERVISOR=systemd\n", "KillMode=process\n", "WantedBy=default.target\n"} {
		if !strings.Contains(string(b), w) {
			t.Errorf("unit lacks %q:\n%s", w, b)
		}
	}
	if out, err := run("/nonexistent/systemctl", "service", "install", "--http", "8765", "--exe", exe); err == nil || !strings.Contains(out, "--http \"8765\": want host:port") {
		t.Errorf("install --http 8765: %v %q", err, out)
	}
	// With a systemctl (a script that records what it is asked).
	calls := filepath.Join(t.TempDir(), "calls")
	fake := filepath.Join(t.TempDir(), "systemctl")
	os.WriteFile(fake, []byte("#!/bin/sh\necho \"$*\" >> "+calls+"\n[ \"$2\" = is-active ] && echo inactive\nexit 0\n"), 0o755)
	if out, err := run(fake, "service", "install", "--exe", exe); err != nil || !strings.Contains(out, "enabled and started hive.service") {
		t.Errorf("install with systemd: %v %q", err, out)
	}
	if out, err := run(fake, "service", "status"); err != nil || !strings.Contains(out, "unit    "+unit) || !strings.Contains(out, "systemd inactive") {
		t.Errorf("status: %v %q", err, out)
	}
	if out, err := run(fake, "service", "uninstall"); err != nil || !strings.Contains(out, "removed "+unit) {
		t.Errorf("uninstall: %v %q", err, out)
	}
	if _, err := os.Stat(unit); !os.IsNotExist(err) {
		t.Errorf("unit left after uninstall: %v", err)
	}
	got, _ := os.ReadFile(calls)
	wantCalls := "--user show-environment\n--user daemon-reload\n--user enable --now hive.service\n" +
		"--user show-environment\n--user is-active hive.service\n--user is-enabled hive.service\n" +
		"--user show-environment\n--user disable --now hive.service\n--user daemon-reload\n"
	if string(got) != wantCalls {
		t.Errorf("systemctl calls:\n%s\nwant:\n%s", got, wantCalls)
	}
	if _, err := os.Stat(state); err == nil {
		t.Error("service commands started a daemon")
	}
}

// commandNames are the commands hive's help lists.
func commandNames(t *testing.T) []string {
	out, err := hivetest.Run(t, filepath.Join(t.TempDir(), "none"), "help")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	seen := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^  hive ([a-z]+)`).FindAllStringSubmatch(out, -1) {
		if !seen[m[1]] {
			seen[m[1]] = true
			names = append(names, m[1])
		}
	}
	if len(names) < 15 {
		t.Fatalf("help lists %v", names)
	}
	return names
}

func TestCompletionAndMan(t *testing.T) {
	state := filepath.Join(t.TempDir(), "never-created")
	names := commandNames(t)
	for _, shell := range []string{"bash", "zsh"} {
		out, err := hivetest.Run(t, state, "completion", shell)
		if err != nil {
			t.Fatalf("completion %s: %v", shell, err)
		}
		for _, n := range names {
			if !strings.Contains(out, "'"+n+"'") && !strings.Contains(out, "'"+n+":") {
				t.Errorf("completion %s lacks command %s", shell, n)
			}
		}
		for _, w := range []string{"--max-running", "--subsystem", "upsert"} {
			if !strings.Contains(out, w) {
				t.Errorf("completion %s lacks %s", shell, w)
			}
		}
		if _, err := exec.LookPath(shell); err != nil {
			t.Logf("no %s here: syntax not checked", shell)
			continue
		}
		f := filepath.Join(t.TempDir(), "c")
		os.WriteFile(f, []byte(out), 0o600)
		if b, err := exec.Command(shell, "-n", f).CombinedOutput(); err != nil {
			t.Errorf("%s -n: %v %s", shell, err, b)
		}
	}
	// bash completes a command's flags.
	if _, err := exec.LookPath("bash"); err == nil {
		out, _ := hivetest.Run(t, state, "completion", "bash")
		f := filepath.Join(t.TempDir(), "c.bash")
		os.WriteFile(f, []byte(out), 0o600)
		script := fmt.Sprintf(`source %q; COMP_WORDS=(hive todo upsert --sub); COMP_CWORD=3; _hive; echo "${COMPREPLY[*]}"
COMP_WORDS=(hive sto); COMP_CWORD=1; _hive; echo "${COMPREPLY[*]}"`, f)
		b, err := exec.Command("bash", "-c", script).CombinedOutput()
		if err != nil || string(b) != "--subsystem\nstop\n" {
			t.Errorf("bash completion: %v %q", err, b)
		}
	}
	man, err := hivetest.Run(t, state, "man")
	if err != nil || !strings.HasPrefix(man, ".TH HIVE 1") {
		t.Fatalf("man: %v %q", err, man)
	}
	for _, n := range names {
		if !strings.Contains(man, ".SS "+n+"\n") {
			t.Errorf("man lacks a section for %s", n)
		}
	}
	if !strings.Contains(man, `\-\-max\-running`) {
		t.Error("man lacks the daemon's flags")
	}
	if _, err := exec.LookPath("groff"); err == nil {
		c := exec.Command("groff", "-man", "-Tutf8", "-ww", "-z")
		c.Stdin = strings.NewReader(man)
		if b, err := c.CombinedOutput(); err != nil || len(b) > 0 {
			t.Errorf("groff: %v %s", err, b)
		}
	}
	if _, err := os.Stat(state); err == nil {
		t.Error("completion or man created the state dir")
	}
}

// In a terminal hive mcp says what it is, in one line on stderr; piped,
// it says nothing.
func TestMCPGreeting(t *testing.T) {
	state := hivetest.StateDir(t)
	c := hivetest.Command(t, state, "mcp")
	c.Stdin = strings.NewReader("")
	var errb strings.Builder
	c.Stderr = &errb
	if err := c.Run(); err != nil {
		t.Fatalf("piped mcp: %v %s", err, errb.String())
	}
	if errb.Len() != 0 {
		t.Errorf("piped mcp wrote to stderr: %q", errb.String())
	}
	c = hivetest.Command(t, state, "mcp")
	tty, err := pty.Start(c)
	if err != nil {
		t.Fatal(err)
	}
	defer tty.Close()
	var got []byte
	buf := make([]byte, 4096)
	tty.SetReadDeadline(time.Now().Add(20 * time.Second))
	for !strings.Contains(string(got), "\n") {
		n, err := tty.Read(buf)
		got = append(got, buf[:n]...)
		if err != nil {
			t.Fatalf("read the terminal: %v (got %q)", err, got)
		}
	}
	line := string(got)
	for _, w := range []string{"speaks MCP", `{"mcpServers":{"hive":{"args":["mcp"],"command":`, "Ctrl-D"} {
		if !strings.Contains(line, w) {
			t.Errorf("greeting %q lacks %q", line, w)
		}
	}
	tty.Write([]byte{4}) // Ctrl-D: end of input
	done := make(chan error, 1)
	go func() { done <- c.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("mcp after Ctrl-D: %v", err)
		}
	case <-time.After(20 * time.Second):
		c.Process.Signal(syscall.SIGKILL)
		t.Error("mcp did not end at Ctrl-D")
	}
}
