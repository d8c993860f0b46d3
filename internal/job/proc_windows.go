package job

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/windows"

	"github.com/hivetools/hive/internal/proc"
	"github.com/hivetools/hive/internal/store"
)

// stoppedWhat is what a stop ends, as a job's meaning says it: the job's
// process and every process it started, which share its job object (a
// process a job's process starts is in its job object too).
const stoppedWhat = "its process tree"

type winSignal int

// jobSignal is a signal a stop sends a job's tree.
type jobSignal = winSignal

var (
	sigInt  winSignal = 2
	sigKill winSignal = 9
)

func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{CreationFlags: syscall.CREATE_NEW_PROCESS_GROUP}
}

// jobObjects holds the job object of each running job, by the pid of
// its process (that pid cannot be reused while its os.Process is
// unreaped). A job object ends with its last handle: closed once the
// job's process is reaped and what it left is ended (cleanupGroup).
var jobObjects sync.Map // int -> windows.Handle

// attachTree puts the job's new process in a job object of its own, so
// that a stop or a timeout ends every process it started. A process
// that could not be put in one (a job object of the daemon's that does
// not allow nesting, before Windows 8) is stopped with its tree by
// taskkill /T instead; both end the tree, so the meaning's "its process
// tree" is true either way.
func attachTree(pid int) error {
	job, err := windows.CreateJobObject(nil, nil)
	if err != nil {
		return fmt.Errorf("create a job object: %w", err)
	}
	p, err := windows.OpenProcess(windows.PROCESS_SET_QUOTA|windows.PROCESS_TERMINATE, false, uint32(pid))
	if err != nil {
		windows.CloseHandle(job)
		return fmt.Errorf("open the process: %w", err)
	}
	defer windows.CloseHandle(p)
	if err := windows.AssignProcessToJobObject(job, p); err != nil {
		windows.CloseHandle(job)
		return fmt.Errorf("put the process in a job object: %w", err)
	}
	jobObjects.Store(pid, job)
	return nil
}

// signalGroup ends the job's process tree: its job object, or taskkill
// /T where it has none. Windows has no interrupt a console-less process
// tree can be sent, so an interrupt ends it as a kill does.
func signalGroup(pid int, _ winSignal) {
	if pid <= 0 {
		return
	}
	if h, ok := jobObjects.Load(pid); ok {
		windows.TerminateJobObject(h.(windows.Handle), 1)
		return
	}
	taskkill(pid)
	if p, err := os.FindProcess(pid); err == nil {
		p.Kill()
	}
}

// taskkill ends pid and the processes it started (taskkill.exe is in
// System32 on every Windows).
func taskkill(pid int) {
	exe := filepath.Join(os.Getenv("SystemRoot"), "System32", "taskkill.exe")
	cmd := exec.Command(exe, "/T", "/F", "/PID", strconv.Itoa(pid))
	cmd.SysProcAttr = &syscall.SysProcAttr{HideWindow: true}
	cmd.Run()
}

// basicAccounting is JOBOBJECT_BASIC_ACCOUNTING_INFORMATION.
type basicAccounting struct {
	TotalUserTime, TotalKernelTime                     int64
	ThisPeriodTotalUserTime, ThisPeriodTotalKernelTime int64
	TotalPageFaultCount, TotalProcesses                uint32
	ActiveProcesses, TotalTerminatedProcesses          uint32
}

// activeProcesses is how many processes are in the job object now.
func activeProcesses(job windows.Handle) int {
	var info basicAccounting
	if err := windows.QueryInformationJobObject(job, windows.JobObjectBasicAccountingInformation,
		uintptr(unsafe.Pointer(&info)), uint32(unsafe.Sizeof(info)), nil); err != nil {
		return 0
	}
	return int(info.ActiveProcesses)
}

// cleanupGroup ends what the job's process left in its job object once
// it was reaped, after grace for it to end, and returns how many it
// ended; then it lets the job object go.
func cleanupGroup(pid int, grace time.Duration) int {
	v, ok := jobObjects.LoadAndDelete(pid)
	if !ok {
		return 0
	}
	job := v.(windows.Handle)
	defer windows.CloseHandle(job)
	n := activeProcesses(job)
	if n == 0 {
		return 0
	}
	for end := time.Now().Add(grace); time.Now().Before(end) && n > 0; n = activeProcesses(job) {
		time.Sleep(10 * time.Millisecond)
	}
	if n > 0 {
		windows.TerminateJobObject(job, 1)
	}
	return n
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

func procStartTime(pid int) uint64 { return 0 }
func tunePipe(f *os.File)          {}

// pooledReader is none here: pumps read with r.Read.
func pooledReader(r *os.File) func(pool *sync.Pool, bp **[]byte) (int, error) { return nil }

// splicedReader: no splice(2) here; every stream's bytes are read and
// written.
func splicedReader(r *os.File, to io.Writer) func() (int, error) { return nil }

// drainSpliced: see splicedReader.
func drainSpliced(r *os.File, to io.Writer) bool { return false }

// bulkReader has no thread of its own here: pouring streams stay in the
// poller.
func bulkReader(r *os.File) func([]byte) (int, error) { return nil }

// findOrphans finds nothing here: no process table to prove anything by.
func findOrphans(left []store.Job, known map[string]bool, owner, boot string) ([]proc.Pinned, []string) {
	return nil, nil
}

// escapees finds nothing here: no process table to prove anything by.
func escapees(id, owner string, since uint64, pgid int) []proc.Pinned { return nil }

// readToEnd reads nothing here: a pump reads (only a job kept at its end,
// on Linux, asks).
func readToEnd(r *os.File, s io.Writer) bool { return false }

// drainNow is a no-op: Windows pipes here have no deadlines to interrupt.
func drainNow(r *os.File, s io.Writer, buf []byte) {}
