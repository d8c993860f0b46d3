package handles

import (
	"testing"
	"time"

	"github.com/hivetools/hive/internal/output"
)

func stream(t *testing.T, data string) *output.Stream {
	t.Helper()
	s, err := output.Create("", nil)
	if err != nil {
		t.Fatal(err)
	}
	s.Write([]byte(data))
	s.Close()
	return s
}

func TestTTLRefreshedByAccess(t *testing.T) {
	now := time.Unix(1000, 0)
	s := New(&Options{TTL: time.Minute, Now: func() time.Time { return now }})
	id := s.Put(map[string]*output.Stream{"stdout": stream(t, "abc")}, 3)
	now = now.Add(50 * time.Second)
	st, ok := s.Get(id, "stdout")
	if !ok || st == nil {
		t.Fatal("handle gone before its TTL")
	}
	c, _ := st.Read(0, 10)
	if string(c.Data) != "abc" {
		t.Errorf("data %q", c.Data)
	}
	now = now.Add(50 * time.Second) // 100 s after Put, 50 s after the last access
	if _, ok := s.Get(id, "stdout"); !ok {
		t.Fatal("access did not refresh the TTL")
	}
	now = now.Add(61 * time.Second)
	if _, ok := s.Get(id, "stdout"); ok {
		t.Fatal("handle outlived its TTL")
	}
	if n, b := s.Len(); n != 0 || b != 0 {
		t.Errorf("after expiry: %d handles, %d bytes", n, b)
	}
}

func TestCapEvictsLeastRecentlyUsed(t *testing.T) {
	s := New(&Options{Cap: 100})
	a := s.Put(map[string]*output.Stream{"stdout": stream(t, "a")}, 40)
	b := s.Put(map[string]*output.Stream{"stdout": stream(t, "b")}, 40)
	s.Get(a, "stdout") // a is now the most recently used
	c := s.Put(map[string]*output.Stream{"stdout": stream(t, "c")}, 40)
	if _, ok := s.Get(b, "stdout"); ok {
		t.Error("b should have been evicted (least recently used)")
	}
	for _, id := range []string{a, c} {
		if _, ok := s.Get(id, "stdout"); !ok {
			t.Errorf("%s evicted", id)
		}
	}
	if _, b := s.Len(); b != 80 {
		t.Errorf("bytes %d, want 80", b)
	}
	big := s.Put(map[string]*output.Stream{"stdout": stream(t, "x")}, 500)
	if _, ok := s.Get(big, "stdout"); !ok {
		t.Error("a handle larger than the cap is kept alone")
	}
	if n, _ := s.Len(); n != 1 {
		t.Errorf("%d handles, want only the big one", n)
	}
}

func TestUnknownStream(t *testing.T) {
	s := New(nil)
	id := s.Put(map[string]*output.Stream{"stdout": stream(t, "a")}, 1)
	if st, ok := s.Get(id, "stderr"); !ok || st != nil {
		t.Errorf("missing stream: %v %v", st, ok)
	}
	if _, ok := s.Get("out_nope", "stdout"); ok {
		t.Error("unknown handle found")
	}
}
