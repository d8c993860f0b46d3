package service

import (
	"fmt"
	"testing"
)

func TestActivityRing(t *testing.T) {
	a := &Activity{Size: 3}
	calls, changed := a.Since(0)
	if len(calls) != 0 {
		t.Fatalf("empty ring: %v", calls)
	}
	for i := range 5 {
		a.Add(Call{Tool: fmt.Sprint("t", i)})
	}
	select {
	case <-changed:
	default:
		t.Fatal("Add did not close the channel Since gave")
	}
	calls, _ = a.Since(0)
	if len(calls) != 3 || calls[0].Tool != "t2" || calls[2].Tool != "t4" || calls[2].Seq != 5 {
		t.Fatalf("ring of 3 after 5 calls: %+v", calls)
	}
	if calls, _ = a.Since(4); len(calls) != 1 || calls[0].Tool != "t4" {
		t.Fatalf("since 4: %+v", calls)
	}
	var none *Activity
	none.Add(Call{}) // a nil Activity records nothing, without panicking
}
