package job

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/hivetools/hive/internal/hivetest"
)

// OnRecord hears of every job's committed records, a quiet attached
// job's too (no loose end), its end last and after the commit.
func TestOnRecord(t *testing.T) {
	var mu sync.Mutex
	heard := map[string][]State{}
	var h *harness
	h = newHarness(t, Options{OnRecord: func(in Info) {
		mu.Lock()
		defer mu.Unlock()
		heard[in.ID] = append(heard[in.ID], in.State)
		if in.State.Terminal() {
			// Committed: the store has the end already.
			if rec, err := h.st.GetJob(context.Background(), in.ID); err != nil || State(rec.State) != in.State {
				t.Errorf("OnRecord heard %s %s before its commit: store has %+v, %v", in.ID, in.State, rec, err)
			}
		}
	}})
	j := h.start(Spec{Cmd: "exit 4", Quiet: true})
	in := h.wait(j)
	if err := h.m.Sync(j); err != nil {
		t.Fatal(err)
	}
	hivetest.Eventually(t, 10*time.Second, "OnRecord of the job's end", func() error {
		mu.Lock()
		defer mu.Unlock()
		states := heard[in.ID]
		if len(states) == 0 || states[len(states)-1] != in.State || slices.Contains(states[:len(states)-1], in.State) {
			return fmt.Errorf("OnRecord heard %v of %s, want its end (%s) last and once", states, in.ID, in.State)
		}
		return nil
	})
}
