//go:build unix

package sockapi

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hivetools/hive/internal/agent"
	"github.com/hivetools/hive/internal/client"
	"github.com/hivetools/hive/internal/errdefs"
	"github.com/hivetools/hive/internal/inbox"
	"github.com/hivetools/hive/internal/job"
	"github.com/hivetools/hive/internal/listen"
	"github.com/hivetools/hive/internal/paths"
	"github.com/hivetools/hive/internal/proto"
	"github.com/hivetools/hive/internal/service"
	"github.com/hivetools/hive/internal/store"
)

// testDaemon is the daemon side of the hooks: it answers version and
// stats plainly and records the stop requests; busy makes it refuse a
// stop if idle.
type testDaemon struct {
	srv *Server

	mu    sync.Mutex
	busy  bool
	stops []StopRequest
}

func (d *testDaemon) setBusy(b bool) {
	d.mu.Lock()
	d.busy = b
	d.mu.Unlock()
}

func (d *testDaemon) Version(bool) proto.Response { return proto.Response{OK: true, Version: "test"} }
func (d *testDaemon) Stats() *proto.Stats {
	return &proto.Stats{InboxWaiters: d.srv.InboxWaiters()}
}
func (d *testDaemon) DashboardURL() (string, error) { return "", errors.New("no dashboard here") }
func (d *testDaemon) Stop(r StopRequest) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if r.IfIdle && d.busy {
		return &BusyError{Activity: proto.Activity{Jobs: 1}}
	}
	d.stops = append(d.stops, r)
	return nil
}

// serve runs a Server on real engines and a real socket in a temp dir
// (short: it holds the socket). Serve's result comes on the returned
// channel; the test closes the server when Serve has returned.
func serve(t testing.TB) (paths.Layout, *Server, *testDaemon, <-chan error) {
	t.Helper()
	dir, err := os.MkdirTemp("", "hive-s-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	l := paths.Layout{Dir: dir}
	if err := l.MakeDirs(); err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(l.DB())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	ib, err := inbox.New(inbox.Options{Store: st, Layout: l})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ib.Close)
	jobs, err := job.New(job.Options{Dir: l.Tasks(), Store: st})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { jobs.Close(context.Background()) })
	ag, err := agent.New(context.Background(), st, l, "test")
	if err != nil {
		t.Fatal(err)
	}
	svc := service.New(service.Service{Jobs: jobs, Inbox: ib, Agent: ag, Layout: l, Version: "test", Activity: &service.Activity{}})
	d := &testDaemon{}
	srv := New(Options{Service: svc, Daemon: d, RequestTimeout: 2 * time.Second})
	d.srv = srv
	ln, err := listen.Unix(l.Socket())
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(context.Background(), ln) }()
	return l, srv, d, served
}

// A stop request the daemon refuses changes nothing; one it takes is
// answered at once, ends Serve and the waits under way, and is answered
// again by AnswerStopped.
func TestStopEndsServe(t *testing.T) {
	l, srv, d, served := serve(t)

	d.setBusy(true)
	c, err := client.Dial(l)
	if err != nil {
		t.Fatal(err)
	}
	c.Write([]byte(`{"cmd":"stop","if_idle":true}` + "\n"))
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	line, err := bufio.NewReader(c).ReadString('\n')
	c.Close()
	var resp proto.Response
	if err := json.Unmarshal([]byte(line), &resp); err != nil {
		t.Fatalf("stop if idle of a busy daemon: %q %v", line, err)
	}
	if !errors.Is(resp.Err(), errdefs.ErrConflict) || resp.Error != "the daemon is busy: 1 job(s) running or pending" ||
		resp.Activity == nil || resp.Activity.Jobs != 1 {
		t.Fatalf("stop if idle of a busy daemon: %s", line)
	}
	d.setBusy(false)
	if v := call(t, l, proto.Request{Cmd: proto.CmdVersion}); v.Version != "test" {
		t.Fatalf("after a refused stop: %+v", v)
	}

	// A wait under way hears that the daemon stops.
	waited := make(chan error, 1)
	go func() {
		_, err := client.CallWait(context.Background(), l, proto.Request{Cmd: proto.CmdInboxNext, Wait: true})
		waited <- err
	}()
	for deadline := time.Now().Add(10 * time.Second); srv.InboxWaiters() != 1; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the inbox_next never waited")
		}
	}

	c, err = client.Dial(l)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.Write([]byte(`{"cmd":"stop","grace_secs":1.5}` + "\n"))
	br := bufio.NewReader(c)
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if line, err := br.ReadString('\n'); err != nil || !strings.Contains(line, `"ok":true`) {
		t.Fatalf("stop's first answer: %q %v", line, err)
	}
	select {
	case err := <-served:
		if err != nil {
			t.Errorf("Serve: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return after the stop request")
	}
	select {
	case err := <-waited:
		if err == nil || !strings.Contains(err.Error(), "the daemon is stopping") {
			t.Errorf("inbox_next at the stop: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a waiting inbox_next did not end at the stop request")
	}
	d.mu.Lock()
	if len(d.stops) != 1 || d.stops[0] != (StopRequest{Grace: 1500 * time.Millisecond}) {
		t.Errorf("the daemon got the stops %+v, want one with 1.5 s of grace", d.stops)
	}
	d.mu.Unlock()
	if _, err := client.Dial(l); err == nil {
		t.Error("the socket still accepts after Serve returned")
	}

	srv.Close()
	srv.AnswerStopped()
	if line, err := br.ReadString('\n'); err != nil || !strings.Contains(line, `"ok":true`) {
		t.Fatalf("stop's second answer: %q %v", line, err)
	}
	if _, err := br.ReadString('\n'); err == nil {
		t.Error("the stop's connection stays open after its second answer")
	}
}

func call(t *testing.T, l paths.Layout, req proto.Request) proto.Response {
	t.Helper()
	resp, err := client.Call(l, req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// A bridge's MCP session on its own stdin and stdout, handed over with
// the request: the session reads and writes the pipes, and ends when the
// server closes.
func TestMCPOnHandedOverStdio(t *testing.T) {
	l, srv, _, served := serve(t)
	defer func() {
		cancelServe(t, l, served)
		srv.Close()
	}()
	inW, outR, closeStdio := openStdioMCP(t, l)
	defer closeStdio()
	inW.Write([]byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}` + "\n"))
	outR.SetReadDeadline(time.Now().Add(10 * time.Second))
	line, err := bufio.NewReader(outR).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	var answer struct {
		ID     int `json:"id"`
		Result struct {
			ServerInfo struct{ Name string } `json:"serverInfo"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(line), &answer); err != nil || answer.ID != 1 || answer.Result.ServerInfo.Name != "hive" {
		t.Fatalf("initialize's answer on the stdout pipe: %q %v", line, err)
	}
	if n := srv.MCPSessions(); n != 1 {
		t.Errorf("%d MCP sessions, want 1", n)
	}
}

// openStdioMCP opens an MCP session on a pair of pipes handed over with
// the request, as a bridge hands over its stdin and stdout: the test
// writes to in and reads out; closeAll ends the session and the pipes.
func openStdioMCP(t *testing.T, l paths.Layout) (in, out *os.File, closeAll func()) {
	t.Helper()
	return openStdioMCPWith(t, l, proto.Request{Cmd: proto.CmdMCP})
}

// openStdioMCPWith is openStdioMCP with the session's request req.
func openStdioMCPWith(t testing.TB, l paths.Layout, req proto.Request) (in, out *os.File, closeAll func()) {
	t.Helper()
	inR, inW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		t.Fatal(err)
	}
	closePipes := func() {
		for _, f := range []*os.File{outW, outR, inW, inR} {
			f.Close()
		}
	}
	c, err := client.OpenStdio(l, req, inR, outW)
	if err != nil {
		closePipes()
		t.Fatal(err)
	}
	return inW, outR, func() { c.Close(); closePipes() }
}

// cancelServe ends Serve with a stop request.
func cancelServe(t testing.TB, l paths.Layout, served <-chan error) {
	t.Helper()
	c, err := client.Dial(l)
	if err != nil {
		t.Fatal(err)
	}
	c.Write([]byte(`{"cmd":"stop"}` + "\n"))
	if err := <-served; err != nil {
		t.Errorf("Serve: %v", err)
	}
	c.Close()
}

// The first line of a connection is read whole, however many reads it
// takes, with the descriptors that came with its first bytes; what
// follows it is left to the returned reader.
func TestReadHello(t *testing.T) {
	dir, err := os.MkdirTemp("", "hive-h-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	ln, err := listen.Unix(dir + "/h.sock")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	for _, tt := range []struct {
		name string
		line string
		fds  bool
	}{
		{"short, with descriptors", `{"cmd":"mcp","stdio":true}`, true},
		{"longer than a read, with descriptors", `{"cmd":"mcp","cwd":"` + strings.Repeat("d", 200<<10) + `"}`, true},
		{"without descriptors", `{"cmd":"version"}`, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			pr, pw, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			defer pr.Close()
			defer pw.Close()
			cc, err := net.Dial("unix", dir+"/h.sock")
			if err != nil {
				t.Fatal(err)
			}
			defer cc.Close()
			sc, err := ln.Accept()
			if err != nil {
				t.Fatal(err)
			}
			defer sc.Close()
			sent := make(chan error, 1)
			go func() {
				var rights []byte
				if tt.fds {
					rights = unix.UnixRights(int(pr.Fd()), int(pw.Fd()))
				}
				_, _, err := cc.(*net.UnixConn).WriteMsgUnix([]byte(tt.line+"\nafter\n"), rights, nil)
				sent <- err
			}()
			sc.SetDeadline(time.Now().Add(10 * time.Second))
			line, br, fds, err := readHello(sc)
			if err != nil {
				t.Fatal(err)
			}
			if err := <-sent; err != nil {
				t.Fatal(err)
			}
			if string(line) != tt.line+"\n" {
				t.Errorf("line of %d bytes, want %d", len(line), len(tt.line)+1)
			}
			if rest, err := br.ReadString('\n'); rest != "after\n" {
				t.Errorf("after the line: %q %v", rest, err)
			}
			if !tt.fds {
				if len(fds) != 0 {
					t.Errorf("%d descriptors, want none", len(fds))
				}
				return
			}
			if len(fds) != 2 {
				t.Fatalf("%d descriptors, want 2", len(fds))
			}
			// They are the pipe's two ends.
			r, w := os.NewFile(uintptr(fds[0]), "r"), os.NewFile(uintptr(fds[1]), "w")
			defer r.Close()
			defer w.Close()
			w.Write([]byte("x"))
			var b [1]byte
			if n, err := r.Read(b[:]); n != 1 || b[0] != 'x' {
				t.Errorf("through the descriptors: %q %v", b[:n], err)
			}
		})
	}
}
