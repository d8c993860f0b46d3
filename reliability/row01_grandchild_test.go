package reliability

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// Row 1: a grandchild that keeps stdout open (`sh -c 'sleep 3600 & echo
// x'`) never holds up its job's end, and is not left behind.
func TestRow01GrandchildHoldsStdout(t *testing.T) {
	n := count(20, 200)
	dir := newStateDir(t)
	d := startDaemon(t, dir)
	base := d.Settled()
	s := d.MCP()
	var slowest time.Duration
	for i := range n {
		var st task
		t0 := time.Now()
		s.MustCall("run", map[string]any{"cmd": fmt.Sprintf("sh -c 'sleep 3600 & echo x%d'", i), "wait_seconds": 20}, &st)
		el := time.Since(t0)
		slowest = max(slowest, el)
		if st.Status != "done" || st.ExitCode == nil || *st.ExitCode != 0 || strings.TrimSpace(st.StdoutTail) != fmt.Sprintf("x%d", i) {
			t.Fatalf("job %d: %+v", i, st)
		}
	}
	s.Close()
	survivors := len(marked(dir))
	figure(t, 1, "grandchild holds stdout ×%d: all done exit 0, slowest answer %v, %d survivors", n, slowest.Round(time.Millisecond), survivors)
	if survivors != 0 {
		t.Errorf("%d processes of the jobs survived", survivors)
	}
	if slowest > 5*time.Second {
		t.Errorf("slowest job took %v: a grandchild held it up", slowest)
	}
	d.CheckBaseline(base)
}
