package supervise_test

import (
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/hivetools/hive/internal/supervise"
)

// Each listed item, against where the manager stands: an end is always
// told; a running item is stopped only when the manager neither holds
// nor starts it, and never while it adopts.
func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		adopting, ended bool
		st              supervise.Standing
		want            supervise.Action
	}{
		{false, true, supervise.Unknown, supervise.TellEnd},
		{false, true, supervise.Held, supervise.TellEnd},
		{true, true, supervise.Unknown, supervise.TellEnd},
		{false, false, supervise.Held, supervise.TellProgress},
		{false, false, supervise.Starting, supervise.TellProgress},
		{false, false, supervise.Unknown, supervise.StopStray},
		{false, false, supervise.Other, supervise.StopStray},
		{true, false, supervise.Unknown, supervise.TellProgress},
		{true, false, supervise.Other, supervise.TellProgress},
	} {
		t.Run(fmt.Sprintf("adopting=%v,ended=%v,standing=%d", tc.adopting, tc.ended, tc.st), func(t *testing.T) {
			if got := supervise.Classify(tc.adopting, tc.ended, tc.st); got != tc.want {
				t.Errorf("Classify = %d, want %d", got, tc.want)
			}
		})
	}
}

// item is a listed thing of the fake kind: an id, and its end code if
// ended.
type item struct {
	id    string
	ended bool
	code  int
}

// fake is a Kind with no holder: it records what the Core asks of it.
// With holdRecords, Recorded keeps its callbacks until commit.
type fake struct {
	mu          sync.Mutex
	list        []item
	standing    map[string]supervise.Standing
	answer      map[string]supervise.Told // Tell's answer by id (NotOurs if absent)
	told        []string
	stopped     []string
	dropped     []string
	acked       []string
	held        []string
	flight      []string
	interrupted []string
	holdRecords bool
	recorded    []func()
}

func (f *fake) List() ([]item, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.list), nil
}
func (f *fake) ID(x item) string           { return x.id }
func (f *fake) End(x item) (int, bool)     { return x.code, x.ended }
func (f *fake) Progress(item)              {}
func (f *fake) Interrupt(t string)         { f.add(&f.interrupted, t) }
func (f *fake) Stop(id string) error       { f.add(&f.stopped, id); return nil }
func (f *fake) Drop(id string)             { f.add(&f.dropped, id) }
func (f *fake) Ack(id string) error        { f.add(&f.acked, id); return nil }
func (f *fake) add(to *[]string, s string) { f.mu.Lock(); *to = append(*to, s); f.mu.Unlock() }

func (f *fake) Standing(id string) supervise.Standing {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.standing[id]
}

func (f *fake) Tell(id string, code int) supervise.Told {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.told = append(f.told, fmt.Sprintf("%s=%d", id, code))
	return f.answer[id]
}

func (f *fake) Recorded(_ string, then func()) {
	f.mu.Lock()
	if f.holdRecords {
		f.recorded = append(f.recorded, then)
		f.mu.Unlock()
		return
	}
	f.mu.Unlock()
	then()
}

func (f *fake) commit() {
	f.mu.Lock()
	rs := f.recorded
	f.recorded = nil
	f.mu.Unlock()
	for _, r := range rs {
		r()
	}
}

func (f *fake) Supervised() (held, flight []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.held), slices.Clone(f.flight)
}

func (f *fake) Terminate(held, flight []string) int { return len(held) + 2*len(flight) }

func (f *fake) get(s *[]string) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Sorted(slices.Values(*s))
}

// An end the manager has already (its ack was lost) and one it has no
// use for are acked, but only once recorded; an end it takes is acked
// by the manager, not the Core.
func TestAckOnlyWhenRecorded(t *testing.T) {
	f := &fake{holdRecords: true, answer: map[string]supervise.Told{"mine": supervise.Taken, "again": supervise.Recorded}}
	c := supervise.New(f, supervise.Options{What: "test"})
	if err := c.Adopt(func(item, *int) bool { return false }); err != nil {
		t.Fatal(err)
	}
	c.Ended("mine", 0)
	c.Ended("again", 1)
	c.Ended("gone", 2)
	if got := f.get(&f.told); !slices.Equal(got, []string{"again=1", "gone=2", "mine=0"}) {
		t.Errorf("told %v, want every end told once", got)
	}
	if got := f.get(&f.acked); len(got) != 0 {
		t.Fatalf("acked %v before anything was recorded", got)
	}
	if got := f.get(&f.dropped); !slices.Equal(got, []string{"gone"}) {
		t.Errorf("dropped %v, want only the end no one has (gone)", got)
	}
	f.commit()
	if got := f.get(&f.acked); !slices.Equal(got, []string{"again", "gone"}) {
		t.Errorf("acked %v once recorded, want again and gone (mine is the manager's to ack)", got)
	}
}

// While adopting, ends are kept: not told before Adopt, and then given
// to what was adopted (told again after, counting once) or forgotten.
// What the listing has with no record is stopped if it runs, forgotten
// if it ended; a stray is never stopped while adopting.
func TestAdoptKeepsEarlyEnds(t *testing.T) {
	f := &fake{list: []item{{id: "a"}, {id: "b"}, {id: "norec"}, {id: "ended", ended: true, code: 3}},
		answer: map[string]supervise.Told{"a": supervise.Taken}}
	c := supervise.New(f, supervise.Options{What: "test"})
	if !c.Adopting() {
		t.Fatal("a new Core is not adopting")
	}
	c.Ended("a", 7)
	c.Ended("elsewhere", 9)
	c.Resync() // while adopting: nothing is a stray
	if got := f.get(&f.told); len(got) != 0 {
		t.Fatalf("told %v while adopting", got)
	}
	if got := f.get(&f.stopped); len(got) != 0 {
		t.Fatalf("stopped %v while adopting", got)
	}
	early := map[string]int{}
	err := c.Adopt(func(x item, e *int) bool {
		if e != nil {
			early[x.id] = *e
		}
		return x.id == "a" || x.id == "b"
	})
	if err != nil {
		t.Fatal(err)
	}
	if c.Adopting() {
		t.Error("still adopting after Adopt")
	}
	// The resync told the listed end again: kept as early too.
	if len(early) != 2 || early["a"] != 7 || early["ended"] != 3 {
		t.Errorf("early ends given to adopt: %v, want a=7 and ended=3", early)
	}
	if got := f.get(&f.stopped); !slices.Equal(got, []string{"norec"}) {
		t.Errorf("stopped %v, want the running one with no record", got)
	}
	if got := f.get(&f.acked); !slices.Equal(got, []string{"elsewhere", "ended"}) {
		t.Errorf("acked %v, want the ended one with no record (once) and the early end of nothing adopted", got)
	}
	if got := f.get(&f.told); !slices.Equal(got, []string{"a=7"}) {
		t.Errorf("told %v after adopting, want the early end of a", got)
	}
}

// After adopting, a resync tells ends and stops what the manager neither
// holds nor starts.
func TestResyncStopsStrays(t *testing.T) {
	f := &fake{standing: map[string]supervise.Standing{"held": supervise.Held, "starting": supervise.Starting, "other": supervise.Other},
		answer: map[string]supervise.Told{"done": supervise.Taken}}
	c := supervise.New(f, supervise.Options{What: "test"})
	if err := c.Adopt(func(item, *int) bool { return false }); err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	f.list = []item{{id: "held"}, {id: "starting"}, {id: "other"}, {id: "unknown"}, {id: "done", ended: true, code: 1}}
	f.mu.Unlock()
	c.Resync()
	if got := f.get(&f.stopped); !slices.Equal(got, []string{"other", "unknown"}) {
		t.Errorf("stopped %v, want other and unknown", got)
	}
	if got := f.get(&f.told); !slices.Equal(got, []string{"done=1"}) {
		t.Errorf("told %v, want the end of done", got)
	}
}

// A lost holder: held and in-flight things are terminated, only held
// ones are interrupted; with neither, nothing is done.
func TestLost(t *testing.T) {
	f := &fake{}
	c := supervise.New(f, supervise.Options{What: "test"})
	if h, n := c.Lost(); h != 0 || n != 0 {
		t.Errorf("Lost with nothing held: %d held, %d terminated", h, n)
	}
	f.held, f.flight = []string{"h1", "h2"}, []string{"f1"}
	h, n := c.Lost()
	if h != 2 || n != 4 {
		t.Errorf("Lost: %d held, %d terminated; want 2 and 4 (Terminate saw both lists)", h, n)
	}
	if got := f.get(&f.interrupted); !slices.Equal(got, []string{"h1", "h2"}) {
		t.Errorf("interrupted %v, want the held ones only", got)
	}
}
