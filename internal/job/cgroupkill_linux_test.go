package job

import (
	"strconv"
	"testing"
	"time"

	"github.com/hivetools/hive/internal/proc"
)

// A job whose cgroup was written cgroup.kill (by itself here, as by
// anything that is not hive) ends with a reason that says so; one that
// ended by a SIGKILL of another sender, or by hive's kill, does not.
func TestCgroupKilledFromOutside(t *testing.T) {
	g, err := proc.OpenJobCgroups(t.TempDir())
	if err != nil {
		t.Skipf("no cgroups here: %v", err)
	}
	defer g.Close()
	const own = `d=$(grep ' - cgroup2 ' /proc/self/mountinfo | head -1 | cut -d' ' -f5)$(sed -n 's/^0:://p' /proc/self/cgroup); `
	for _, tc := range []struct {
		name, cmd string
		kill      bool
		state     State
		err       string
	}{
		{"its cgroup.kill written", own + "echo 1 > $d/cgroup.kill; sleep 5", false, Done, CgroupKilled},
		{"kill -9 of its own", "kill -9 $$; sleep 5", false, Done, ""},
		{"hive's forced kill", "sleep 3600", true, Killed, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, Options{Cgroups: g, Grace: time.Second})
			j := h.start(Spec{Cmd: tc.cmd})
			<-j.Started()
			if tc.kill {
				if _, err := h.m.Kill(j.Info().ID, true); err != nil {
					t.Fatal(err)
				}
			}
			in := h.wait(j)
			if in.State != tc.state || in.Signal == nil || *in.Signal != 9 || in.Error != tc.err {
				sig := "none"
				if in.Signal != nil {
					sig = strconv.Itoa(*in.Signal)
				}
				t.Errorf("job %s: %s, signal %s, error %q; want %s by signal 9, error %q", tc.name, in.State, sig, in.Error, tc.state, tc.err)
			}
		})
	}
}
