package tools

import (
	"testing"

	"github.com/hivetools/hive/internal/job"
	"github.com/hivetools/hive/internal/pty"
)

// The job engine's sweep of its owner's processes at start reaches PTY
// sessions only if both mark the owner under the same name.
func TestPTYOwnerMarkIsTheJobs(t *testing.T) {
	if pty.EnvOwner != job.EnvJobOwner {
		t.Errorf("pty.EnvOwner = %q, job.EnvJobOwner = %q: the owner sweep would miss PTY sessions", pty.EnvOwner, job.EnvJobOwner)
	}
}
