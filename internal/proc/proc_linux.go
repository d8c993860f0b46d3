package proc

import (
	"bytes"
	"os"
	"strconv"
	"sync"
)

// Supported reports whether this platform has a readable process table.
const Supported = true

// Read returns the Stat of pid; ok is false when the process is gone.
func Read(pid int) (Stat, bool) {
	f, ok := statFields("/proc/" + strconv.Itoa(pid) + "/stat")
	// f[0] is field 3 (state); ppid is field 4, pgrp 5, session 6,
	// utime 14, stime 15, starttime 22.
	if !ok || len(f) < 20 {
		return Stat{}, false
	}
	ppid, _ := strconv.Atoi(string(f[1]))
	pgrp, _ := strconv.Atoi(string(f[2]))
	sid, _ := strconv.Atoi(string(f[3]))
	utime, _ := strconv.ParseUint(string(f[11]), 10, 64)
	stime, _ := strconv.ParseUint(string(f[12]), 10, 64)
	start, _ := strconv.ParseUint(string(f[19]), 10, 64)
	return Stat{Pid: pid, State: f[0][0], PPid: ppid, Pgrp: pgrp, Session: sid, Start: start, CPU: utime + stime}, true
}

// statFields are the fields of a stat file of /proc (a process's or a
// thread's) after the command name, from the state on; ok is false when
// it cannot be read.
func statFields(path string) ([][]byte, bool) {
	b, err := readFile(path)
	if err != nil {
		return nil, false
	}
	// pid (comm) state ppid pgrp session ...; comm may hold spaces and ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return nil, false
	}
	return bytes.Fields(b[i+2:]), true
}

// Live lists the running (non-zombie) processes that match keep (nil
// keeps all).
func Live(keep func(Stat) bool) []Stat {
	return scan(func(st Stat) bool { return st.Alive() && (keep == nil || keep(st)) })
}

// scan lists the processes of the table, zombies included, that keep
// takes.
func scan(keep func(Stat) bool) []Stat {
	d, err := os.Open("/proc")
	if err != nil {
		return nil
	}
	defer d.Close()
	names, _ := d.Readdirnames(-1)
	var out []Stat
	for _, n := range names {
		pid, err := strconv.Atoi(n)
		if err != nil {
			continue
		}
		if st, ok := Read(pid); ok && keep(st) {
			out = append(out, st)
		}
	}
	return out
}

// HasEnv reports whether the environment of pid holds the exact line kv
// ("KEY=value"). Processes of other users cannot be read: false.
func HasEnv(pid int, kv string) bool {
	b, err := readFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		return false
	}
	for _, line := range bytes.Split(b, []byte{0}) {
		if string(line) == kv {
			return true
		}
	}
	return false
}

// Getenv returns the value of key in the environment of pid; ok is false
// when it has none, or it cannot be read (processes of other users).
func Getenv(pid int, key string) (string, bool) {
	b, err := readFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		return "", false
	}
	prefix := []byte(key + "=")
	for _, line := range bytes.Split(b, []byte{0}) {
		if v, found := bytes.CutPrefix(line, prefix); found {
			return string(v), true // the first, as getenv(3) finds
		}
	}
	return "", false
}

// ReadUsage reads the Usage of pid; ok is false when it cannot be read.
func ReadUsage(pid int) (Usage, bool) {
	dir := "/proc/" + strconv.Itoa(pid)
	b, err := readFile(dir + "/status")
	if err != nil {
		return Usage{}, false
	}
	var u Usage
	for _, line := range bytes.Split(b, []byte{'\n'}) {
		k, v, ok := bytes.Cut(line, []byte{':'})
		if !ok {
			continue
		}
		f := bytes.Fields(v)
		if len(f) == 0 {
			continue
		}
		n, _ := strconv.ParseInt(string(f[0]), 10, 64)
		switch string(k) {
		case "VmRSS":
			u.RSS = n << 10
		case "VmHWM":
			u.PeakRSS = n << 10
		case "Threads":
			u.Threads = int(n)
		}
	}
	d, err := os.Open(dir + "/fd")
	if err != nil {
		return Usage{}, false
	}
	defer d.Close()
	names, _ := d.Readdirnames(-1)
	u.FDs = len(names)
	return u, true
}

// Children lists the processes whose parent is pid, zombies included.
func Children(pid int) []Stat {
	return scan(func(st Stat) bool { return st.PPid == pid })
}

var bootID = sync.OnceValue(func() string {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	return string(bytes.TrimSpace(b))
})

// BootID identifies this boot of the machine ("" if unknown). Start times
// (Stat.Start) count from the boot: a pid and start time recorded in
// another boot prove nothing.
func BootID() string { return bootID() }

// Busy reports whether a thread of pid is running or waiting for a
// processor (state R), or in an uninterruptible wait (D: among others a
// parent in vfork until its child has exec'd, and disk I/O). A process
// with such a thread is at work even when the clock charged it nothing
// (utime and stime move in ticks of 10 ms, and a forking process waits
// on a child that is charged instead); one whose threads all sleep (S)
// waits for something else.
func Busy(pid int) bool {
	dir := "/proc/" + strconv.Itoa(pid) + "/task"
	d, err := os.Open(dir)
	if err != nil {
		return false
	}
	names, _ := d.Readdirnames(-1)
	d.Close()
	for _, n := range names {
		if f, ok := statFields(dir + "/" + n + "/stat"); ok && len(f) > 0 && (f[0][0] == 'R' || f[0][0] == 'D') {
			return true
		}
	}
	return false
}
