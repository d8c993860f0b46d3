package job

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hivetools/hive/internal/hivetest"
	"github.com/hivetools/hive/internal/output"
)

func init() { testHelper = splicePumpHelper }

// splicePumpHelper pumps the pipe at descriptor 3 into the stream file
// $HIVE_TEST_SPLICE_PUMP as a daemon pumps a kept job's stdout
// (pumpSpliced into its index's writer of a stream without a ring,
// newStreams; pump with HIVE_TEST_SPLICE_PLAIN set), says "pumping", and
// waits to be killed.
func splicePumpHelper() {
	path := os.Getenv("HIVE_TEST_SPLICE_PUMP")
	if path == "" {
		return
	}
	// A kept job's streams, as the daemon makes them (its index too).
	_, _, x, note := newStreams(path, path+".err", path+".idx", output.Options{FileCap: -1, Reserve: -1}, true)
	if note != "" || x == nil {
		fmt.Println("error:", note)
		os.Exit(1)
	}
	unix.SetNonblock(3, true) // to the runtime's poller, as a daemon's pipes are
	mk := pumpSpliced
	if os.Getenv("HIVE_TEST_SPLICE_PLAIN") != "" {
		mk = pump
	}
	mk(os.NewFile(3, "pipe"), x.Writer(0), func() {})
	fmt.Println("pumping")
	select {}
}

// A kept job's output, pumped by splice(2) (pumpSpliced), is in the pipe
// or in the file whenever its daemon is killed -9: what the file holds
// and what the pipe still holds are, together, every byte written, in
// order (the holder goes on from the file's end). A pump that reads and
// then writes loses what it had read when it dies (run with
// HIVE_TEST_SPLICE_PLAIN=1 to see: most rounds lose bytes).
func TestSplicedPumpLosesNothingAtKill9(t *testing.T) {
	line := func(i int) []byte { return fmt.Appendf(nil, "%08d\n", i) }
	for round := range 10 {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(t.TempDir(), "out")
		helper := exec.Command(os.Args[0], "-test.run=^$")
		helper.Env = append(os.Environ(), "HIVE_TEST_SPLICE_PUMP="+path)
		helper.ExtraFiles = []*os.File{r}
		out, _ := helper.StdoutPipe()
		helper.Stderr = os.Stderr
		if err := helper.Start(); err != nil {
			t.Fatal(err)
		}
		if l, err := bufio.NewReader(out).ReadString('\n'); err != nil || l != "pumping\n" {
			helper.Process.Kill()
			helper.Wait()
			t.Fatalf("the pumping helper: %q %v", l, err)
		}
		// The job: numbered lines, as fast as the pipe takes them, 64 KiB
		// a write (the pump busy reading and writing, not waiting).
		var stop atomic.Bool
		lines := make(chan int, 1)
		go func() {
			i := 0
			var b []byte
			for !stop.Load() {
				b = b[:0]
				for range 7000 {
					b = append(b, line(i)...)
					i++
				}
				if _, err := w.Write(b); err != nil {
					break
				}
			}
			w.Close()
			lines <- i
		}()
		size := int64((round + 1) * 512 << 10)
		hivetest.Eventually(t, 10*time.Second, "the pump's file to grow", func() error {
			if fi, err := os.Stat(path); err != nil || fi.Size() < size {
				return fmt.Errorf("%v %v", fi, err)
			}
			return nil
		})
		helper.Process.Kill() // SIGKILL, mid-flood
		helper.Wait()
		// The rest, as the holder reads it: from the pipe, after the file.
		unix.SetNonblock(int(r.Fd()), false)
		rest := make(chan []byte, 1)
		go func() {
			b, _ := io.ReadAll(r)
			rest <- b
		}()
		stop.Store(true)
		n := <-lines
		tail := <-rest
		r.Close()
		// Line by line, without holding all of it: this test process's
		// memory peak is what TestUsageMemoryPeak tells jobs apart from.
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		fi, _ := f.Stat()
		br := bufio.NewReader(io.MultiReader(f, bytes.NewReader(tail)))
		got, want := make([]byte, 9), make([]byte, 0, 9)
		for i := range n {
			_, err := io.ReadFull(br, got)
			if want = fmt.Appendf(want[:0], "%08d\n", i); !bytes.Equal(got, want) || err != nil {
				f.Close()
				t.Fatalf("round %d: the file (%d bytes) and the pipe's rest (%d) part from the %d lines written at line %d: %q, want %q (%v)",
					round, fi.Size(), len(tail), n, i, strings.TrimSpace(string(got)), strings.TrimSpace(string(want)), err)
			}
		}
		if extra, _ := io.ReadAll(br); len(extra) > 0 {
			t.Errorf("round %d: %d bytes more than written", round, len(extra))
		}
		f.Close()
	}
}

// A spliced stream that pours (64 KiB and more) is pumped on a thread of
// its own (pumper.ownThread, counted in bulkThreads), not on the thread
// the daemon's calls run on, and gives the thread back when it ends;
// past its file's cap it goes on being spliced (to /dev/null), every
// byte counted.
func TestSplicedPourOwnThread(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	path := filepath.Join(t.TempDir(), "out")
	s, err := output.Create(path, &output.Options{NoRing: true, FileCap: 100 << 10, Reserve: -1})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	before := bulkThreads.Load()
	pumpSpliced(r, s, func() { close(done) })
	chunk := make([]byte, 64<<10)
	for range 4 {
		if _, err := w.Write(chunk); err != nil {
			t.Fatal(err)
		}
	}
	hivetest.Eventually(t, 10*time.Second, "the pouring stream on a thread of its own", func() error {
		if n := bulkThreads.Load() - before; n != 1 {
			return fmt.Errorf("%d threads of pouring streams, want 1", n)
		}
		return nil
	})
	w.Close()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the pump did not end at the pipe's end")
	}
	if n := bulkThreads.Load() - before; n != 0 {
		t.Errorf("%d threads of pouring streams after the pump ended, want 0", n)
	}
	s.Close()
	if st := s.Stats(); st.Total != 4*64<<10 || st.InFile != 100<<10 || st.Dropped != 4*64<<10-100<<10 {
		t.Errorf("counts %+v, want %d in all, %d in the file, the rest dropped", st, 4*64<<10, 100<<10)
	}
}
