package job

import (
	"os"
	"testing"
)

// A start takes the set made ahead; the next set is made by refill; the
// set made ahead is close-on-exec, as every pipe of a job's, and close
// closes it (a take then makes its own).
func TestPipeSpare(t *testing.T) {
	s := newPipeSpare()
	ahead := s.set
	if ahead == nil {
		t.Fatal("no set made ahead")
	}
	for _, f := range []*os.File{ahead.outR, ahead.outW, ahead.errR, ahead.errW} {
		if !closeOnExec(t, f) {
			t.Errorf("%s: not close-on-exec", f.Name())
		}
	}
	p, err := s.take()
	if err != nil || p != ahead {
		t.Fatalf("take: %v, %v; want the set made ahead", p, err)
	}
	if s.set != nil {
		t.Fatal("the set taken is still kept")
	}
	q, err := s.take() // none ahead: made now
	if err != nil || q == nil || q == p {
		t.Fatalf("take with none ahead: %v, %v", q, err)
	}
	s.refill()
	next := s.set
	if next == nil {
		t.Fatal("refill made no set")
	}
	s.refill() // one set at most
	if s.set != next {
		t.Fatal("a second refill replaced the set")
	}
	s.close()
	if _, err := next.outR.Stat(); err == nil {
		t.Error("close left the set made ahead open")
	}
	s.refill()
	if s.set != nil {
		t.Error("refill after close made a set")
	}
	r, err := s.take()
	if err != nil || r == nil {
		t.Fatalf("take after close: %v, %v", r, err)
	}
	for _, set := range []*jobPipes{p, q, r} {
		set.closeAll()
	}
	var none *pipeSpare // a manager without one: each take makes its own
	if p, err := none.take(); err != nil || p == nil {
		t.Fatalf("take of none: %v, %v", p, err)
	} else {
		p.closeAll()
	}
	none.refill()
	none.close()
}
