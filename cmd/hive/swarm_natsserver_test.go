package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/hivetools/hive/internal/hivetest"
)

// natsServerModule is the module the nats-server binary is built from:
// the one go.mod has for the embedded server (hive hub).
const natsServerModule = "github.com/nats-io/nats-server/v2"

// natsServerBin finds a nats-server executable of the version go.mod
// has: on PATH, else in $(go env GOPATH)/bin, where .ci/run installs it
// (`go install github.com/nats-io/nats-server/v2` in this module). It
// skips the test when there is none of that version (and fails it under
// CI, which installs it).
func natsServerBin(t *testing.T) string {
	t.Helper()
	want := ""
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == natsServerModule {
				want = strings.TrimPrefix(d.Version, "v")
				if d.Replace != nil {
					want = strings.TrimPrefix(d.Replace.Version, "v")
				}
			}
		}
	}
	if want == "" {
		t.Fatalf("the test binary's build info names no %s: which version to look for?", natsServerModule)
	}
	var cands []string
	if p, err := exec.LookPath("nats-server"); err == nil {
		cands = append(cands, p)
	}
	if out, err := exec.Command("go", "env", "GOPATH").Output(); err == nil {
		for _, dir := range filepath.SplitList(strings.TrimSpace(string(out))) {
			cands = append(cands, filepath.Join(dir, "bin", "nats-server"))
		}
	}
	var seen []string
	for _, p := range cands {
		out, err := exec.Command(p, "--version").Output()
		if err != nil {
			continue
		}
		got := strings.TrimPrefix(strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(string(out)), "nats-server:")), "v")
		if got == want {
			return p
		}
		seen = append(seen, p+" is "+got)
	}
	why := fmt.Sprintf("no nats-server %s on PATH or in $(go env GOPATH)/bin (seen: %v); `go install %s` in this module installs it", want, seen, natsServerModule)
	if os.Getenv("CI") != "" {
		t.Fatalf("%s (.ci/run does it)", why)
	}
	t.Skip(why)
	return ""
}

// natsServerProc is a nats-server process a test started: JetStream on,
// its store in a dir of the test, on loopback.
type natsServerProc struct {
	t              *testing.T
	bin, dir, auth string
	Addr           string // host:port, fixed by the first start
	pid            int
	done           chan struct{}
}

// listenRE finds the address in the server's log line saying where it
// takes clients.
var listenRE = regexp.MustCompile(`Listening for client connections on (\S+)`)

// startNATSServer starts nats-server -js with its store in a temp dir
// and token auth, on a free loopback port, and returns once it is ready.
// It is stopped (and waited for) when the test ends.
func startNATSServer(t *testing.T, bin, token string) *natsServerProc {
	n := &natsServerProc{t: t, bin: bin, dir: t.TempDir(), auth: token}
	n.start("-1")
	return n
}

// start runs the server on port (-1: a free one) and waits for its
// "ready" line.
func (n *natsServerProc) start(port string) {
	t := n.t
	t.Helper()
	cmd := exec.Command(n.bin, "-js", "-sd", n.dir, "-a", "127.0.0.1", "-p", port, "-n", "hive-test", "--auth", n.auth)
	errs, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", n.bin, err)
	}
	n.pid, n.done = cmd.Process.Pid, make(chan struct{})
	ready := make(chan string, 1)
	log := make(chan string, 1) // its log so far, if it ends before ready
	go func() {
		defer close(n.done)
		var all strings.Builder
		addr, told := "", false
		sc := bufio.NewScanner(errs)
		for sc.Scan() {
			line := sc.Text()
			if all.Len() < 64<<10 {
				all.WriteString(line + "\n")
			}
			if m := listenRE.FindStringSubmatch(line); m != nil {
				addr = m[1]
			}
			if strings.Contains(line, "Server is ready") && !told {
				ready <- addr
				told = true
			}
		}
		cmd.Wait()
		log <- all.String()
	}()
	t.Cleanup(n.stop)
	select {
	case addr := <-ready:
		if n.Addr == "" {
			n.Addr = addr
		} else if addr != n.Addr {
			t.Fatalf("nats-server listens on %s after its restart, on %s before", addr, n.Addr)
		}
	case l := <-log:
		t.Fatalf("nats-server ended before it was ready:\n%s", l)
	case <-time.After(20 * time.Second):
		t.Fatal("nats-server not ready in 20 s")
	}
}

// URL is the URL the daemons connect to.
func (n *natsServerProc) URL() string { return "nats://" + n.Addr }

// stop interrupts the server (it shuts down cleanly, its store kept) and
// waits for it to end.
func (n *natsServerProc) stop() {
	select {
	case <-n.done:
		return
	default:
	}
	if err := hivetest.Signal(n.pid, os.Interrupt); err != nil {
		hivetest.Kill(n.pid) // Windows has no SIGINT to send
	}
	<-n.done
}

// restart starts the server again on the same address and store.
func (n *natsServerProc) restart() {
	n.t.Helper()
	_, port, _ := strings.Cut(n.Addr, ":")
	n.start(port)
}

// TestSwarmNATSServer runs the swarm's scenario (three daemons, the
// directory, a status, a job's end, a wake, the server stopped and
// started again mid-run) against a separate nats-server process of the
// version go.mod has, with token auth, as a swarm across hosts has it.
func TestSwarmNATSServer(t *testing.T) {
	bin := natsServerBin(t)
	token := "t0ken-of-the-test"
	n := startNATSServer(t, bin, token)
	tokenFile := filepath.Join(t.TempDir(), "nats-token")
	if err := os.WriteFile(tokenFile, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// Without the token the server refuses the CLI: auth is on.
	if out, err := hivetest.Run(t, hivetest.StateDir(t), "swarm", "ls", "--nats", n.URL(), "--swarm", "farm"); err == nil ||
		!strings.Contains(strings.ToLower(out), "authorization") {
		t.Fatalf("hive swarm ls without the token: %v, %q; want an authorization error", err, out)
	}
	swarmScenario(t, n.URL(), tokenFile, n.stop, n.restart)
}
