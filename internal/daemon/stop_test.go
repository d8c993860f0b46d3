package daemon

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/hivetools/hive/internal/client"
	"github.com/hivetools/hive/internal/listen"
	"github.com/hivetools/hive/internal/paths"
	"github.com/hivetools/hive/internal/proto"
)

// A stop request: a malformed one and one for an idle daemon that is
// busy are refused and change nothing; a real one ends Run, and its second
// answer comes only once the state dir is free for another daemon.
func TestStopRequest(t *testing.T) {
	dir, err := os.MkdirTemp("", "hive-d-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	l := paths.Layout{Dir: dir}
	ready := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- Run(context.Background(), Config{StateDir: dir, Logger: slog.New(slog.DiscardHandler), Ready: func() { close(ready) },
			Shell: []string{"bash", "-c"}})
	}()
	<-ready
	if got := rawRequest(t, l, []byte(`{"cmd":"stop","grace_secs":-1}`+"\n"), false); !strings.Contains(got, `grace_secs -1: must be 0..1e6`) {
		t.Errorf("stop with a negative grace: %s", got)
	}
	resp := call(t, l, proto.Request{Cmd: proto.CmdRun, Argv: []string{"sleep 3600"}, Name: "busy"})
	if !resp.OK {
		t.Fatalf("run: %s", resp.Error)
	}
	_, err = client.Stop(l, 0, true, 10*time.Second)
	if !errors.Is(err, client.ErrBusy) || !strings.Contains(err.Error(), "1 job(s) running or pending") {
		t.Errorf("stop if idle of a busy daemon: %v", err)
	}
	if v := call(t, l, proto.Request{Cmd: proto.CmdVersion}); !v.OK || v.Activity == nil || v.Activity.Jobs != 1 {
		t.Fatalf("after a refused stop: %+v", v)
	}
	pid, err := client.Stop(l, 500*time.Millisecond, false, 20*time.Second)
	if err != nil || pid != os.Getpid() {
		t.Fatalf("stop: %d %v", pid, err)
	}
	// Stop returned: another daemon may take the state dir at once.
	unlock, err := listen.Lock(l.Lock())
	if err != nil {
		t.Errorf("lock after stop: %v", err)
	} else {
		unlock()
	}
	if _, err := os.Stat(l.Socket()); !os.IsNotExist(err) {
		t.Errorf("socket after stop: %v", err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run after a stop: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after the stop")
	}
}
