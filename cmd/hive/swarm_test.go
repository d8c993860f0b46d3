package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hivetools/hive/internal/hivetest"
	"github.com/hivetools/hive/internal/proc"
)

// hubProc is a `hive hub` process a test started.
type hubProc struct {
	URL, Addr string
	pid       int
	done      chan struct{}
}

// startHub starts `hive hub` on state dir state, listening on addr, and
// returns once it printed its URL. It is stopped (SIGTERM, then waited
// for) when the test ends, unless stop did it before.
func startHub(t *testing.T, state, addr string) *hubProc {
	t.Helper()
	cmd := hivetest.Command(t, state, "hub", "--listen", addr)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start hive hub: %v", err)
	}
	h := &hubProc{pid: cmd.Process.Pid, done: make(chan struct{})}
	line := make(chan string, 1)
	go func() {
		defer close(h.done)
		r := bufio.NewReader(out)
		s, _ := r.ReadString('\n')
		line <- strings.TrimSpace(s)
		io.Copy(io.Discard, r)
		cmd.Wait()
	}()
	t.Cleanup(h.stop)
	select {
	case h.URL = <-line:
	case <-time.After(20 * time.Second):
		t.Fatal("hive hub printed no URL in 20 s")
	}
	u, err := url.Parse(h.URL)
	if err != nil || u.Host == "" {
		t.Fatalf("hive hub printed %q, not a URL", h.URL)
	}
	h.Addr = u.Host
	return h
}

// stop ends the hub and waits for it.
func (h *hubProc) stop() {
	select {
	case <-h.done:
		return
	default:
	}
	hivetest.Signal(h.pid, syscall.SIGTERM)
	<-h.done
}

// swarmAgent is what `hive swarm ls --format json` tells of an agent.
type swarmAgent struct {
	Name        string `json:"name"`
	Hive        string `json:"hive"`
	Swarm       string `json:"swarm"`
	StatusText  string `json:"status_text"`
	JobsRunning int    `json:"jobs_running"`
}

type swarmNotice struct {
	Agent string `json:"agent"`
	Kind  string `json:"kind"`
	Job   *struct {
		ID             string `json:"id"`
		Cmd            string `json:"cmd"`
		State          string `json:"state"`
		ExitCode       *int   `json:"exit_code"`
		SemanticStatus string `json:"semantic_status"`
	} `json:"job"`
}

// swarmEvents runs `hive swarm events --format json ARGS` on state.
func swarmEvents(t *testing.T, state string, args ...string) ([]swarmNotice, error) {
	t.Helper()
	out, err := hivetest.Run(t, state, append([]string{"swarm", "events", "--format", "json"}, args...)...)
	if err != nil {
		return nil, fmt.Errorf("hive swarm events: %v: %s", err, out)
	}
	var ns []swarmNotice
	dec := json.NewDecoder(strings.NewReader(out))
	for dec.More() {
		var n swarmNotice
		if err := dec.Decode(&n); err != nil {
			return nil, fmt.Errorf("hive swarm events: %v in %q", err, out)
		}
		ns = append(ns, n)
	}
	return ns, nil
}

// endedNotice finds the job_ended notice of agent whose command is cmd.
func endedNotice(ns []swarmNotice, agent, cmd string) (swarmNotice, bool) {
	for _, n := range ns {
		if n.Agent == agent && n.Kind == "job_ended" && n.Job != nil && n.Job.Cmd == cmd {
			return n, true
		}
	}
	return swarmNotice{}, false
}

// TestSwarm: three daemons on one hub see each other in `hive swarm ls`
// and through get_agent_meta; a status set on one shows on another; a
// job's end on one is in `hive swarm events` of another; with the hub
// stopped, run still answers, and its notices arrive once the hub is
// back; a wake sent then arrives.
func TestSwarm(t *testing.T) {
	hubState := hivetest.StateDir(t)
	h := startHub(t, hubState, "127.0.0.1:0")
	swarmScenario(t, h.URL, "", h.stop, func() { startHub(t, hubState, h.Addr) })
}

// swarmScenario runs three daemons as three agents of a swarm on the
// NATS server at natsURL (with the token in tokenFile, if not ""), and
// checks what the "done when" asks of them: each sees the others
// (hive swarm ls, get_agent_meta), a status and a job's end reach the
// others, the server stopped (stop) leaves run answering and its notices
// are published once it is back (start, on the same address and store),
// and a wake sent then arrives.
func swarmScenario(t *testing.T, natsURL, tokenFile string, stop, start func()) {
	names := []string{"ant", "bee", "cow"}
	states := map[string]string{}
	for _, n := range names {
		states[n] = hivetest.StateDir(t)
		args := []string{"--nats", natsURL, "--swarm", "farm", "--name", n, "--hive", "host-" + n}
		toml := fmt.Sprintf("nats = %q\nswarm = \"farm\"\n", natsURL)
		if tokenFile != "" {
			args = append(args, "--nats-token-file", tokenFile)
			toml += fmt.Sprintf("nats_token_file = %q\n", tokenFile)
		}
		hivetest.StartDaemon(t, states[n], args...)
		// The CLI finds the swarm in hive.toml, as a user's would.
		if err := os.WriteFile(states[n]+"/hive.toml", []byte(toml), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range names {
		hivetest.Eventually(t, 20*time.Second, n+" lists the three agents", func() error {
			out, err := hivetest.Run(t, states[n], "swarm", "ls", "--format", "json")
			if err != nil {
				return fmt.Errorf("%v: %s", err, out)
			}
			var ls struct {
				Swarm  string       `json:"swarm"`
				Agents []swarmAgent `json:"agents"`
			}
			if err := json.Unmarshal([]byte(out), &ls); err != nil {
				return fmt.Errorf("%v: %s", err, out)
			}
			var got []string
			for _, a := range ls.Agents {
				if a.Swarm != "farm" || a.Hive != "host-"+a.Name {
					return fmt.Errorf("agent %+v: want swarm farm, hive host-%s", a, a.Name)
				}
				got = append(got, a.Name)
			}
			if strings.Join(got, ",") != "ant,bee,cow" {
				return fmt.Errorf("agents %v, want ant, bee, cow", got)
			}
			return nil
		})
	}
	table, err := hivetest.Run(t, states["ant"], "swarm", "ls")
	if err != nil || !strings.Contains(table, "NAME") || !strings.Contains(table, "host-cow") {
		t.Fatalf("hive swarm ls: %v\n%s", err, table)
	}

	ant := hivetest.Connect(t, states["ant"], t.TempDir())
	bee := hivetest.Connect(t, states["bee"], t.TempDir())
	cow := hivetest.Connect(t, states["cow"], t.TempDir())
	type meta struct {
		Name       string `json:"name"`
		Running    bool   `json:"running"`
		StatusText string `json:"status_text"`
		HiveName   string `json:"hive_name"`
		SwarmName  string `json:"swarm_name"`
	}
	var m meta
	ant.MustCall("get_agent_meta", map[string]any{"name": "cow"}, &m)
	if m.Name != "cow" || !m.Running || m.HiveName != "host-cow" || m.SwarmName != "farm" {
		t.Fatalf("get_agent_meta(cow) on ant: %+v, want cow running on host-cow in farm", m)
	}
	ant.MustCall("get_agent_meta", map[string]any{}, &m)
	if m.Name != "ant" || m.HiveName != "host-ant" || m.SwarmName != "farm" {
		t.Fatalf("get_agent_meta() on ant: %+v, want ant on host-ant in farm", m)
	}

	// A status set on bee shows on the others.
	set := time.Now()
	bee.MustCall("set_status", map[string]any{"text": "building the docs"}, nil)
	for _, s := range []*hivetest.Session{ant, cow} {
		hivetest.Eventually(t, 10*time.Second, "bee's status on another agent", func() error {
			var m meta
			s.MustCall("get_agent_meta", map[string]any{"name": "bee"}, &m)
			if m.StatusText != "building the docs" {
				return fmt.Errorf("bee's status %q", m.StatusText)
			}
			return nil
		})
	}
	t.Logf("bee's status reached both others after %v", time.Since(set).Round(time.Millisecond))

	// A job's end on cow is in the notices ant reads.
	ended := time.Now()
	cow.MustCall("run", map[string]any{"cmd": "exit 3"}, nil)
	hivetest.Eventually(t, 10*time.Second, "cow's job end in ant's swarm events", func() error {
		ns, err := swarmEvents(t, states["ant"], "--agent", "cow")
		if err != nil {
			return err
		}
		n, ok := endedNotice(ns, "cow", "exit 3")
		if !ok {
			return fmt.Errorf("no job_ended of cow's `exit 3` in %d notices", len(ns))
		}
		if n.Job.ExitCode == nil || *n.Job.ExitCode != 3 || n.Job.SemanticStatus != "error" {
			return fmt.Errorf("job_ended %+v: want exit 3, semantic status error", *n.Job)
		}
		return nil
	})
	t.Logf("cow's job end was in ant's swarm events after %v", time.Since(ended).Round(time.Millisecond))

	// NATS down: run answers; its notices arrive when NATS is back.
	stop()
	var r struct {
		Status   string `json:"status"`
		ExitCode *int   `json:"exit_code"`
	}
	cow.MustCall("run", map[string]any{"cmd": "echo while-away", "timeout_secs": 10}, &r)
	if r.Status != "done" || r.ExitCode == nil || *r.ExitCode != 0 {
		t.Fatalf("run with NATS away: %+v, want done, exit 0", r)
	}
	bee.MustCall("set_status", map[string]any{"text": "offline edit"}, nil)
	start()
	hivetest.Eventually(t, 20*time.Second, "the notices made while NATS was away", func() error {
		ns, err := swarmEvents(t, states["ant"])
		if err != nil {
			return err
		}
		if _, ok := endedNotice(ns, "cow", "echo while-away"); !ok {
			return fmt.Errorf("no job_ended of cow's `echo while-away` in %d notices", len(ns))
		}
		return nil
	})
	hivetest.Eventually(t, 20*time.Second, "bee's status set while NATS was away", func() error {
		var m meta
		if text, isErr, err := ant.TryCall("get_agent_meta", map[string]any{"name": "bee"}, &m); err != nil {
			return hivetest.Abort(err)
		} else if isErr { // ant may not have joined again yet
			return fmt.Errorf("get_agent_meta: %s", text)
		}
		if m.StatusText != "offline edit" {
			return fmt.Errorf("bee's status %q", m.StatusText)
		}
		return nil
	})

	// A wake over the server that came back: cow's durable consumer
	// outlived the stop.
	if out, err := hivetest.Run(t, states["ant"], "wake", "--to", "cow", "your turn"); err != nil {
		t.Fatalf("hive wake --to cow: %v: %s", err, out)
	}
	hivetest.Eventually(t, 10*time.Second, "ant's message in cow's inbox", func() error {
		ms, err := inboxMessages(t, states["cow"])
		if err != nil {
			return err
		}
		if len(ms) != 1 || ms[0].From != "agent:ant" || ms[0].Preview != "your turn" {
			return fmt.Errorf("cow's inbox %+v, want one message from agent:ant", ms)
		}
		return nil
	})
}

// A daemon started while NATS is down serves at once, and joins the
// swarm when NATS comes up.
func TestSwarmJoinsLate(t *testing.T) {
	hubState := hivetest.StateDir(t)
	h := startHub(t, hubState, "127.0.0.1:0") // to find a free port
	h.stop()
	state := hivetest.StateDir(t)
	hivetest.StartDaemon(t, state, "--nats", h.URL, "--swarm", "late", "--name", "owl")
	s := hivetest.Connect(t, state, t.TempDir())
	var r struct {
		Status string `json:"status"`
	}
	s.MustCall("run", map[string]any{"cmd": "true"}, &r)
	if r.Status != "done" {
		t.Fatalf("run with NATS down: status %q, want done", r.Status)
	}
	if out, err := hivetest.Run(t, state, "swarm", "ls", "--nats", h.URL, "--swarm", "late"); err == nil {
		t.Fatalf("hive swarm ls with NATS down: no error, out %q", out)
	}
	startHub(t, hubState, h.Addr)
	hivetest.Eventually(t, 20*time.Second, "owl in the swarm", func() error {
		out, err := hivetest.Run(t, state, "swarm", "ls", "--format", "json", "--nats", h.URL, "--swarm", "late")
		if err != nil {
			return fmt.Errorf("%v: %s", err, out)
		}
		if !strings.Contains(out, `"name":"owl"`) {
			return fmt.Errorf("no owl in %s", out)
		}
		return nil
	})
	hivetest.Eventually(t, 20*time.Second, "owl's notices of its start and its job", func() error {
		ns, err := swarmEvents(t, state, "--nats", h.URL, "--swarm", "late", "--agent", "owl")
		if err != nil {
			return err
		}
		kinds := map[string]bool{}
		for _, n := range ns {
			kinds[n.Kind] = true
		}
		if !kinds["daemon_started"] || !kinds["job_ended"] {
			return fmt.Errorf("notices of owl: %v, want daemon_started and job_ended", kinds)
		}
		return nil
	})
}

// Bad swarm settings are usage errors that name the flag.
func TestSwarmBadFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--nats", "nats://127.0.0.1:1"}, "--swarm"},
		{[]string{"--nats", "nats://127.0.0.1:1", "--swarm", "a.b"}, "--swarm"},
		{[]string{"--nats", "nats://127.0.0.1:1", "--swarm", "s", "--name", "a.b"}, "--name"},
		{[]string{"--swarm", "s"}, "--nats"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			state := hivetest.StateDir(t)
			out, err := hivetest.Run(t, state, append([]string{"daemon"}, tc.args...)...)
			if err == nil || !strings.Contains(out, tc.want) {
				t.Fatalf("hive daemon %v: %v, %q; want a usage error naming %s", tc.args, err, out, tc.want)
			}
		})
	}
}

// inboxMessages runs `hive inbox ls --json` on state.
func inboxMessages(t *testing.T, state string) ([]struct{ From, Preview string }, error) {
	t.Helper()
	out, err := hivetest.Run(t, state, "inbox", "ls", "--json")
	if err != nil {
		return nil, fmt.Errorf("hive inbox ls: %v: %s", err, out)
	}
	var ls struct {
		Messages []struct{ From, Preview string } `json:"messages"`
	}
	if err := json.Unmarshal([]byte(out), &ls); err != nil {
		return nil, fmt.Errorf("hive inbox ls: %v in %q", err, out)
	}
	return ls.Messages, nil
}

// A wake sent to a stopped agent arrives once, from its sender, when it
// comes back.
func TestSwarmWake(t *testing.T) {
	h := startHub(t, hivetest.StateDir(t), "127.0.0.1:0")
	ant, bee := hivetest.StateDir(t), hivetest.StateDir(t)
	args := func(name string) []string { return []string{"--nats", h.URL, "--swarm", "hill", "--name", name} }
	hivetest.StartDaemon(t, ant, args("ant")...)
	b := hivetest.StartDaemon(t, bee, args("bee")...)
	for _, st := range []string{ant, bee} {
		hivetest.Eventually(t, 20*time.Second, "both joined", func() error {
			out, err := hivetest.Run(t, st, "swarm", "ls", "--format", "json", "--nats", h.URL, "--swarm", "hill")
			if err != nil || !strings.Contains(out, `"name":"ant"`) || !strings.Contains(out, `"name":"bee"`) {
				return fmt.Errorf("%v: %s", err, out)
			}
			return nil
		})
	}
	if err := b.Stop(); err != nil {
		t.Fatalf("stop bee: %v", err)
	}
	if out, err := hivetest.Run(t, ant, "wake", "--to", "bee", "the build is green"); err != nil {
		t.Fatalf("hive wake --to bee: %v: %s", err, out)
	}
	if out, err := hivetest.Run(t, ant, "wake", "--to", "bee", "--from", "ci", "x"); err == nil {
		t.Fatalf("hive wake --to bee --from ci: no error, out %q", out)
	}
	hivetest.StartDaemon(t, bee, args("bee")...)
	hivetest.Eventually(t, 20*time.Second, "the message in bee's inbox", func() error {
		ms, err := inboxMessages(t, bee)
		if err != nil {
			return err
		}
		if len(ms) != 1 || ms[0].From != "agent:ant" || ms[0].Preview != "the build is green" {
			return fmt.Errorf("bee's inbox %+v, want one message from agent:ant", ms)
		}
		return nil
	})
	// A second message comes after the first: by then the first came
	// once.
	if out, err := hivetest.Run(t, ant, "wake", "--to", "bee", "second"); err != nil {
		t.Fatalf("hive wake --to bee: %v: %s", err, out)
	}
	hivetest.Eventually(t, 20*time.Second, "the second message in bee's inbox", func() error {
		ms, err := inboxMessages(t, bee)
		if err != nil {
			return err
		}
		if len(ms) != 2 || ms[0].Preview != "the build is green" || ms[1].Preview != "second" {
			return fmt.Errorf("bee's inbox %+v, want the first message once, then the second", ms)
		}
		return nil
	})
}

// An agent whose daemon died (no stop, no goodbye) drops out of the
// directory once silent for its entry's life (30 s): the bucket's TTL,
// no sweeper.
func TestSwarmSilentDropsOut(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for the 30 s life of a directory entry")
	}
	h := startHub(t, hivetest.StateDir(t), "127.0.0.1:0")
	gone, stays := hivetest.StateDir(t), hivetest.StateDir(t)
	d := hivetest.StartDaemon(t, gone, "--nats", h.URL, "--swarm", "moor", "--name", "gone", "--hold-jobs=false")
	// Killed with -9 below, it leaves its job cgroups (a daemon that runs
	// its jobs itself makes them), which only a next hive of its state dir
	// would remove: gone at the end.
	t.Cleanup(func() { proc.EndLeftJobCgroups(gone, time.Second) })
	hivetest.StartDaemon(t, stays, "--nats", h.URL, "--swarm", "moor", "--name", "stays")
	ls := func() (string, error) {
		out, err := hivetest.Run(t, stays, "swarm", "ls", "--format", "json", "--nats", h.URL, "--swarm", "moor")
		if err != nil {
			return "", fmt.Errorf("%v: %s", err, out)
		}
		return out, nil
	}
	hivetest.Eventually(t, 20*time.Second, "both in the directory", func() error {
		out, err := ls()
		if err == nil && (!strings.Contains(out, `"name":"gone"`) || !strings.Contains(out, `"name":"stays"`)) {
			err = fmt.Errorf("directory %s", out)
		}
		return err
	})
	d.Kill()
	killed := time.Now()
	hivetest.Eventually(t, 60*time.Second, "the killed agent out of the directory", func() error {
		out, err := ls()
		if err == nil && strings.Contains(out, `"name":"gone"`) {
			err = fmt.Errorf("directory still has gone: %s", out)
		}
		return err
	})
	if since := time.Since(killed); since < 20*time.Second {
		t.Errorf("gone dropped out %v after its kill: before its entry's life (30 s after its last heartbeat, at most 10 s before the kill)", since)
	}
	out, err := ls()
	if err != nil || !strings.Contains(out, `"name":"stays"`) {
		t.Errorf("the live agent left the directory too: %v %s", err, out)
	}
	t.Logf("the killed agent dropped out after %v", time.Since(killed).Round(time.Second))
}
