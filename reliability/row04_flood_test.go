package reliability

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"testing"
	"time"

	"github.com/hivetools/hive/internal/hivetest"
	"github.com/hivetools/hive/internal/proc"
)

// statusProbe is the pace of row 4's status calls: quick at the small
// count, whose flood is over in a few hundred ms, slower at the full
// count. Calls back to back would measure their own garbage instead of
// the flood's: each MCP status call of a job printing zeros leaves about
// 250 KB behind in the daemon, and at its GOGC of 400 that piles up
// (8 × 1 GiB with 349 calls back to back peaked at 149 MiB; with one
// every 50 ms, at 73 MiB).
func statusProbe() time.Duration { return time.Duration(count(10, 50)) * time.Millisecond }

// Row 4: jobs that flood stdout at once, far past the file cap: the
// daemon's memory stays bounded, each output file stops exactly at the
// cap, the counts are exact (stdout_bytes the total, stdout_dropped the
// rest past the cap), and status stays quick during the flood.
func TestRow04OutputFlood(t *testing.T) {
	const jobs = 8
	fileCap := int64(count(8, 256)) << 20
	dir := newStateDir(t)
	d := startDaemon(t, dir, "--file-cap", fmt.Sprint(fileCap))
	base := d.Settled()
	s := d.MCP()
	// Long enough that status calls come during it; on a machine fast
	// or busy enough that no call saw a job running (the jobs poured all
	// they had while the last ones were started, or during the first
	// call), once more with four times as much.
	var total int64
	var ids []string
	var lat, echoLat []time.Duration
	for _, mib := range []int{count(256, 1024), 4 * count(256, 1024)} {
		total = int64(mib) << 20
		ids, lat, echoLat = floodJobs(t, s, jobs, total)
		if len(lat) > 0 {
			break
		}
	}
	atCap, exact := 0, 0
	for _, id := range ids {
		var st struct {
			task
			Path string `json:"stdout_path"`
		}
		s.MustCall("status", map[string]any{"id": id, "wait_seconds": 30}, &st)
		if st.Status != "done" || st.ExitCode == nil || *st.ExitCode != 0 {
			t.Fatalf("job %s: %+v", id, st)
		}
		if st.StdoutB == total && st.StdoutDrop == total-fileCap {
			exact++
		} else {
			t.Errorf("job %s: stdout_bytes %d, stdout_dropped %d; want %d and %d", id, st.StdoutB, st.StdoutDrop, total, total-fileCap)
		}
		if fi, err := os.Stat(st.Path); err != nil {
			t.Errorf("job %s: output file: %v", id, err)
		} else if fi.Size() != fileCap {
			t.Errorf("job %s: output file %s: %d bytes, want exactly the cap, %d", id, st.Path, fi.Size(), fileCap)
		} else {
			atCap++
		}
	}
	s.Close()
	peak := d.Stats().PeakRSS
	// The bytes flow through the holder of the jobs: its memory counts.
	var holderPeak int64
	if h := hivetest.HolderPid(d.Dir); h > 0 {
		if u, ok := proc.ReadUsage(h); ok {
			holderPeak = u.PeakRSS
		}
	}
	var worst, echoWorst time.Duration
	if len(lat) > 0 {
		worst, echoWorst = slices.Max(lat), slices.Max(echoLat)
	}
	figure(t, 4, "flood %d jobs × %d MiB at once, --file-cap %d MiB: daemon peak RSS %.1f MiB, holder's %.1f MiB; %d/%d files exactly at the cap, %d/%d stdout_bytes and stdout_dropped exact; %d status calls during the flood, slowest %v (a line echoed by a process of the test's own: slowest %v)",
		jobs, total>>20, fileCap>>20, float64(peak)/(1<<20), float64(holderPeak)/(1<<20), atCap, jobs, exact, jobs, len(lat), worst.Round(100*time.Microsecond), echoWorst.Round(100*time.Microsecond))
	if peak+holderPeak >= 100<<20 && !raceBuild {
		t.Errorf("peak RSS: daemon %d MiB + holder %d MiB, want < 100 MiB together", peak>>20, holderPeak>>20)
	}
	if len(lat) == 0 {
		t.Errorf("no status call was made while the flood ran")
	}
	// Under 200 ms, or, where the machine itself wakes a process that
	// late, within 4 times its slowest echo (a status call wakes the
	// bridge, the daemon, the bridge and the test: four wake-ups to the
	// echo's two).
	if worst >= 200*time.Millisecond && worst >= 4*echoWorst {
		t.Errorf("a status call during the flood took %v, want < 200 ms (or 4 times the slowest echo, %v)", worst, echoWorst)
	}
	d.CheckBaseline(base)
}

// floodJobs starts jobs `head -c total /dev/zero` at once over s, then
// calls status on each running job in turn until all have ended: the
// status calls' times while their job ran, and the times of a line
// echoed by a process of the test's own after each.
func floodJobs(t *testing.T, s *hivetest.Session, jobs int, total int64) (ids []string, lat, echoLat []time.Duration) {
	t.Helper()
	ids = make([]string, jobs)
	for i := range ids {
		var st task
		s.MustCall("run", map[string]any{"cmd": fmt.Sprintf("head -c %d /dev/zero", total), "wait_seconds": 0}, &st)
		if st.ID == "" || st.Status != "running" {
			t.Fatalf("job %d: %+v", i, st)
		}
		ids[i] = st.ID
	}
	// The machine's own latency under the flood, the baseline: a line
	// echoed by a process of the test's own (cat), timed after each
	// status call. On two cores eight jobs pouring at full speed delay
	// any process's wake-up, the test's own included (100 ms and more
	// seen on a loaded VM): a status call is slow only against that.
	echo := exec.Command("cat")
	echoIn, _ := echo.StdinPipe()
	echoOut, _ := echo.StdoutPipe()
	if err := echo.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { echoIn.Close(); echo.Wait() }()
	echoR := bufio.NewReader(echoOut)
	// A status call on each running job in turn, at once and then at the
	// pace of statusProbe (an agent checking in, not a tight loop),
	// until every job has ended; the job started last first.
	tick := time.NewTicker(statusProbe())
	defer tick.Stop()
	ended := map[string]bool{}
	for k := 0; len(ended) < jobs; k++ {
		id := ids[jobs-1-k%jobs]
		if ended[id] {
			continue
		}
		var st task
		t0 := time.Now()
		s.MustCall("status", map[string]any{"id": id}, &st)
		if el := time.Since(t0); st.Status == "running" {
			lat = append(lat, el)
			t1 := time.Now()
			echoIn.Write([]byte("x\n"))
			if _, err := echoR.ReadString('\n'); err != nil {
				t.Fatal(err)
			}
			echoLat = append(echoLat, time.Since(t1))
		} else {
			ended[id] = true
		}
		<-tick.C
	}
	return ids, lat, echoLat
}
