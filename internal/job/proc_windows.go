package job

import (
	"io"
	"os"
	"sync"

	"github.com/hivetools/hive/internal/proc"
	"github.com/hivetools/hive/internal/store"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// stoppedWhat is what a stop ends, as a job's meaning says it: here only
// the job's own process (no job object yet), and a meaning never claims
// more.
const stoppedWhat = "its process"

type winSignal int

var (
	sigInt  winSignal = 2
	sigKill winSignal = 9
)

func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{CreationFlags: syscall.CREATE_NEW_PROCESS_GROUP}
}

// signalGroup kills the job's process; Windows has no process-group
// signals without job objects.
func signalGroup(pid int, _ winSignal) {
	if p, err := os.FindProcess(pid); err == nil {
		p.Kill()
	}
}

func exitStatus(ps *os.ProcessState) (int, *int) {
	if ps == nil {
		return -1, nil
	}
	return ps.ExitCode(), nil
}

func executable(p string) error {
	fi, err := os.Stat(p)
	if err != nil {
		return err
	}
	if fi.IsDir() {
		return os.ErrNotExist
	}
	return nil
}

func candidates(p string) []string {
	if filepath.Ext(p) != "" {
		return []string{p}
	}
	var out []string
	for _, ext := range strings.Split(os.Getenv("PATHEXT"), ";") {
		if ext != "" {
			out = append(out, p+strings.ToLower(ext))
		}
	}
	return append(out, p+".exe", p)
}

func procStartTime(pid int) uint64                   { return 0 }
func cleanupGroup(pgid int, grace time.Duration) int { return 0 }
func tunePipe(f *os.File)                            {}

// pooledReader is none here: pumps read with r.Read.
func pooledReader(r *os.File) func(pool *sync.Pool, bp **[]byte) (int, error) { return nil }

// bulkReader has no thread of its own here: pouring streams stay in the
// poller.
func bulkReader(r *os.File) func([]byte) (int, error) { return nil }

// findOrphans finds nothing here: no process table to prove anything by.
func findOrphans(left []store.Job, known map[string]bool, owner, boot string) ([]proc.Pinned, []string) {
	return nil, nil
}

// escapees finds nothing here: no process table to prove anything by.
func escapees(id, owner string, since uint64, pgid int) []proc.Pinned { return nil }

// drainNow is a no-op: Windows pipes here have no deadlines to interrupt.
func drainNow(r *os.File, s io.Writer, buf []byte) {}
