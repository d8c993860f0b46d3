package bench

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hivetools/hive/internal/hivetest"
)

const captureBytes = 1 << 30 // 1 GiB

// BenchmarkCapture1G compares capturing 1 GiB of stdout through the daemon
// (a `run` job of `head -c 1073741824 /dev/zero`, waited for with `status`)
// against the same bytes piped by bash into a file in the same directory:
// `head -c 1073741824 /dev/zero | cat > FILE`. Each iteration does one of
// each (taking turns at going first) and deletes both files. It is
// expensive: run it with -benchtime=2x to 6x.
//
// Metrics: hive-MB/s and bash-MB/s (1 MB = 1e6 bytes),
// throughput-ratio = bash time / hive time over all iterations (target
// >= 0.8), median-ratio = the median of the iterations' own ratios (one
// slow iteration of either side, which this VM's neighbours cause now and
// then, moves it less; the iterations are logged),
// daemon-peak-rss-MiB = VmHWM of the daemon at the end (target < 100),
// daemon-cpu-s/GiB = daemon CPU time (user+sys) per GiB captured. With a
// holder of the jobs (the default on Linux) the bytes flow through the
// holder, not the daemon: holder-peak-rss-MiB and holder-cpu-s/GiB are the
// same figures for the holder (absent with --hold-jobs=false, see
// HIVE_BENCH_DAEMON_ARGS). The built-in ns/op is the whole iteration (both
// sides, checks, deletes and a sync); ignore it.
func BenchmarkCapture1G(b *testing.B) {
	d := startDaemon(b)
	free, err := freeBytes(d.Dir)
	if err != nil {
		b.Fatal(err)
	}
	if free < 4<<30 {
		b.Skipf("%s: %d MiB free, need 4 GiB", d.Dir, free>>20)
	}
	sess := connectMCP(b, d)
	ctx := context.Background()
	cmdline := fmt.Sprintf("head -c %d /dev/zero", captureBytes)
	baseFile := filepath.Join(d.Dir, "baseline.out")

	// cpu reads the CPU time of the daemon and of the holder (0 without one).
	cpu := func() (daemonCPU, holderCPU time.Duration) {
		daemonCPU, err := procCPU(d.Pid)
		if err != nil {
			b.Fatal(err)
		}
		if d.holderPID > 0 {
			if holderCPU, err = procCPU(d.holderPID); err != nil {
				b.Fatalf("holder: %v", err)
			}
		}
		return daemonCPU, holderCPU
	}

	// hiveSide captures through the daemon (and its holder); bashSide is
	// the baseline. Each returns its wall time.
	var cpuD, holderCPUD time.Duration
	hiveSide := func() time.Duration {
		dcpu0, hcpu0 := cpu()
		t0 := time.Now()
		st, err := runAndWait(ctx, sess, cmdline)
		d := time.Since(t0)
		if err != nil {
			b.Fatal(err)
		}
		dcpu1, hcpu1 := cpu()
		cpuD += dcpu1 - dcpu0
		holderCPUD += hcpu1 - hcpu0
		if err := wantDone(st); err != nil {
			b.Fatal(err)
		}
		if st.StdoutBytes != captureBytes || st.Dropped != 0 {
			b.Fatalf("task %s: stdout_bytes %d dropped %d, want %d, 0", st.ID, st.StdoutBytes, st.Dropped, captureBytes)
		}
		if err := wantSize(st.StdoutPath, captureBytes); err != nil {
			b.Fatal(err)
		}
		os.Remove(st.StdoutPath)
		os.Remove(st.StderrPath)
		syncDisks()
		return d
	}
	bashSide := func() time.Duration {
		t0 := time.Now()
		err := exec.Command("bash", "-c", cmdline+" | cat > "+baseFile).Run()
		d := time.Since(t0)
		if err != nil {
			b.Fatalf("baseline: %v", err)
		}
		if err := wantSize(baseFile, captureBytes); err != nil {
			b.Fatal(err)
		}
		os.Remove(baseFile)
		syncDisks()
		return d
	}

	var hiveD, bashD time.Duration
	var ratios []float64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		// The sides take turns going first: whatever the first one leaves
		// (the page cache of a file just deleted, a flush) falls on each
		// side alike.
		var hiveI, bashI time.Duration
		if i%2 == 0 {
			hiveI = hiveSide()
			bashI = bashSide()
		} else {
			bashI = bashSide()
			hiveI = hiveSide()
		}
		hiveD += hiveI
		bashD += bashI
		ratios = append(ratios, bashI.Seconds()/hiveI.Seconds())
		b.Logf("iteration %d: hive %v, bash %v", i, hiveI.Round(time.Millisecond), bashI.Round(time.Millisecond))
	}
	b.StopTimer()
	hwm, err := procStatusKiB(d.Pid, "VmHWM")
	if err != nil {
		b.Fatal(err)
	}
	total := float64(captureBytes) * float64(b.N)
	b.ReportMetric(total/1e6/hiveD.Seconds(), "hive-MB/s")
	b.ReportMetric(total/1e6/bashD.Seconds(), "bash-MB/s")
	b.ReportMetric(bashD.Seconds()/hiveD.Seconds(), "throughput-ratio")
	slices.Sort(ratios)
	b.ReportMetric(ratios[len(ratios)/2], "median-ratio")
	b.ReportMetric(float64(hwm)/1024, "daemon-peak-rss-MiB")
	b.ReportMetric(cpuD.Seconds()/float64(b.N), "daemon-cpu-s/GiB")
	if d.holderPID > 0 {
		hwm, err := procStatusKiB(d.holderPID, "VmHWM")
		if err != nil {
			b.Fatalf("holder: %v", err)
		}
		b.ReportMetric(float64(hwm)/1024, "holder-peak-rss-MiB")
		b.ReportMetric(holderCPUD.Seconds()/float64(b.N), "holder-cpu-s/GiB")
	}
}

// runAndWait starts cmd with the run tool (wait_seconds 0) and calls status
// (wait_seconds 30) until the job has ended.
func runAndWait(ctx context.Context, sess *mcp.ClientSession, cmd string) (taskStatus, error) {
	res, err := sess.CallTool(ctx, &mcp.CallToolParams{Name: "run", Arguments: map[string]any{"cmd": cmd, "wait_seconds": 0}})
	if err != nil {
		return taskStatus{}, fmt.Errorf("call run: %w", err)
	}
	st, err := decodeStatus(res)
	if err != nil {
		return st, err
	}
	if st.terminal() {
		return st, nil
	}
	err = hivetest.Wait(5*time.Minute, func() error {
		res, err := sess.CallTool(ctx, &mcp.CallToolParams{Name: "status", Arguments: map[string]any{"id": st.ID, "wait_seconds": 30}})
		if err != nil {
			return hivetest.Abort(fmt.Errorf("call status %s: %w", st.ID, err))
		}
		if st, err = decodeStatus(res); err != nil {
			return hivetest.Abort(err)
		}
		if !st.terminal() {
			return fmt.Errorf("task %s still %s", st.ID, st.Status)
		}
		return nil
	})
	return st, err
}

func wantSize(path string, n int64) error {
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	if fi.Size() != n {
		return fmt.Errorf("%s: %d bytes, want %d", path, fi.Size(), n)
	}
	return nil
}
