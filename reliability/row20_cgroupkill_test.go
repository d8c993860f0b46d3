//go:build linux

package reliability

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/hivetools/hive/internal/job"
	"github.com/hivetools/hive/internal/proc"
	"github.com/hivetools/hive/internal/proto"
)

// cgroupOf is a shell prefix that sets $d to the job's own cgroup
// directory, as /proc/self/cgroup names it, under the cgroup2 mount.
const cgroupOf = `d=$(grep ' - cgroup2 ' /proc/self/mountinfo | head -1 | cut -d' ' -f5)$(sed -n 's/^0:://p' /proc/self/cgroup); `

// Row 20: a job that writes the cgroup.kill of its generation (the
// cgroup its cgroup is in) or of the base above it kills the jobs
// running then, each of which ends with a reason that says its cgroup
// was killed from outside hive; the 8 jobs started after it ended are
// not affected (done, exit 0, no error). Jobs held by the holder and a
// daemon's own jobs (--hold-jobs=false) alike. Where jobs get no cgroups
// it is skipped.
func TestRow20CgroupKillFromAJob(t *testing.T) {
	const victims, later = 2, 8
	rounds, killed, fine := 0, 0, 0
	for _, mode := range []struct{ name, flag string }{{"held", "--hold-jobs=true"}, {"daemon's own", "--hold-jobs=false"}} {
		dir := newStateDir(t)
		d := startDaemon(t, dir, mode.flag)
		v, err := d.Call(proto.Request{Cmd: proto.CmdVersion})
		if err != nil {
			t.Fatal(err)
		}
		if v.EscapeTracking != proc.TrackCgroup && v.EscapeTracking != proc.TrackCgroupMarks {
			t.Skipf("jobs get no cgroups of their own here (escape tracking %q): nothing to write a cgroup.kill of", v.EscapeTracking)
		}
		s := d.MCP()
		for _, sab := range []struct{ name, path string }{
			{"its generation's", `$d/../cgroup.kill`},
			{"the base's", `$d/../../cgroup.kill`},
		} {
			rounds++
			var ids []string
			for i := range victims {
				var j jobStarted
				s.MustCall("terminal_job_start", map[string]any{"cmd": "echo up; exec sleep 60"}, &j)
				if j.Status != "running" {
					t.Fatalf("%s job %d: %+v", mode.name, i, j)
				}
				waitOutputLines(t, s, j.JobID, 1)
				ids = append(ids, j.JobID)
			}
			var st task
			s.MustCall("run", map[string]any{"cmd": cgroupOf + "echo 1 > " + sab.path + "; sleep 5", "wait_seconds": 30}, &st)
			if st.Status == "running" || exitOf(st) != "137" {
				t.Errorf("the %s job that wrote %s cgroup.kill: %s, exit %s, want its end by SIGKILL (137)", mode.name, sab.name, st.Status, exitOf(st))
			}
			for i, id := range ids {
				var vt task
				s.MustCall("status", map[string]any{"id": id, "wait_seconds": 30}, &vt)
				if exitOf(vt) != "137" || !strings.Contains(vt.Error, job.CgroupKilled) {
					t.Errorf("%s job %d of %d running while a job wrote %s cgroup.kill: %s, exit %s, error %q; want exit 137 and error %q",
						mode.name, i+1, victims, sab.name, vt.Status, exitOf(vt), vt.Error, job.CgroupKilled)
					continue
				}
				killed++
			}
			for i := range later {
				var lt task
				s.MustCall("run", map[string]any{"cmd": fmt.Sprintf("echo ok%d", i), "wait_seconds": 30}, &lt)
				if lt.Status != "done" || exitOf(lt) != "0" || lt.Error != "" || strings.TrimSpace(lt.StdoutTail) != fmt.Sprintf("ok%d", i) {
					t.Errorf("%s job %d of %d started after a job wrote %s cgroup.kill: %s, exit %s, error %q, printed %q; want done, exit 0, ok%d",
						mode.name, i+1, later, sab.name, lt.Status, exitOf(lt), lt.Error, lt.StdoutTail, i)
					continue
				}
				fine++
			}
		}
		s.Close()
	}
	figure(t, 20, "jobs wrote their generation's, then the base's cgroup.kill (held jobs, then a daemon's own): %d of %d jobs running then ended with %q; %d of %d jobs started after them done with exit 0",
		killed, rounds*victims, job.CgroupKilled, fine, rounds*later)
}

// exitOf is a task's exit code, "none" if it has none.
func exitOf(st task) string {
	if st.ExitCode == nil {
		return "none"
	}
	return strconv.Itoa(*st.ExitCode)
}
