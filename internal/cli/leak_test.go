package cli

import (
	"errors"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// hive logs, in-process: -f follows the job to its end and exits with its
// status; without -f it prints what there is. Neither leaves a goroutine
// behind (goleak), though its ctx never ends.
func TestLogsLeavesNoGoroutine(t *testing.T) {
	dir := inProcessDaemon(t)
	id, _, err := cliRun(dir, "", "run", "--", "sh", "-c", "echo out; echo err >&2; exit 3")
	if err != nil {
		t.Fatalf("hive run: %v", err)
	}
	id = strings.TrimSpace(id)
	before := goleak.IgnoreCurrent()
	out, _, err := cliRun(dir, "", "logs", "-f", id)
	var exit *ExitError
	if !errors.As(err, &exit) || exit.Code != 3 || out != "out\nerr\n" && out != "err\nout\n" {
		t.Errorf("hive logs -f %s: %q %v, want both lines and exit status 3", id, out, err)
	}
	if out2, _, err := cliRun(dir, "", "logs", id); err != nil || out2 != out {
		t.Errorf("hive logs %s: %q %v, want %q", id, out2, err, out)
	}
	goleak.VerifyNone(t, before)
}
