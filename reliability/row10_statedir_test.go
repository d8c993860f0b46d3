//go:build unix

package reliability

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hivetools/hive/internal/hivetest"
	"github.com/hivetools/hive/internal/proc"
)

// Row 10: a hostile state dir. Another user owns the state dir, or may
// write to it or to a directory above it, or has planted symlinks, hard
// links or a socket of their own in it (as root can, or anyone while the
// dir was open to them). hive refuses such a dir with an error that says
// what is wrong and how to fix it, never talks to a socket that is not
// its own daemon's, never writes or reads through a planted link, and
// after a normal run every file it made is 0600 and every dir 0700.
func TestRow10HostileStateDir(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("row 10 needs root: it makes dirs, files and listeners owned by uid 65534 (nobody)")
	}
	r := &hostile{top: t}
	bin := nobodyBin(t)

	t.Run("another uid's dir", func(t *testing.T) {
		dir := newStateDir(t)
		chownNobody(t, dir)
		want := []string{fmt.Sprintf("state dir %q: owned by uid 65534, not by you (uid 0)", dir)}
		for _, args := range [][]string{{"daemon"}, {"mcp"}, {"ps"}} {
			r.refuse(t, dir, want, args...)
		}
		r.empty(t, dir)
	})

	t.Run("group-writable dir", func(t *testing.T) {
		dir := newStateDir(t)
		chmod(t, dir, 0o770)
		want := []string{fmt.Sprintf("state dir %q: mode 0770 lets group or others write to it; chmod 700 %s", dir, dir)}
		for _, args := range [][]string{{"daemon"}, {"mcp"}, {"ps"}} {
			r.refuse(t, dir, want, args...)
		}
		r.empty(t, dir)
	})

	t.Run("world-writable parent without sticky bit", func(t *testing.T) {
		parent := newStateDir(t)
		chmod(t, parent, 0o777)
		dir := filepath.Join(parent, "hive")
		mkdir(t, dir)
		want := []string{fmt.Sprintf("state dir %q: %q on its path has mode 0777", dir, parent), "no sticky bit"}
		for _, args := range [][]string{{"daemon"}, {"mcp"}, {"ps"}} {
			r.refuse(t, dir, want, args...)
		}
		r.empty(t, dir)
		// A bridge does not make a missing state dir below it either.
		missing := filepath.Join(parent, "new")
		r.refuse(t, missing, []string{fmt.Sprintf("%q on its path has mode 0777", parent)}, "mcp")
		if _, err := os.Lstat(missing); err == nil {
			t.Errorf("hive mcp made %s below a world-writable dir", missing)
		}
	})

	t.Run("parent owned by another uid", func(t *testing.T) {
		parent := newStateDir(t)
		dir := filepath.Join(parent, "hive")
		mkdir(t, dir)
		chmod(t, parent, 0o755)
		chownNobody(t, parent)
		r.refuse(t, dir, []string{fmt.Sprintf("%q on its path is owned by uid 65534, neither root nor you", parent)}, "daemon")
		r.empty(t, dir)
	})

	t.Run("not a directory", func(t *testing.T) {
		file := filepath.Join(newStateDir(t), "hive")
		os.WriteFile(file, []byte("a file"), 0o600)
		r.refuse(t, file, []string{fmt.Sprintf("state dir %q: is a regular file, not a directory", file)}, "daemon")
	})

	t.Run("world-writable parent with sticky bit is fine", func(t *testing.T) {
		parent := newStateDir(t)
		chmod(t, parent, fs.ModeSticky|0o777)
		dir := filepath.Join(parent, "hive")
		mkdir(t, dir)
		d := startDaemon(t, dir)
		d.Stop()
	})

	t.Run("a socket that is not the daemon's", func(t *testing.T) {
		// A listener of uid 65534 on three sockets in its own dir.
		theirs := newStateDir(t)
		chownNobody(t, theirs)
		socks := []string{filepath.Join(theirs, "a.sock"), filepath.Join(theirs, "b.sock"), filepath.Join(theirs, "c.sock")}
		l := startListener(t, bin, socks)

		// 1: hive.sock is a symlink to their socket.
		d1 := newStateDir(t)
		hivetest.Symlink(t, socks[0], filepath.Join(d1, "hive.sock"))
		// 2: hive.sock is their socket, moved in.
		d2 := newStateDir(t)
		rename(t, socks[1], filepath.Join(d2, "hive.sock"))
		// 3: their socket, moved in and given to us: only the
		// listener's credentials (SO_PEERCRED) tell.
		d3 := newStateDir(t)
		rename(t, socks[2], filepath.Join(d3, "hive.sock"))
		if err := os.Lchown(filepath.Join(d3, "hive.sock"), 0, 0); err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			dir  string
			want string
		}{
			{d1, fmt.Sprintf("socket %q: is a symlink (to %q), not the daemon's socket: refusing to connect", filepath.Join(d1, "hive.sock"), socks[0])},
			{d2, fmt.Sprintf("socket %q: owned by uid 65534, not by you (uid 0): refusing to connect", filepath.Join(d2, "hive.sock"))},
			{d3, fmt.Sprintf("socket %q: served by a process of uid 65534 (pid %d), not by you (uid 0): refusing to talk to it", filepath.Join(d3, "hive.sock"), l.pid)},
		} {
			for _, args := range [][]string{{"ps"}, {"mcp"}} {
				r.refuse(t, c.dir, []string{c.want}, args...)
			}
		}
		got := l.stop(t)
		t.Logf("their listener saw: %v", got)
		if got[0].conns != 0 || got[1].conns != 0 {
			t.Errorf("the listener behind a symlinked or foreign-owned hive.sock saw %d and %d connections, want none", got[0].conns, got[1].conns)
		}
		for i, g := range got {
			if g.bytes != 0 {
				t.Errorf("socket %d: the listener received %d bytes (a request, maybe the environment), want none", i+1, g.bytes)
			}
		}
	})

	t.Run("a connection from another uid", func(t *testing.T) {
		dir := newStateDir(t)
		d := startDaemon(t, dir)
		// Give uid 65534 a way in: another name for the socket in a dir
		// it can reach, and a mode that lets it connect. The daemon
		// still has to turn it away.
		link := filepath.Join(filepath.Dir(bin), "peer.sock")
		sock := filepath.Join(dir, "hive.sock")
		if err := os.Link(sock, link); err != nil {
			t.Fatal(err)
		}
		defer os.Remove(link)
		chmod(t, sock, 0o666)
		defer os.Chmod(sock, 0o600)
		cmd := nobodyCmd(bin, "dial", "HIVE_ROW10_DIAL="+link)
		out, err := cmd.CombinedOutput()
		answered := !strings.Contains(string(out), "read=0 ")
		hivetest.Wait(10*time.Second, func() error { // r.check follows
			if !strings.Contains(d.Log(), "refused a connection from another user") {
				return errors.New("no refusal in the daemon's log")
			}
			return nil
		})
		log := d.Log()
		r.check(t, !answered && strings.Contains(log, "refused a connection from another user") && strings.Contains(log, "uid=65534"),
			"a uid 65534 client got %q (%v); daemon log:\n%s", out, err, log)
	})

	t.Run("planted files", func(t *testing.T) {
		// daemon.lock a symlink, then a hard link, to a file outside.
		dir := newStateDir(t)
		out := r.outsideFile(t)
		hivetest.Symlink(t, out, filepath.Join(dir, "daemon.lock"))
		r.refuse(t, dir, []string{fmt.Sprintf("file %q: is a symlink (to %q)", filepath.Join(dir, "daemon.lock"), out), "remove it"}, "daemon")

		dir = newStateDir(t)
		out = r.outsideFile(t)
		if err := os.Link(out, filepath.Join(dir, "daemon.lock")); err != nil {
			t.Fatal(err)
		}
		r.refuse(t, dir, []string{fmt.Sprintf("file %q: has 2 hard links", filepath.Join(dir, "daemon.lock"))}, "daemon")

		// daemon.log, opened by the bridge for the daemon it starts.
		dir = newStateDir(t)
		out = r.outsideFile(t)
		hivetest.Symlink(t, out, filepath.Join(dir, "daemon.log"))
		r.refuse(t, dir, []string{fmt.Sprintf("open daemon log: file %q: is a symlink", filepath.Join(dir, "daemon.log"))}, "mcp")
		if _, err := os.Lstat(filepath.Join(dir, "hive.sock")); err == nil {
			t.Error("the bridge started a daemon anyway")
		}

		// The store and its companions.
		for _, name := range []string{"hive.db", "hive.db-wal", "hive.db-shm", "jobs-journal"} {
			dir = newStateDir(t)
			out = r.outsideFile(t)
			hivetest.Symlink(t, out, filepath.Join(dir, name))
			r.refuse(t, dir, []string{fmt.Sprintf("file %q: is a symlink", filepath.Join(dir, name))}, "daemon")
		}

		// bash-tasks a symlink to a dir outside.
		dir = newStateDir(t)
		outDir := r.outsideDir(t)
		hivetest.Symlink(t, outDir, filepath.Join(dir, "bash-tasks"))
		r.refuse(t, dir, []string{fmt.Sprintf("dir %q: is a symlink (to %q)", filepath.Join(dir, "bash-tasks"), outDir)}, "daemon")
	})

	t.Run("planted links under a running daemon", func(t *testing.T) {
		dir := newStateDir(t)
		d := startDaemon(t, dir)
		base := d.Settled()
		s := d.MCP()

		// hyperhive-status: replaced by set_status, not written through.
		out := r.outsideFile(t)
		status := filepath.Join(dir, "hyperhive-status")
		hivetest.Symlink(t, out, status)
		s.MustCall("set_status", map[string]any{"text": "row 10"}, nil)
		fi, err := os.Lstat(status)
		b, _ := os.ReadFile(status)
		r.check(t, err == nil && fi.Mode().IsRegular() && fi.Mode().Perm() == 0o600 && string(b) == "row 10",
			"hyperhive-status after set_status: %v %v %q; want a 0600 file holding the status", fi.Mode(), err, b)

		// bash-tasks/<id>.out planted after the job started, before its
		// first byte: the bytes stay in memory and count as dropped. The
		// job's first byte on stderr says its streams are set up (an old
		// file at the path is removed then); it then waits on a fifo.
		gate := filepath.Join(outsideDir(t, t), "gate")
		if err := syscall.Mkfifo(gate, 0o600); err != nil {
			t.Fatal(err)
		}
		var st plantedTask
		s.MustCall("run", map[string]any{"cmd": "echo started >&2; cat " + gate + " >/dev/null; echo written-through", "wait_seconds": 0}, &st)
		if st.StdoutPath != "" { // stderr may have its first line by now
			t.Fatalf("run named the file of a stream still empty: %+v", st)
		}
		// Where they will be (a path is named once its file exists).
		st.StdoutPath = filepath.Join(dir, "bash-tasks", st.ID+".out")
		st.StderrPath = filepath.Join(dir, "bash-tasks", st.ID+".err")
		hivetest.Eventually(t, 20*time.Second, "job "+st.ID+"'s stderr file", func() error {
			_, err := os.Lstat(st.StderrPath)
			return err
		})
		out = r.outsideFile(t)
		hivetest.Symlink(t, out, st.StdoutPath)
		openGate(t, gate)
		s.MustCall("status", map[string]any{"id": st.ID, "wait_seconds": 20}, &st)
		// The holder of the jobs keeps no copy in memory: the bytes are
		// counted as dropped, not shown (a daemon that runs its jobs
		// itself, --hold-jobs=false, still shows them from its ring).
		r.check(t, st.Status == "done" && strings.TrimSpace(st.StdoutTail) == "" && st.StdoutDropped == int64(len("written-through\n")),
			"job with a planted %s: %+v; want done, its output counted as dropped", filepath.Base(st.StdoutPath), st)

		// An ended job's file swapped for a symlink: hive logs does not
		// read the file behind it.
		s.MustCall("run", map[string]any{"cmd": "head -c 100000 /dev/zero | tr '\\0' a", "wait_seconds": 20}, &st)
		if st.Status != "done" {
			t.Fatalf("big job: %+v", st)
		}
		out = r.outsideFile(t)
		os.Remove(st.StdoutPath)
		hivetest.Symlink(t, out, st.StdoutPath)
		logs, _ := hostileRun(t, dir, "logs", st.ID)
		r.check(t, !strings.Contains(logs, "precious"), "hive logs read through a planted symlink: %q", logs)
		s.Close()
		d.CheckBaseline(base)
	})

	t.Run("a normal run is private", func(t *testing.T) {
		dir := newStateDir(t)
		cs := bridgeSession(t, dir)
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		call := func(name string, args map[string]any) map[string]any {
			t.Helper()
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
			if err != nil || res.IsError {
				t.Fatalf("%s: %v %+v", name, err, res)
			}
			m, _ := res.StructuredContent.(map[string]any)
			return m
		}
		call("run", map[string]any{"cmd": "echo out; echo err >&2", "wait_seconds": 20})
		call("set_status", map[string]any{"text": "private"})
		pty := call("terminal_pty_open", map[string]any{})
		id, _ := pty["session_id"].(string)
		call("terminal_pty_send", map[string]any{"session_id": id, "input": "echo pty-$((6*7))\n", "wait_for": "pty-42"})
		call("terminal_pty_close", map[string]any{"session_id": id})

		var files, dirs int
		var loose []string
		filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
			if err != nil {
				loose = append(loose, fmt.Sprintf("%s: %v", p, err))
				return nil
			}
			fi, err := os.Lstat(p)
			if err != nil {
				return nil // gone meanwhile (a temp file)
			}
			switch m := fi.Mode(); {
			case m.IsDir():
				dirs++
				if m.Perm() != 0o700 {
					loose = append(loose, fmt.Sprintf("%s: dir %v", p, m))
				}
			case m.IsRegular(), m&fs.ModeSocket != 0:
				files++
				if m.Perm() != 0o600 {
					loose = append(loose, fmt.Sprintf("%s: %v", p, m))
				}
			default:
				loose = append(loose, fmt.Sprintf("%s: unexpected %v", p, m))
			}
			return nil
		})
		for _, name := range []string{"hive.db", "hive.db-wal", "daemon.lock", "daemon.log", "hive.sock", "hyperhive-status", "jobs-journal"} {
			if _, err := os.Lstat(filepath.Join(dir, name)); err != nil {
				loose = append(loose, fmt.Sprintf("%s: missing after a run: %v", name, err))
			}
		}
		for _, sub := range []string{"bash-tasks", "pty"} {
			if ents, _ := os.ReadDir(filepath.Join(dir, sub)); len(ents) == 0 {
				loose = append(loose, sub+": no output files after a run")
			}
		}
		figure(t, 10, "after a normal run: %d files 0600 and %d dirs 0700 in the state dir, %d looser", files, dirs, len(loose))
		if len(loose) > 0 {
			t.Errorf("state dir after a normal run:\n%s", strings.Join(loose, "\n"))
		}
		cs.Close()
		stopBridgeDaemon(t, dir)
	})

	touched := r.touched(t)
	figure(t, 10, "hostile state dir: %d of %d cases refused or replaced, %d of %d files outside touched", r.refused, r.cases, touched, len(r.outside))
	if touched > 0 {
		t.Errorf("%d files outside the state dir were touched", touched)
	}
}

// hostile counts row 10's cases and watches the files outside, which
// live until the whole row (top) ends.
type hostile struct {
	top            *testing.T
	cases, refused int
	outside        []witness
}

// witness is what a file (or dir) outside the state dir looked like.
type witness struct {
	path  string
	data  string // a dir's entry names
	size  int64
	mtime time.Time
	mode  fs.FileMode
}

func look(path string) (witness, error) {
	fi, err := os.Lstat(path)
	if err != nil {
		return witness{}, err
	}
	w := witness{path: path, size: fi.Size(), mtime: fi.ModTime(), mode: fi.Mode()}
	if fi.IsDir() {
		ents, _ := os.ReadDir(path)
		for _, e := range ents {
			w.data += e.Name() + "\n"
		}
	} else {
		b, _ := os.ReadFile(path)
		w.data = string(b)
	}
	return w, nil
}

func (r *hostile) check(t *testing.T, ok bool, format string, args ...any) {
	t.Helper()
	r.cases++
	if ok {
		r.refused++
		return
	}
	t.Errorf(format, args...)
}

// refuse runs hive ARGS on dir and checks that it fails, saying want.
func (r *hostile) refuse(t *testing.T, dir string, want []string, args ...string) {
	t.Helper()
	out, code := hostileRun(t, dir, args...)
	ok := code > 0
	for _, w := range want {
		ok = ok && strings.Contains(out, w)
	}
	r.check(t, ok, "hive %s on %s: exit %d, said %q; want a refusal saying %q", strings.Join(args, " "), dir, code, out, want)
}

// empty checks that nothing was made in dir.
func (r *hostile) empty(t *testing.T, dir string) {
	t.Helper()
	if ents, _ := os.ReadDir(dir); len(ents) > 0 {
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		t.Errorf("refused state dir %s holds %v, want nothing", dir, names)
	}
}

// outsideFile makes a 0644 file with content outside any state dir, its
// mtime an hour back so a write shows, and watches it.
func (r *hostile) outsideFile(t *testing.T) string {
	t.Helper()
	p := filepath.Join(outsideDir(t, r.top), "precious")
	if err := os.WriteFile(p, []byte(fmt.Sprintf("precious %d\n", len(r.outside))), 0o644); err != nil {
		t.Fatal(err)
	}
	past := time.Now().Add(-time.Hour).Truncate(time.Second)
	os.Chtimes(p, past, past)
	r.watch(t, p)
	return p
}

// outsideDir makes an empty dir outside any state dir and watches it.
func (r *hostile) outsideDir(t *testing.T) string {
	t.Helper()
	d := outsideDir(t, r.top)
	past := time.Now().Add(-time.Hour).Truncate(time.Second)
	os.Chtimes(d, past, past)
	r.watch(t, d)
	return d
}

func (r *hostile) watch(t *testing.T, p string) {
	t.Helper()
	w, err := look(p)
	if err != nil {
		t.Fatal(err)
	}
	r.outside = append(r.outside, w)
}

// touched counts the watched files whose content, size, mtime or mode
// changed.
func (r *hostile) touched(t *testing.T) int {
	n := 0
	for _, w := range r.outside {
		now, err := look(w.path)
		if err != nil || now != w {
			n++
			t.Errorf("outside file %s was touched: %+v (%v), was %+v", w.path, now, err, w)
		}
	}
	return n
}

// outsideDir makes a dir outside any state dir, removed when owner ends.
func outsideDir(t, owner *testing.T) string {
	t.Helper()
	d, err := os.MkdirTemp("", "hive-outside-")
	if err != nil {
		t.Fatal(err)
	}
	owner.Cleanup(func() { os.RemoveAll(d) })
	return d
}

// hostileRun runs hive ARGS on dir with no input and returns its output
// and exit code (-1 if it had to be killed: it hung instead of refusing).
func hostileRun(t *testing.T, dir string, args ...string) (string, int) {
	t.Helper()
	t.Cleanup(func() { stopBridgeDaemon(t, dir) }) // in case one was started after all
	cmd := hivetest.Command(t, dir, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		<-done
		t.Errorf("hive %s on %s did not end within 30 s", strings.Join(args, " "), dir)
		return out.String(), -1
	}
	return out.String(), cmd.ProcessState.ExitCode()
}

// stopBridgeDaemon stops every process of this test binary still at work
// on dir: a daemon a bridge started, detached (also one that has not
// written daemon.lock yet), and what it runs. They are found by their
// environment and stopped by pid: SIGTERM, SIGKILL after 30 s.
func stopBridgeDaemon(t *testing.T, dir string) {
	self := os.Getpid()
	for _, st := range proc.Live(func(s proc.Stat) bool { return s.Pid != self }) {
		if !proc.HasEnv(st.Pid, "HIVE_STATE_DIR="+dir) || !proc.HasEnv(st.Pid, hivetest.MainEnv) {
			continue
		}
		syscall.Kill(st.Pid, syscall.SIGTERM)
		if err := hivetest.Wait(30*time.Second, hivetest.Gone(st.Pid)); err != nil {
			t.Errorf("process %d did not stop on SIGTERM: %v", st.Pid, err)
			syscall.Kill(st.Pid, syscall.SIGKILL)
		}
	}
}

// bridgeSession is an MCP session through a real `hive mcp` bridge,
// which starts the daemon (its output in daemon.log).
func bridgeSession(t *testing.T, dir string) *hivetest.Session {
	t.Helper()
	cmd := hivetest.Command(t, dir, "mcp")
	cmd.Stderr = os.Stderr
	t.Cleanup(func() { stopBridgeDaemon(t, dir) }) // after the session's close
	return hivetest.ConnectCmd(t, cmd)
}

// plantedTask is the part of run and status answers row 10 reads.
type plantedTask struct {
	ID            string `json:"id"`
	Status        string `json:"status"`
	StdoutTail    string `json:"stdout_tail"`
	StdoutPath    string `json:"stdout_path"`
	StderrPath    string `json:"stderr_path"`
	StdoutDropped int64  `json:"stdout_dropped"`
}

// openGate lets a job blocked reading the fifo gate go on.
func openGate(t *testing.T, gate string) {
	t.Helper()
	f, err := os.OpenFile(gate, os.O_WRONLY, 0) // blocks until the job reads
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
}

func chownNobody(t *testing.T, path string) {
	t.Helper()
	if err := os.Lchown(path, nobodyUID, nobodyUID); err != nil {
		t.Fatal(err)
	}
}

func chmod(t *testing.T, path string, mode fs.FileMode) {
	t.Helper()
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
}

func mkdir(t *testing.T, dir string) {
	t.Helper()
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
}

func rename(t *testing.T, from, to string) {
	t.Helper()
	if err := os.Rename(from, to); err != nil {
		t.Fatal(err)
	}
}

// nobodyUID is the other user of row 10.
const nobodyUID = 65534

// nobodyBin copies this test binary where uid 65534 can run it (the
// build dir is private), in a dir of its own that it may read.
func nobodyBin(t *testing.T) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "hive-r10-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	chmod(t, dir, 0o755)
	src, err := os.Open(self)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	bin := filepath.Join(dir, "helper.test")
	dst, err := os.OpenFile(bin, os.O_CREATE|os.O_WRONLY|os.O_EXCL, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	_, err = io.Copy(dst, src)
	if cerr := dst.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// nobodyCmd runs the helper binary as uid 65534 in helper mode mode.
func nobodyCmd(bin, mode string, env ...string) *exec.Cmd {
	cmd := exec.Command(bin, "-test.run=^TestRow10Helper$")
	cmd.Env = append(append(os.Environ(), "HIVE_ROW10_HELPER="+mode), env...)
	cmd.Dir = "/"
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobodyUID, Gid: nobodyUID}}
	return cmd
}

// listener is a helper process of uid 65534 listening on sockets.
type listener struct {
	pid   int
	cmd   *exec.Cmd
	stdin io.WriteCloser
	lines chan string
}

// seen is what the listener saw on one socket.
type seen struct{ conns, bytes int64 }

func startListener(t *testing.T, bin string, socks []string) *listener {
	t.Helper()
	cmd := nobodyCmd(bin, "listen", "HIVE_ROW10_SOCKS="+strings.Join(socks, ":"))
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	l := &listener{pid: cmd.Process.Pid, cmd: cmd, stdin: stdin, lines: make(chan string, 16)}
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			l.lines <- sc.Text()
		}
		close(l.lines)
	}()
	t.Cleanup(func() {
		stdin.Close()
		cmd.Process.Kill()
		cmd.Wait()
	})
	select {
	case line := <-l.lines:
		if line != "ready" {
			t.Fatalf("listener: %q", line)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("listener not ready within 20 s")
	}
	return l
}

// stop ends the listener and returns what it saw on each socket.
func (l *listener) stop(t *testing.T) []seen {
	t.Helper()
	l.stdin.Close()
	var out []seen
	timeout := time.After(20 * time.Second)
	for {
		select {
		case line, ok := <-l.lines:
			if !ok {
				l.cmd.Wait()
				return out
			}
			var s seen
			var i int
			if n, _ := fmt.Sscanf(line, "sock %d conns=%d bytes=%d", &i, &s.conns, &s.bytes); n == 3 {
				out = append(out, s)
			}
		case <-timeout:
			t.Fatal("listener did not report within 20 s")
		}
	}
}

// TestRow10Helper is row 10's other user: run as uid 65534 by the row,
// it listens on sockets (HIVE_ROW10_HELPER=listen) or connects to one
// (dial). It does nothing in a normal test run.
func TestRow10Helper(t *testing.T) {
	switch os.Getenv("HIVE_ROW10_HELPER") {
	case "listen":
		helperListen(strings.Split(os.Getenv("HIVE_ROW10_SOCKS"), ":"))
	case "dial":
		helperDial(os.Getenv("HIVE_ROW10_DIAL"))
	default:
		t.Skip("row 10's helper process; runs only when row 10 starts it")
	}
}

// helperListen listens on every socket, prints "ready", counts the
// connections and bytes each gets until stdin ends, then prints them.
func helperListen(socks []string) {
	type count struct{ conns, bytes atomic.Int64 }
	counts := make([]count, len(socks))
	var lns []net.Listener
	var wg sync.WaitGroup
	for i, p := range socks {
		ln, err := net.Listen("unix", p)
		if err != nil {
			fmt.Println("listen:", err)
			return
		}
		lns = append(lns, ln)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				counts[i].conns.Add(1)
				wg.Add(1)
				go func() {
					defer wg.Done()
					defer c.Close()
					c.SetReadDeadline(time.Now().Add(20 * time.Second))
					n, _ := io.Copy(io.Discard, c)
					counts[i].bytes.Add(n)
				}()
			}
		}()
	}
	fmt.Println("ready")
	io.Copy(io.Discard, os.Stdin)
	for _, ln := range lns {
		ln.Close()
	}
	wg.Wait()
	for i := range counts {
		fmt.Printf("sock %d conns=%d bytes=%d\n", i+1, counts[i].conns.Load(), counts[i].bytes.Load())
	}
}

// helperDial connects to a daemon socket, asks for its version and
// prints how many bytes came back before the daemon closed.
func helperDial(path string) {
	c, err := net.Dial("unix", path)
	if err != nil {
		fmt.Println("dial:", err)
		return
	}
	defer c.Close()
	c.Write([]byte(`{"cmd":"version"}` + "\n"))
	c.SetReadDeadline(time.Now().Add(20 * time.Second))
	b, err := io.ReadAll(c)
	fmt.Printf("read=%d err=%v %q\n", len(b), err, b)
}
