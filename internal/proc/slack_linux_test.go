package proc

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// With HIVE_TEST_SLACK_CHILD=1 the test binary stands for a daemon: it
// prints its pid, timer slack and EnvChildSlack as it starts (once per
// image: an exec again prints a second line), calls SlackTimers, and
// prints the slack it runs with and the one its children would get.
func init() {
	if os.Getenv("HIVE_TEST_SLACK_CHILD") != "1" {
		return
	}
	cur, _ := unix.PrctlRetInt(unix.PR_GET_TIMERSLACK, 0, 0, 0, 0)
	env, _ := os.LookupEnv(EnvChildSlack)
	fmt.Printf("start %d %d %q\n", os.Getpid(), cur, env)
	err := SlackTimers()
	cur, _ = unix.PrctlRetInt(unix.PR_GET_TIMERSLACK, 0, 0, 0, 0)
	fmt.Printf("slack %d %d %v\n", cur, childSlack.Load(), err)
	os.Exit(0)
}

// slackChild runs the stand-in daemon through start and returns its
// lines.
func slackChild(t *testing.T, start func(*exec.Cmd) error) []string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self, "-test.run=^$")
	cmd.Env = append(os.Environ(), "HIVE_TEST_SLACK_CHILD=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := start(cmd); err != nil {
		t.Fatal(err)
	}
	var lines []string
	for sc := bufio.NewScanner(out); sc.Scan(); {
		lines = append(lines, sc.Text())
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("the stand-in daemon: %v (said %q)", err, lines)
	}
	return lines
}

// A daemon started with StartDaemon runs with HiveSlack from its start
// and does not execute itself again; its children would get the slack of
// the process that started it. Started plainly, it executes itself again
// once (the same pid) to the same end. This process's own slack is as
// it was.
func TestStartDaemonGivesTheSlack(t *testing.T) {
	mine, err := unix.PrctlRetInt(unix.PR_GET_TIMERSLACK, 0, 0, 0, 0)
	if err != nil {
		t.Skipf("no timer slack here: %v", err)
	}
	if mine >= HiveSlack {
		t.Skipf("this process's timer slack is %d ns already", mine)
	}
	want := fmt.Sprintf("slack %d %d <nil>", HiveSlack, mine)

	lines := slackChild(t, StartDaemon)
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "start ") || lines[1] != want {
		t.Fatalf("started with StartDaemon, it said %q; want one start (no exec again), then %q", lines, want)
	}
	var pid, cur int
	var env string
	if _, err := fmt.Sscanf(lines[0], "start %d %d %q", &pid, &cur, &env); err != nil {
		t.Fatalf("%q: %v", lines[0], err)
	}
	if cur != HiveSlack || env != fmt.Sprint(mine) {
		t.Errorf("it started with slack %d and %s=%q; want %d and %q", cur, EnvChildSlack, env, HiveSlack, fmt.Sprint(mine))
	}

	lines = slackChild(t, func(cmd *exec.Cmd) error { return cmd.Start() })
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "start ") || !strings.HasPrefix(lines[1], "start ") || lines[2] != want {
		t.Fatalf("started plainly, it said %q; want two starts (it executes itself again), then %q", lines, want)
	}
	var pid2 int
	fmt.Sscanf(lines[1], "start %d", &pid2)
	fmt.Sscanf(lines[0], "start %d", &pid)
	if pid != pid2 {
		t.Errorf("executed again as pid %d, was %d", pid2, pid)
	}

	if now, _ := unix.PrctlRetInt(unix.PR_GET_TIMERSLACK, 0, 0, 0, 0); now != mine {
		t.Errorf("this process's slack after StartDaemon: %d, was %d", now, mine)
	}
}
