package reliability

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hivetools/hive/internal/hivetest"
	"github.com/hivetools/hive/internal/proc"
	"github.com/hivetools/hive/internal/proto"
	"github.com/hivetools/hive/internal/store"
	"github.com/hivetools/hive/internal/view"
)

// answered is what a client was told of one job, by the latest answer.
type answered struct {
	state string
	exit  *int
	by    string // the call that told it
}

// answerBook collects every state the daemon answered, per job.
type answerBook struct {
	mu    sync.Mutex
	last  map[string]answered // latest answer per job id
	final map[string]answered // the terminal answer, once there is one
	pids  map[int]answered    // terminal_exec answers, by pid (they carry no job id)
	n     int
}

func (b *answerBook) add(id, state string, exit *int, by string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.n++
	a := answered{state, exit, by}
	b.last[id] = a
	if terminal(state) {
		if _, ok := b.final[id]; !ok {
			b.final[id] = a
		}
	}
}

func terminal(s string) bool {
	switch s {
	case "done", "failed", "killed", "timed_out", "interrupted":
		return true
	}
	return false
}

func sameExit(a, b *int) bool {
	return (a == nil) == (b == nil) && (a == nil || *a == *b)
}

// crashStream makes tool calls from two clients until the daemon dies
// under them, and books every answer.
func crashStream(s *hivetest.Session, book *answerBook, stop <-chan struct{}, seed uint64) {
	var wg sync.WaitGroup
	for w := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(seed, uint64(w)))
			var mine []string // detached jobs this worker started
			for {
				select {
				case <-stop:
					return
				default:
				}
				var st task
				var err error
				var isErr bool
				switch op := r.IntN(7); op {
				case 0, 1: // inline run
					code := r.IntN(4)
					_, isErr, err = s.TryCall("run", map[string]any{"cmd": fmt.Sprintf("exit %d", code), "wait_seconds": 5}, &st)
					if err == nil && !isErr {
						book.add(st.ID, st.Status, st.ExitCode, "run")
					}
				case 2: // detached run
					_, isErr, err = s.TryCall("run", map[string]any{"cmd": fmt.Sprintf("sleep 0.%03d; exit %d", r.IntN(300), r.IntN(3)), "wait_seconds": 0}, &st)
					if err == nil && !isErr {
						book.add(st.ID, st.Status, st.ExitCode, "run&")
						mine = append(mine, st.ID)
					}
				case 3: // status of an earlier job
					if len(mine) == 0 {
						continue
					}
					id := mine[r.IntN(len(mine))]
					_, isErr, err = s.TryCall("status", map[string]any{"id": id, "wait_seconds": 0.05}, &st)
					if err == nil && !isErr {
						book.add(st.ID, st.Status, st.ExitCode, "status")
					}
				case 4: // kill of an earlier job
					if len(mine) == 0 {
						continue
					}
					var k struct {
						ID       string `json:"id"`
						Status   string `json:"status"`
						ExitCode *int   `json:"exit_code"`
					}
					_, isErr, err = s.TryCall("kill", map[string]any{"id": mine[r.IntN(len(mine))]}, &k)
					if err == nil && !isErr {
						book.add(k.ID, k.Status, k.ExitCode, "kill")
					}
				case 5: // foreground exec
					var env struct {
						ExitCode *int `json:"exit_code"`
						Pid      int  `json:"pid"`
						Auto     bool `json:"auto_backgrounded"`
					}
					code := r.IntN(3)
					_, isErr, err = s.TryCall("terminal_exec", map[string]any{"cmd": fmt.Sprintf("echo x; exit %d", code)}, &env)
					if err == nil && !isErr && !env.Auto && env.ExitCode != nil {
						book.mu.Lock()
						book.n++
						book.pids[env.Pid] = answered{"done", env.ExitCode, "terminal_exec"}
						book.mu.Unlock()
					}
				case 6: // a background job
					var js jobStarted
					_, isErr, err = s.TryCall("terminal_job_start", map[string]any{"cmd": "sleep 5"}, &js)
					if err == nil && !isErr {
						book.add(js.JobID, js.Status, nil, "terminal_job_start")
						mine = append(mine, js.JobID)
					}
				}
				if err != nil {
					return // the daemon is gone
				}
			}
		}()
	}
	wg.Wait()
}

// plantReusedGroup starts an unrelated process whose group id is the pid
// of a process that is gone (its leader exited): the situation after a
// setsid daemon took over a dead job's number. It returns the survivor's
// pid and the group id.
func plantReusedGroup(t *testing.T) (pid, group int) {
	t.Helper()
	sh := exec.Command("sh", "-c", "sleep 3600 >/dev/null 2>&1 & echo $!")
	hivetest.Setsid(t, sh)
	out, err := sh.Output()
	if err != nil {
		t.Fatal(err)
	}
	pid, _ = strconv.Atoi(strings.TrimSpace(string(out)))
	t.Cleanup(func() { hivetest.Kill(pid) })
	return pid, sh.Process.Pid
}

// Row 6: kill -9 the daemon at random moments during a stream of tool
// calls. Every time the store opens, no answered state is ever
// contradicted, no record is half written, the jobs that were running end
// interrupted with their processes gone, and no unrelated process is
// signalled: a reused group id planted on purpose survives.
func TestRow06KillNineDuringCalls(t *testing.T) {
	rounds := count(8, 200)
	dir := newStateDir(t)
	book := &answerBook{last: map[string]answered{}, final: map[string]answered{}, pids: map[int]answered{}}
	survivor, group := plantReusedGroup(t)
	planted := 0
	var d *daemon
	for round := range rounds {
		d = startDaemon(t, dir) // the store must open every time
		s := d.MCP()
		stop := make(chan struct{})
		done := make(chan struct{})
		go func() { crashStream(s, book, stop, uint64(round)); close(done) }()
		time.Sleep(time.Duration(10+rand.IntN(300)) * time.Millisecond) // a random moment
		d.Kill()
		close(stop)
		<-done
		s.Close()
		// While no daemon runs: a record whose group id now belongs to
		// the planted process (its leader gone, a start time before it).
		if round%4 == 0 {
			st, err := store.Open(filepath.Join(dir, "hive.db"))
			if err != nil {
				t.Fatalf("round %d: the store does not open after kill -9: %v", round, err)
			}
			if err := st.PutJob(context.Background(), store.Job{ID: fmt.Sprintf("planted-%d", round), Cmd: "sleep 3600",
				State: "running", Pid: group, PidStart: 1, BootID: proc.BootID(), Created: time.Now(), Started: time.Now()}); err != nil {
				t.Fatal(err)
			}
			st.Close()
			planted++
		}
	}
	d = startDaemon(t, dir)
	base := d.Settled()
	checkAnswers(t, d, book)
	// The jobs that were running are gone with the daemons, processes and
	// all (the new daemon's recovery ended them).
	hivetest.Wait(20*time.Second, noneMarked(dir)) // the check follows
	left := marked(dir)
	if len(left) > 0 {
		t.Errorf("%d processes of jobs survived the crashes: %v", len(left), left)
	}
	if !hivetest.Alive(survivor) {
		t.Errorf("the unrelated process %d in reused group %d was signalled", survivor, group)
	}
	book.mu.Lock()
	figure(t, 6, "kill -9 ×%d during tool calls: the store opened every time; %d answers (%d jobs) checked, 0 contradicted; 0 half records; %d processes left; planted reused group id (%d records) survived: %v",
		rounds, book.n, len(book.last)+len(book.pids), len(left), planted, hivetest.Alive(survivor))
	book.mu.Unlock()
	d.CheckBaseline(base)
}

// checkAnswers compares every record with what clients were told.
func checkAnswers(t *testing.T, d *daemon, book *answerBook) {
	t.Helper()
	resp, err := d.Call(proto.Request{Cmd: proto.CmdPs, All: true})
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]view.Job{}
	byPid := map[int]view.Job{}
	for _, j := range resp.Jobs {
		byID[j.ID] = j
		if j.Pid > 0 {
			byPid[j.Pid] = j
		}
		// No half record: every field a state implies is there.
		switch {
		case !terminal(j.State):
			t.Errorf("job %s is %s after the restart: nothing runs after a crash", j.ID, j.State)
		case j.Ended.IsZero():
			t.Errorf("job %s is %s without an end time", j.ID, j.State)
		case j.State == "done" && j.ExitCode == nil:
			t.Errorf("job %s is done without an exit code", j.ID)
		case j.State == "interrupted" && j.Error == "":
			t.Errorf("job %s is interrupted without saying why", j.ID)
		}
	}
	// ps lists 200 at most: ask for the others one by one.
	lookup := func(id string) (view.Job, bool) {
		if j, ok := byID[id]; ok {
			return j, true
		}
		r, err := d.Call(proto.Request{Cmd: proto.CmdStatus, ID: id})
		if err != nil {
			return view.Job{}, false
		}
		return *r.Job, true
	}
	book.mu.Lock()
	defer book.mu.Unlock()
	for id, a := range book.last {
		j, ok := lookup(id)
		if !ok {
			t.Errorf("job %s was answered %s (%s) and is unknown after the crash", id, a.state, a.by)
			continue
		}
		if f, ok := book.final[id]; ok && (j.State != f.state || !sameExit(j.ExitCode, f.exit)) {
			t.Errorf("job %s was answered %s exit %v (%s), the store says %s exit %v", id, f.state, deref(f.exit), f.by, j.State, deref(j.ExitCode))
		}
	}
	for pid, a := range book.pids {
		j, ok := byPid[pid]
		if !ok {
			continue // not among the 200 newest: ps is the only index by pid
		}
		if j.State != a.state || !sameExit(j.ExitCode, a.exit) {
			t.Errorf("terminal_exec pid %d was answered exit %v, the store says %s exit %v", pid, deref(a.exit), j.State, deref(j.ExitCode))
		}
	}
}

func deref(p *int) any {
	if p == nil {
		return nil
	}
	return *p
}
