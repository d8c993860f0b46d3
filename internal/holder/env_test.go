//go:build unix

package holder

import (
	"bufio"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hivetools/hive/internal/holder/wire"
	"github.com/hivetools/hive/internal/job"
)

// envOf is the environment a job of the holder printed (`env -0` into
// its stdout file), without the holder's own mark.
func envOf(t *testing.T, dir, id string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, id+".out"))
	if err != nil {
		t.Fatal(err)
	}
	var env []string
	for _, kv := range strings.Split(strings.TrimSuffix(string(b), "\x00"), "\x00") {
		if !strings.HasPrefix(kv, EnvHolder+"=") {
			env = append(env, kv)
		}
	}
	return env
}

// envSpec is a job that prints its environment, which is base and then
// its marks (EnvTail 2), as a job.Manager's are.
func envSpec(dir, id string, base []string) wire.JobSpec {
	s := spec(dir, id, "/usr/bin/env", "-0")
	s.Env = append(slices.Clone(base), job.EnvJobID+"="+id, job.EnvJobOwner+"=o")
	s.EnvTail = 2
	return s
}

// A client sends a session's environment once a connection: the first
// spawn defines it, the next ones name it and carry only their marks;
// each job gets its whole environment all the same. A name the holder
// does not keep is refused with EnvRefUnknown, and the client sends that
// spawn again whole.
func TestEnvByReference(t *testing.T) {
	sock, _ := serve(t)
	dir := t.TempDir()
	c, s := listening(t, sock)
	var lines []string // the spawns' lines, under c.mu
	c.mu.Lock()
	c.sentHook = func(b []byte) {
		if strings.Contains(string(b), `"op":"spawn"`) {
			lines = append(lines, string(b))
		}
	}
	c.mu.Unlock()
	base := []string{"PATH=/usr/bin:/bin", "A=1", "B=two words", "C=ü=3", "D="}
	for _, id := range []string{"e1", "e2"} {
		if _, err := c.Spawn(envSpec(dir, id, base)); err != nil {
			t.Fatal(err)
		}
		if e := <-s.ends; e.ID != id || !e.Exited || e.ExitCode != 0 {
			t.Fatalf("end: %+v", e)
		}
		want := append(slices.Clone(base), job.EnvJobID+"="+id, job.EnvJobOwner+"=o")
		if got := envOf(t, dir, id); !slices.Equal(got, want) {
			t.Errorf("%s's environment:\n got %q\nwant %q", id, got, want)
		}
	}
	key := envKey(base)
	c.mu.Lock()
	defined := c.envSent[key]
	c.mu.Unlock()
	if !defined {
		t.Fatalf("the client has not defined the session's environment on its connection: %v", c.envSent)
	}
	c.mu.Lock()
	sent := slices.Clone(lines)
	c.mu.Unlock()
	if len(sent) != 2 || !strings.Contains(sent[0], `"B=two words"`) || !strings.Contains(sent[0], `"env_base":5`) ||
		strings.Contains(sent[1], `"B=two words"`) || !strings.Contains(sent[1], `"env_ref":"`+key+`"`) {
		t.Errorf("the spawns' lines: the first defines the environment, the second names it:\n%s", strings.Join(sent, "\n"))
	}

	// A name the client takes for defined that the holder never saw
	// (one it let go): refused, then sent whole.
	other := []string{"PATH=/usr/bin:/bin", "X=1", "Y=2", "Z=3"}
	c.mu.Lock()
	c.envSent[envKey(other)] = true
	c.mu.Unlock()
	if _, err := c.Spawn(envSpec(dir, "e3", other)); err != nil {
		t.Fatalf("a spawn naming an environment the holder does not keep: %v", err)
	}
	if e := <-s.ends; e.ID != "e3" || e.ExitCode != 0 {
		t.Fatalf("end: %+v", e)
	}
	if got, want := envOf(t, dir, "e3"), append(slices.Clone(other), job.EnvJobID+"=e3", job.EnvJobOwner+"=o"); !slices.Equal(got, want) {
		t.Errorf("e3's environment:\n got %q\nwant %q", got, want)
	}

	// A small environment goes whole, named by nothing.
	small := spec(dir, "e4", "/usr/bin/env", "-0")
	if _, err := c.Spawn(small); err != nil {
		t.Fatal(err)
	}
	if e := <-s.ends; e.ID != "e4" {
		t.Fatalf("end: %+v", e)
	}
	if got := envOf(t, dir, "e4"); !slices.Equal(got, []string{"PATH=/usr/bin:/bin"}) {
		t.Errorf("e4's environment: %q", got)
	}
}

// The holder's side of it on a connection of the test's own: a name not
// defined is refused (its code says not found), a definition is kept for
// the connection only, and a bad one is refused naming the fields.
func TestEnvRefOnTheWire(t *testing.T) {
	sock, _ := serve(t)
	dir := t.TempDir()
	raw := func() (net.Conn, *bufio.Reader) {
		conn, err := net.Dial("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		r := bufio.NewReader(conn)
		if _, err := r.ReadString('\n'); err != nil {
			t.Fatal(err)
		}
		conn.Write([]byte(`{"op":"hello","hello":{"proto":2,"min":1,"build":"test"}}` + "\n"))
		return conn, r
	}
	seq := uint64(0)
	// call sends a spawn and returns its answer, and the job's end if it
	// started.
	call := func(conn net.Conn, r *bufio.Reader, sp wire.JobSpec) wire.Message {
		t.Helper()
		seq++
		b, _ := json.Marshal(wire.Request{Seq: seq, Op: wire.OpSpawn, Spawn: &sp})
		conn.Write(append(b, '\n'))
		conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		var answer wire.Message
		for {
			line, err := r.ReadBytes('\n')
			if err != nil {
				t.Fatalf("reading the holder: %v", err)
			}
			var m wire.Message
			json.Unmarshal(line, &m)
			if m.Re == seq {
				answer = m
				if m.Error != "" {
					return answer
				}
			}
			if m.Ev == wire.EvEnd && m.ID == sp.ID {
				ack, _ := json.Marshal(wire.Request{Op: wire.OpAck, ID: sp.ID, NoReply: true})
				conn.Write(append(ack, '\n'))
				return answer
			}
		}
	}
	base := []string{"PATH=/usr/bin:/bin", "A=1", "B=2", "C=3"}
	conn, r := raw()
	named := envSpec(dir, "w1", base)
	named.Env, named.EnvRef = named.Env[len(base):], "k1"
	if m := call(conn, r, named); m.Error != wire.EnvRefUnknown || m.Code != "not_found" {
		t.Fatalf("a name never defined: %+v", m)
	}
	defining := envSpec(dir, "w2", base)
	defining.EnvRef, defining.EnvBase = "k1", len(base)
	if m := call(conn, r, defining); m.Error != "" || m.Start == nil {
		t.Fatalf("a definition: %+v", m)
	}
	named.ID = "w3"
	named.Env = []string{job.EnvJobID + "=w3", job.EnvJobOwner + "=o"}
	named.Stdout, named.Stderr, named.Index = filepath.Join(dir, "w3.out"), filepath.Join(dir, "w3.err"), ""
	if m := call(conn, r, named); m.Error != "" || m.Start == nil {
		t.Fatalf("a spawn naming it: %+v", m)
	}
	if got, want := envOf(t, dir, "w3"), append(slices.Clone(base), job.EnvJobID+"=w3", job.EnvJobOwner+"=o"); !slices.Equal(got, want) {
		t.Errorf("w3's environment:\n got %q\nwant %q", got, want)
	}
	bad := envSpec(dir, "w4", base)
	bad.EnvRef, bad.EnvBase = "k2", len(bad.Env)+1
	if m := call(conn, r, bad); m.Code != "invalid" || !strings.Contains(m.Error, "env_base") {
		t.Errorf("env_base past env: %+v", m)
	}
	// Another connection (the next daemon, which takes over from this
	// one) knows no name of this one's.
	conn2, r2 := raw()
	conn.Close()
	named.ID = "w5"
	named.Stdout, named.Stderr = filepath.Join(dir, "w5.out"), filepath.Join(dir, "w5.err")
	if m := call(conn2, r2, named); m.Error != wire.EnvRefUnknown {
		t.Errorf("a name of another connection: %+v", m)
	}
}

// A holder of version 1 (an older build the daemon takes over) is sent
// every spawn's environment whole.
func TestEnvWholeToAVersion1Holder(t *testing.T) {
	sock, ln := fakeHolder(t)
	dir := t.TempDir()
	spawns := make(chan wire.Request, 2)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		c.Write([]byte(`{"hello":{"proto":1,"min":1,"build":"old","pid":4242}}` + "\n"))
		r := bufio.NewReader(c)
		for {
			line, err := r.ReadBytes('\n')
			if err != nil {
				return
			}
			var req wire.Request
			json.Unmarshal(line, &req)
			if req.Op != wire.OpSpawn {
				continue
			}
			spawns <- req
			b, _ := json.Marshal(wire.Message{Re: req.Seq, Start: &wire.JobStart{Pid: 4243, Started: time.Now()}})
			c.Write(append(b, '\n'))
		}
	}()
	c, err := Open(ClientOptions{Socket: sock})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	base := []string{"PATH=/usr/bin:/bin", "A=1", "B=2", "C=3"}
	for _, id := range []string{"o1", "o2"} {
		sp := envSpec(dir, id, base)
		if _, err := c.Spawn(sp); err != nil {
			t.Fatal(err)
		}
		req := <-spawns
		if req.Spawn.EnvRef != "" || req.Spawn.EnvBase != 0 || !slices.Equal(req.Spawn.Env, sp.Env) {
			t.Errorf("%s as a version 1 holder got it: env %q, env_ref %q, env_base %d", id, req.Spawn.Env, req.Spawn.EnvRef, req.Spawn.EnvBase)
		}
	}
}
