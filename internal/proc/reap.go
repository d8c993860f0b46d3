package proc

import "os/exec"

// Start starts cmd. Every process the current program starts while a
// Reaper runs must be started here (and waited for with Wait): the reaper
// then never takes its exit status, which stays the caller's to collect.
// Elsewhere than Linux it is cmd.Start.
func Start(cmd *exec.Cmd) error { return start(cmd, true) }

// Wait waits for a command started with Start (cmd.Wait), then lets the
// reaper treat its pid as any other.
func Wait(cmd *exec.Cmd) error {
	if cmd.Process != nil {
		awaitExit(cmd.Process.Pid)
	}
	err := cmd.Wait()
	if cmd.Process != nil {
		forget(cmd)
	}
	return err
}

// WaitExited is Wait for a command whose process has exited already
// (Exited said so): it is reaped at once, with no look for its exit.
func WaitExited(cmd *exec.Cmd) error {
	err := cmd.Wait()
	if cmd.Process != nil {
		forget(cmd)
	}
	return err
}

// How a job's processes that leave its group are found (the daemon's
// escape_tracking, in `hive version --json`).
const (
	// TrackGroup: a job's processes are found by their process group
	// only; one that leaves it is not seen.
	TrackGroup = "group"
	// TrackJobObject: (Windows) every job's process is put in a job object
	// of its own as it starts; what it starts is in it too, and a stop, a
	// timeout or the job's end ends what is in it.
	TrackJobObject = "job-object"
	// TrackMarks: processes that left the group are found by the job's
	// marks in their environment, but they are reparented to init: they
	// are terminated with their job, not reaped by hive.
	TrackMarks = "marks"
	// TrackSubreaper: hive is a child subreaper: every process that leaves
	// a job's tree is reparented to the daemon, found by its marks,
	// terminated with its job and reaped.
	TrackSubreaper = "subreaper+marks"
	// TrackCgroup: every job runs in a cgroup v2 of its own (see
	// JobCgroups), which setsid, forks and env -i do not leave (only a
	// write of a pid into another cgroup does): what is left of a job at
	// its end is killed, marks or not; hive is a child subreaper too, and
	// reaps them.
	TrackCgroup = "cgroup+subreaper"
	// TrackCgroupMarks: cgroups as TrackCgroup, without the subreaper
	// (init reaps what a job's end kills).
	TrackCgroupMarks = "cgroup+marks"
)

// WithCgroups is tracking t once each job has a cgroup of its own.
func WithCgroups(t string) string {
	switch t {
	case TrackSubreaper, TrackCgroup:
		return TrackCgroup
	}
	return TrackCgroupMarks
}
