package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/hivetools/hive/internal/hivetest"
)

// cliJob is a job as `hive ps --format json` and `hive inspect` print it.
type cliJob struct {
	ID         string   `json:"id"`
	Name       string   `json:"name"`
	Cmd        string   `json:"cmd"`
	State      string   `json:"state"`
	ExitCode   *int     `json:"exit_code"`
	Signal     *int     `json:"signal"`
	Argv       []string `json:"argv"`
	ShellKind  string   `json:"shell_kind"`
	LooseEnd   bool     `json:"loose_end"`
	StdoutPath string   `json:"stdout_path"`
	StderrPath string   `json:"stderr_path"`
	IndexPath  string   `json:"index_path"`
}

// rc is the exit status of a finished hive command (0 for nil).
func rc(t *testing.T, err error) int {
	t.Helper()
	var ee *exec.ExitError
	if err == nil {
		return 0
	}
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	t.Fatalf("not an exit status: %v", err)
	return -1
}

// gates makes n fifos in a temp dir; open(i) lets the job past gate i
// (the job's `read < gate` returns).
type gates struct {
	t   *testing.T
	dir string
}

func newGates(t *testing.T, n int) gates {
	g := gates{t: t, dir: t.TempDir()}
	for i := range n {
		mkfifo(t, g.path(i))
	}
	return g
}

func (g gates) path(i int) string { return filepath.Join(g.dir, fmt.Sprint("gate", i)) }

func (g gates) open(i int) {
	f, err := os.OpenFile(g.path(i), os.O_WRONLY, 0) // blocks until the job reads it
	if err != nil {
		g.t.Fatal(err)
	}
	f.WriteString("\n")
	f.Close()
}

// `hive logs` merges stdout and stderr in arrival order. Each line is
// written only once a follower (`logs -f`) has shown the one before, so
// the order is the order of writing; `logs -f` then exits with the job's
// status.
func TestLogsMergedOrder(t *testing.T) {
	state := hivetest.StateDir(t)
	g := newGates(t, 5)
	script := fmt.Sprintf(`echo out1; read x < %[1]s; echo err1 >&2; read x < %[2]s; echo out2; read x < %[3]s; echo err2 >&2; read x < %[4]s; echo out3; read x < %[5]s; exit 3`,
		g.path(0), g.path(1), g.path(2), g.path(3), g.path(4))
	id, err := hivetest.Run(t, state, "run", "--name", "mix", "--", script)
	if err != nil {
		t.Fatalf("run: %v %s", err, id)
	}
	id = strings.TrimSpace(id)
	want := []string{"out1", "err1", "out2", "err2", "out3"}
	f := hivetest.Command(t, state, "logs", "-f", "mix")
	out, err := f.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	f.Stderr = os.Stderr
	if err := f.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(out)
	for i, w := range want {
		if !sc.Scan() {
			t.Fatalf("logs -f ended before line %d (%q): %v", i, w, sc.Err())
		}
		if sc.Text() != w {
			t.Fatalf("logs -f line %d: %q, want %q", i, sc.Text(), w)
		}
		g.open(i)
	}
	if sc.Scan() {
		t.Errorf("logs -f: extra line %q", sc.Text())
	}
	if code := rc(t, f.Wait()); code != 3 {
		t.Errorf("logs -f of a job that exited 3: exit status %d", code)
	}

	all := strings.Join(want, "\n") + "\n"
	for _, tt := range []struct {
		args []string
		want string
	}{
		{nil, all},
		{[]string{"--stdout"}, "out1\nout2\nout3\n"},
		{[]string{"--stderr"}, "err1\nerr2\n"},
		{[]string{"--tail", "2"}, "err2\nout3\n"},
		{[]string{"--stderr", "--tail", "1"}, "err2\n"},
		{[]string{id}, all}, // by id too
	} {
		args := append([]string{"logs", "mix"}, tt.args...)
		if len(tt.args) == 1 && tt.args[0] == id {
			args = []string{"logs", id}
		}
		got, err := hivetest.Run(t, state, args...)
		if err != nil || got != tt.want {
			t.Errorf("hive %v: %q %v, want %q (exit 0: only -f has the job's status)", args, got, err, tt.want)
		}
	}
	got, err := hivetest.Run(t, state, "logs", "--timestamps", "mix")
	if err != nil || !regexp.MustCompile(`^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z (out|err)\d\n){5}$`).MatchString(got) {
		t.Errorf("logs --timestamps: %q %v", got, err)
	}
	// The order is kept in <id>.idx next to the stream files, which a
	// daemon started later reads.
	if _, err := os.Stat(filepath.Join(state, "bash-tasks", id+".idx")); err != nil {
		t.Errorf("index file: %v", err)
	}
	hivetest.StopState(t, state)
	if got, err := hivetest.Run(t, state, "logs", "mix"); err == nil {
		t.Errorf("logs with no daemon: %q, want an error", got)
	}
	hivetest.StartDaemon(t, state)
	if got, err := hivetest.Run(t, state, "logs", "mix"); err != nil || got != all {
		t.Errorf("logs from a later daemon: %q %v, want %q", got, err, all)
	}
	if out, err := hivetest.Run(t, state, "logs", "--tail", "-1", "mix"); rc(t, err) != 2 || !strings.Contains(out, "--tail") {
		t.Errorf("--tail -1: %q %v, want a usage error naming --tail", out, err)
	}
}

// A failed job's stderr shows by default.
func TestLogsShowFailedJobsStderr(t *testing.T) {
	state := hivetest.StateDir(t)
	out, err := hivetest.Run(t, state, "run", "--", "echo 'make: *** [all] Error 2' >&2; exit 2")
	if err != nil {
		t.Fatal(out, err)
	}
	got, err := hivetest.Run(t, state, "logs", "-f", strings.TrimSpace(out))
	if rc(t, err) != 2 || !strings.Contains(got, "Error 2") {
		t.Errorf("logs -f of a failed make: %q %v, want its stderr and exit 2", got, err)
	}
}

// `hive wait` and `logs -f` exit with the job's status: its code, 128+n
// for a signal n; for several jobs the first failing one's, in argument
// order.
func TestWaitExitCodes(t *testing.T) {
	state := hivetest.StateDir(t)
	g := newGates(t, 1)
	run := func(name, script string) string {
		t.Helper()
		out, err := hivetest.Run(t, state, "run", "--name", name, "--", script)
		if err != nil {
			t.Fatal(out, err)
		}
		return strings.TrimSpace(out)
	}
	run("ok", "true")
	run("three", fmt.Sprintf("read x < %s; exit 3", g.path(0)))
	run("term", "kill -TERM $$")
	w := hivetest.Command(t, state, "wait", "three")
	var wout strings.Builder
	w.Stdout, w.Stderr = &wout, os.Stderr
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	g.open(0) // the job ends only now
	if code := rc(t, w.Wait()); code != 3 || wout.String() != "3\n" {
		t.Errorf("wait three: exit %d, printed %q; want 3", code, wout.String())
	}
	out, err := hivetest.Run(t, state, "wait", "term")
	if code := rc(t, err); code != 128+15 || out != "143\n" {
		t.Errorf("wait of a job ended by SIGTERM: exit %d %q, want 143", code, out)
	}
	out, err = hivetest.Run(t, state, "logs", "-f", "term")
	if code := rc(t, err); code != 143 {
		t.Errorf("logs -f of a job ended by SIGTERM: exit %d %q, want 143", code, out)
	}
	out, err = hivetest.Run(t, state, "wait", "ok", "term", "three")
	if code := rc(t, err); code != 143 || out != "0\n143\n3\n" {
		t.Errorf("wait ok term three: exit %d %q, want 143 (the first failing) and each status", code, out)
	}
	out, err = hivetest.Run(t, state, "wait", "ok")
	if rc(t, err) != 0 || out != "0\n" {
		t.Errorf("wait ok: %q %v", out, err)
	}
	out, err = hivetest.Run(t, state, "wait", "ok", "nosuch")
	if rc(t, err) != 1 || !strings.Contains(out, "nosuch") {
		t.Errorf("wait of an unknown job: %q %v, want exit 1 naming it", out, err)
	}
}

func psJSON(t *testing.T, state string, args ...string) []cliJob {
	t.Helper()
	out, err := hivetest.Run(t, state, append([]string{"ps", "--format", "json"}, args...)...)
	if err != nil {
		t.Fatalf("ps: %v %s", err, out)
	}
	var jobs []cliJob
	if err := json.Unmarshal([]byte(out), &jobs); err != nil {
		t.Fatalf("ps --format json %q: %v", out, err)
	}
	return jobs
}

// A name is reusable once its job ended; the earlier job keeps its
// record, id and output, and the name points to the newest.
func TestNameReuseKeepsHistory(t *testing.T) {
	state := hivetest.StateDir(t)
	first, err := hivetest.Run(t, state, "run", "--name", "build", "--", "echo first; exit 1")
	if err != nil {
		t.Fatal(first, err)
	}
	first = strings.TrimSpace(first)
	hivetest.Run(t, state, "wait", "build")
	second, err := hivetest.Run(t, state, "run", "--name", "build", "--", "echo second")
	if err != nil {
		t.Fatal(second, err)
	}
	second = strings.TrimSpace(second)
	if out, err := hivetest.Run(t, state, "wait", "build"); err != nil || out != "0\n" {
		t.Fatalf("wait build (the newest): %q %v", out, err)
	}
	if first == second {
		t.Fatalf("both jobs have id %s", first)
	}
	jobs := psJSON(t, state, "-a")
	if len(jobs) != 2 || jobs[0].ID != second || jobs[1].ID != first || jobs[0].Name != "build" || jobs[1].Name != "build" {
		t.Fatalf("ps -a: %+v, want both jobs named build, newest first", jobs)
	}
	if *jobs[1].ExitCode != 1 || *jobs[0].ExitCode != 0 {
		t.Errorf("exit codes %v %v", *jobs[1].ExitCode, *jobs[0].ExitCode)
	}
	if out, _ := hivetest.Run(t, state, "logs", "build"); out != "second\n" {
		t.Errorf("logs build: %q, want the newest job's", out)
	}
	if out, _ := hivetest.Run(t, state, "logs", first); out != "first\n" {
		t.Errorf("logs %s: %q, want the first job's output, kept", first, out)
	}
	// A busy name is refused, naming the job that has it.
	g := newGates(t, 1)
	hivetest.Run(t, state, "run", "--name", "build", "--", "read x < "+g.path(0))
	out, err := hivetest.Run(t, state, "run", "--name", "build", "--", "true")
	if err == nil || !strings.Contains(out, `name "build"`) {
		t.Errorf("a busy name: %q %v, want refused", out, err)
	}
	g.open(0)
	hivetest.Run(t, state, "wait", "build")
	if jobs := psJSON(t, state, "-a", "--filter", "name=build"); len(jobs) != 3 {
		t.Errorf("ps -a --filter name=build: %d jobs, want 3", len(jobs))
	}
}

// rm removes ended jobs, records and files, and refuses a running one;
// inspect prints whole records.
func TestRmAndInspect(t *testing.T) {
	state := hivetest.StateDir(t)
	id, err := hivetest.Run(t, state, "run", "--name", "gone", "--", "echo out; echo err >&2")
	if err != nil {
		t.Fatal(id, err)
	}
	id = strings.TrimSpace(id)
	hivetest.Run(t, state, "wait", id)
	out, err := hivetest.Run(t, state, "inspect", "gone")
	if err != nil {
		t.Fatal(out, err)
	}
	var recs []cliJob
	if err := json.Unmarshal([]byte(out), &recs); err != nil || len(recs) != 1 {
		t.Fatalf("inspect: %q %v", out, err)
	}
	r := recs[0]
	if r.ID != id || r.Name != "gone" || r.State != "done" || r.ShellKind != "bash" || r.LooseEnd ||
		r.IndexPath != filepath.Join(state, "bash-tasks", id+".idx") {
		t.Errorf("inspect record: %+v", r)
	}
	files := []string{r.StdoutPath, r.StderrPath, r.IndexPath}
	for _, p := range files {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("before rm: %v", err)
		}
	}

	g := newGates(t, 1)
	busy, _ := hivetest.Run(t, state, "run", "--", "read x < "+g.path(0))
	busy = strings.TrimSpace(busy)
	out, err = hivetest.Run(t, state, "rm", busy)
	if rc(t, err) != 1 || !strings.Contains(out, "is running") || !strings.Contains(out, "only an ended job") {
		t.Errorf("rm of a running job: %q %v, want refused saying why", out, err)
	}
	if out, err := hivetest.Run(t, state, "rm", "gone"); err != nil || out != id+"\n" {
		t.Fatalf("rm gone: %q %v", out, err)
	}
	for _, p := range files {
		if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("after rm, %s: %v, want removed", p, err)
		}
	}
	if jobs := psJSON(t, state, "-a"); len(jobs) != 1 || jobs[0].ID != busy {
		t.Errorf("ps -a after rm: %+v, want only the running job", jobs)
	}
	if out, err := hivetest.Run(t, state, "inspect", id); rc(t, err) != 1 || !strings.Contains(out, "no such job") {
		t.Errorf("inspect of a removed job: %q %v", out, err)
	}
	g.open(0)
	hivetest.Run(t, state, "wait", busy)
	if out, err := hivetest.Run(t, state, "rm", busy); err != nil || out != busy+"\n" {
		t.Errorf("rm once it ended: %q %v", out, err)
	}
}

// ps: -q, --filter state=, a bad filter; kill of several jobs.
func TestPsAndKillSeveral(t *testing.T) {
	state := hivetest.StateDir(t)
	a, _ := hivetest.Run(t, state, "run", "--name", "a", "--", "sleep 60")
	b, _ := hivetest.Run(t, state, "run", "--name", "b", "--", "sleep 60")
	hivetest.Run(t, state, "run", "--name", "c", "--", "true")
	hivetest.Run(t, state, "wait", "c")
	out, err := hivetest.Run(t, state, "ps", "-q")
	if err != nil || out != b+a {
		t.Errorf("ps -q: %q %v, want the running ids, newest first", out, err)
	}
	if jobs := psJSON(t, state, "--filter", "state=done"); len(jobs) != 1 || jobs[0].Name != "c" {
		t.Errorf("--filter state=done: %+v", jobs)
	}
	out, err = hivetest.Run(t, state, "ps", "-a")
	if err != nil || !regexp.MustCompile(`(?m)^ID\s+NAME\s+STATE\s+EXIT\s+CREATED\s+DURATION\s+MEM\s+CPU\s+CMD$`).MatchString(out) ||
		!regexp.MustCompile(`(?m)^[0-9a-f]{8}\s+c\s+done\s+0\s+(Less than a second|\d+ seconds?) ago\s+\d+ms\s+(\d+(\.\d)?[KMG]?i?B|-)\s+\d+ms\s+true$`).MatchString(out) {
		t.Errorf("ps -a table: %q %v", out, err)
	}
	for _, bad := range [][]string{{"--filter", "state=sleeping"}, {"--filter", "color=red"}, {"--format", "yaml"}} {
		if out, err := hivetest.Run(t, state, append([]string{"ps"}, bad...)...); err == nil || !strings.Contains(out, strings.SplitN(bad[1], "=", 2)[0]) {
			t.Errorf("ps %v: %q %v, want an error naming it", bad, out, err)
		}
	}
	out, err = hivetest.Run(t, state, "kill", "a", "b", "c")
	if err != nil || strings.Count(out, "SIGINT sent") != 2 || !strings.Contains(out, "had already ended") {
		t.Errorf("kill a b c: %q %v", out, err)
	}
	out, err = hivetest.Run(t, state, "wait", "a", "b")
	if rc(t, err) != 130 || out != "130\n130\n" {
		t.Errorf("wait of SIGINTed jobs: %q %v", out, err)
	}
}

// Jobs started from the CLI raise no loose end unless --notify; the
// agent still lists them.
func TestCLIJobsNotify(t *testing.T) {
	state := hivetest.StateDir(t)
	s := hivetest.Connect(t, state, t.TempDir())
	quiet, _ := hivetest.Run(t, state, "run", "--", "echo quiet")
	quiet = strings.TrimSpace(quiet)
	loud, _ := hivetest.Run(t, state, "run", "--notify", "--", "echo loud")
	loud = strings.TrimSpace(loud)
	hivetest.Run(t, state, "wait", quiet, loud)
	if _, _, ok := todoFor(s, quiet); ok {
		t.Errorf("a CLI job without --notify raised a loose end")
	}
	if _, summary, ok := todoFor(s, loud); !ok || !strings.Contains(summary, "exit 0") {
		t.Errorf("a CLI job with --notify: todo %v %q, want its completion", ok, summary)
	}
	var list struct {
		Jobs []struct {
			JobID string `json:"job_id"`
		} `json:"jobs"`
	}
	s.MustCall("terminal_job_list", map[string]any{}, &list)
	seen := map[string]bool{}
	for _, j := range list.Jobs {
		seen[j.JobID] = true
	}
	if !seen[quiet] || !seen[loud] {
		t.Errorf("terminal_job_list %+v: want both CLI jobs", list)
	}
	if r := psJSON(t, state, "-a"); len(r) != 2 || r[0].LooseEnd != true || r[1].LooseEnd != false {
		t.Errorf("ps records: %+v, want loose_end true for --notify only", r)
	}
}

// todo, inbox and wake follow ps's conventions: -q for ids, --format
// json (or --json) for scripts.
func TestProducerOutputConventions(t *testing.T) {
	state := hivetest.StateDir(t)
	id, err := hivetest.Run(t, state, "todo", "upsert", "-q", "--subsystem", "ci", "--key", "k1", "--summary", "red")
	if err != nil || !regexp.MustCompile(`^\d+\n$`).MatchString(id) {
		t.Fatalf("todo upsert -q: %q %v", id, err)
	}
	if out, err := hivetest.Run(t, state, "todo", "ls", "-q"); err != nil || out != id {
		t.Errorf("todo ls -q: %q %v, want %q", out, err, id)
	}
	out, err := hivetest.Run(t, state, "todo", "ls", "--format", "json")
	var todos struct {
		Todos []struct {
			Key string `json:"key"`
		} `json:"todos"`
	}
	if err != nil || json.Unmarshal([]byte(out), &todos) != nil || len(todos.Todos) != 1 || todos.Todos[0].Key != "k1" {
		t.Errorf("todo ls --format json: %q %v", out, err)
	}
	mid, err := hivetest.Run(t, state, "wake", "-q", "--from", "ci", "hello")
	if err != nil || !regexp.MustCompile(`^\d+\n$`).MatchString(mid) {
		t.Fatalf("wake -q: %q %v", mid, err)
	}
	if out, err := hivetest.Run(t, state, "inbox", "ls", "-q"); err != nil || out != mid {
		t.Errorf("inbox ls -q: %q %v, want %q", out, err, mid)
	}
	if out, err := hivetest.Run(t, state, "inbox", "ls", "--format", "json"); err != nil || !strings.Contains(out, `"preview":"hello"`) {
		t.Errorf("inbox ls --format json: %q %v", out, err)
	}
	if out, err := hivetest.Run(t, state, "todo", "clear", "-q", "--subsystem", "ci", "--key", "k1"); err != nil || out != "" {
		t.Errorf("todo clear -q: %q %v", out, err)
	}
	if out, err := hivetest.Run(t, state, "todo", "ls", "--format", "yaml"); rc(t, err) != 2 || !strings.Contains(out, "--format") {
		t.Errorf("todo ls --format yaml: %q %v, want a usage error", out, err)
	}
}
