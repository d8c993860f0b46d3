package dashboard

import (
	"encoding/binary"
	"strings"
	"testing"
	"time"
)

// The hub keeps the latest ringEvents events: a stream that missed more
// cannot resume; one that missed fewer gets exactly what it missed.
func TestHubRing(t *testing.T) {
	h := newHub()
	if evs, ok, _ := h.since(0); !ok || len(evs) != 0 {
		t.Fatalf("empty hub: %v %v", evs, ok)
	}
	_, _, changed := h.since(0)
	for i := range ringEvents + 100 {
		h.publish("n", i)
	}
	select {
	case <-changed:
	default:
		t.Fatal("publish did not close the channel since gave")
	}
	last := h.last()
	if evs, ok, _ := h.since(last - 10); !ok || len(evs) != 10 || evs[0].seq != last-9 || string(evs[9].data) != "1123" {
		t.Errorf("since last-10: %d events, ok %v", len(evs), ok)
	}
	if _, ok, _ := h.since(50); ok {
		t.Error("since an event no longer kept: resumable")
	}
	if _, ok, _ := h.since(last + 1); ok {
		t.Error("since an event not yet made: resumable")
	}
	if n, ok := h.resume(h.id(7)); !ok || n != 7 {
		t.Errorf("resume %q: %d %v", h.id(7), n, ok)
	}
	for _, id := range []string{"", "x-7", h.epoch, h.epoch + "-x", newHub().id(7)} {
		if _, ok := h.resume(id); ok {
			t.Errorf("resume %q: accepted", id)
		}
	}
}

// A session cookie is good with its key until it expires; a changed
// byte, another key or a past expiry is refused; the CSRF token is the
// session's.
func TestSessionCookie(t *testing.T) {
	d := &Dashboard{o: Options{SessionLife: time.Hour}}
	key, other := []byte("k1"), []byte("k2")
	v, exp := d.newSession(key)
	if time.Until(exp) < 59*time.Minute {
		t.Errorf("expiry %v", exp)
	}
	sid, ok := session(key, v)
	if !ok {
		t.Fatal("a fresh cookie refused")
	}
	if _, ok := session(other, v); ok {
		t.Error("a cookie accepted with another key (a rotated token)")
	}
	bad := []byte(v)
	bad[3] ^= 1
	if _, ok := session(key, string(bad)); ok {
		t.Error("a changed cookie accepted")
	}
	// A cookie whose (signed) expiry has passed.
	payload := make([]byte, 24)
	binary.BigEndian.PutUint64(payload[16:], uint64(time.Now().Add(-time.Second).Unix()))
	old := b64.EncodeToString(payload) + "." + b64.EncodeToString(sign(key, []byte("session"), payload))
	if _, ok := session(key, old); ok {
		t.Error("an expired cookie accepted")
	}
	if csrf(key, sid) == csrf(key, sid+"x") || csrf(key, sid) == csrf(other, sid) {
		t.Error("CSRF tokens of different sessions or keys are equal")
	}
}

// Usage samples measure the daemon: some RSS, a CPU share that is not
// negative; the first measures the time since the process started.
func TestUsageSample(t *testing.T) {
	var s sampler
	for i := range 2 {
		smp, ok := s.sample()
		if ok && (smp.RSS <= 0 || smp.CPU < 0) {
			t.Errorf("sample %d: %+v", i, smp)
		}
	}
	if n := len(s.list()); n < 1 || n > 2 {
		t.Errorf("%d samples kept", n)
	}
}

// The ring is bounded by bytes as well as by count, and keeps one event
// of a key (a job's counters): a stream that missed the replaced ones
// still resumes.
func TestHubBounds(t *testing.T) {
	h := newHub()
	big := strings.Repeat("x", 300<<10)
	for range 10 {
		h.publish("big", big)
	}
	h.mu.Lock()
	n, size := len(h.ring), h.size
	h.mu.Unlock()
	if size > ringBytes || n != ringBytes/(300<<10) {
		t.Errorf("%d events of %d bytes kept (bound %d bytes)", n, size, ringBytes)
	}
	if _, ok, _ := h.since(1); ok {
		t.Error("since an event dropped for the bytes bound: resumable")
	}
	h.publish("huge", strings.Repeat("y", 2*ringBytes))
	if evs, ok, _ := h.since(h.last() - 1); !ok || len(evs) != 1 {
		t.Errorf("an event larger than the bound: not kept (%d, %v)", len(evs), ok)
	}
	h = newHub()
	h.publish("job", "a")
	for i := range 100 {
		h.publishKey("counters a", "job_counters", i)
	}
	h.publish("job", "b")
	evs, ok, _ := h.since(1)
	if !ok || len(evs) != 2 || string(evs[0].data) != "99" || evs[0].typ != "job_counters" {
		t.Errorf("after 100 counter events of one job: %d events %v", len(evs), ok)
	}
	if _, ok, _ := h.since(50); !ok {
		t.Error("a stream that missed replaced counter events cannot resume")
	}
}
