package wire

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/hivetools/hive/internal/limits"
	"github.com/hivetools/hive/internal/output"
)

// The values of each type, full and zero, and their encodings as the
// protocol's first version has them: a daemon and a holder of different
// builds read each other's lines only while these stay as they are.
var (
	at     = time.Date(2024, 5, 6, 7, 8, 9, 123456789, time.UTC)
	grace  = 1500 * time.Millisecond
	hello  = Hello{Proto: 2, Min: 1, Build: "v1.2.3", Pid: 4242, Tracking: "cgroup", Cgroups: "/sys/fs/cgroup/hive", Instance: "4242-99", Keeps: true}
	sig    = 9
	counts = Counts{Total: 10, InFile: 8, Dropped: 2}
	jspec  = JobSpec{ID: "j1", Path: "/bin/sh", Argv: []string{"sh", "-c", "echo hi"}, Env: []string{"PATH=/bin"}, EnvRef: "e0", EnvBase: 1, Dir: "/tmp",
		Stdin: []byte("in\n"), Stdout: "/s/j1.out", Stderr: "/s/j1.err", Index: "/s/j1.idx", FileCap: 1 << 20, Owner: "own",
		LeftoverGrace: 2 * time.Second, Limits: &limits.Limits{MemoryMB: 64, Pids: 32, CPUs: 0.5, Nofile: 100}, Timeout: time.Minute}
	jstart = JobStart{Pid: 100, PidStart: 12345, Started: at, Cgroup: "job-j1", LimitsBy: limits.Enforced{"memory_mb": "cgroup", "nofile": "rlimit"}}
	jend   = JobEnd{ID: "j1", Exited: true, ExitCode: 137, Signal: &sig, Error: "boom", Leftover: 1, Stopped: true, Ended: at,
		Stdout: counts, Stderr: Counts{Total: 3, InFile: 3},
		Usage: &limits.Usage{MemoryPeakBytes: 1 << 20, CPUUserMS: 5, CPUSystemMS: 6, OOMKills: 1, PidsRefused: 2, Throttled: 3}, LimitHit: "memory_mb"}
	job   = Job{ID: "j1", JobStart: jstart, Stdout: counts, Stderr: Counts{Total: 1, InFile: 1}, End: &jend, Record: json.RawMessage(`{"id":"j1"}`)}
	pspec = PTYSpec{ID: "pty_1", Path: "/bin/bash", Argv: []string{"bash"}, Env: []string{"TERM=xterm"}, Dir: "/home",
		Cols: 80, Rows: 24, Output: "/s/pty_1.out", FileCap: 4096}
	psess = PTYSession{ID: "pty_1", Pid: 200, PidStart: 777, TTY: "/dev/pts/3",
		Output: output.Stats{Total: 5, InFile: 4, Dropped: 1, Closed: true}, Exited: true, ExitCode: 1}
	kept = Kept{Spec: JobSpec{ID: "j1", Stdout: "/s/j1.out", Stderr: "/s/j1.err"}, Start: JobStart{Pid: 100, Started: at, Cgroup: "s1"},
		Record: json.RawMessage(`{"id":"j1","state":"running"}`)}
	req = Request{Seq: 7, Op: OpSpawn, Hello: &hello, Spawn: &jspec, PTY: &pspec, ID: "j1", Force: true, Grace: &grace,
		NoReply: true, Deadline: &at, Keep: &kept, Take: []Job{{ID: "j1", Stdout: counts}}, End: &jend}
	msg = Message{Hello: &hello, Re: 7, Error: "bad", Code: "not_found", Start: &jstart, Held: []Job{job},
		Sessions: []PTYSession{psess}, Ev: EvEnd, ID: "j1", Stdout: &counts, Stderr: &counts, End: &jend, Spares: []string{"/c/s1", "/c/s2"}, Void: true, Killed: true}
)

const (
	helloJSON  = `{"proto":2,"min":1,"build":"v1.2.3","pid":4242,"escape_tracking":"cgroup","cgroups":"/sys/fs/cgroup/hive","instance":"4242-99","keeps":true}`
	jspecJSON  = `{"id":"j1","path":"/bin/sh","argv":["sh","-c","echo hi"],"env":["PATH=/bin"],"env_ref":"e0","env_base":1,"dir":"/tmp","stdin":"aW4K","stdout":"/s/j1.out","stderr":"/s/j1.err","index":"/s/j1.idx","file_cap":1048576,"owner":"own","leftover_grace":2000000000,"limits":{"memory_mb":64,"pids":32,"cpus":0.5,"nofile":100},"timeout":60000000000}`
	jstartJSON = `{"pid":100,"pid_start":12345,"started":"2024-05-06T07:08:09.123456789Z","cgroup":"job-j1","limits_by":{"memory_mb":"cgroup","nofile":"rlimit"}}`
	countsJSON = `{"total":10,"in_file":8,"dropped":2}`
	jendJSON   = `{"id":"j1","exited":true,"exit_code":137,"signal":9,"error":"boom","leftover":1,"stopped":true,"ended":"2024-05-06T07:08:09.123456789Z","stdout":` + countsJSON + `,"stderr":{"total":3,"in_file":3},"usage":{"memory_peak_bytes":1048576,"cpu_user_ms":5,"cpu_system_ms":6,"oom_kills":1,"pids_refused":2,"cpu_throttled":3},"limit_hit":"memory_mb"}`
	pspecJSON  = `{"id":"pty_1","path":"/bin/bash","argv":["bash"],"env":["TERM=xterm"],"dir":"/home","cols":80,"rows":24,"output":"/s/pty_1.out","file_cap":4096}`
	psessJSON  = `{"id":"pty_1","pid":200,"pid_start":777,"tty":"/dev/pts/3","output":{"Total":5,"InFile":4,"Dropped":1,"Closed":true},"exited":true,"exit_code":1}`
	jobJSON    = `{"id":"j1","pid":100,"pid_start":12345,"started":"2024-05-06T07:08:09.123456789Z","cgroup":"job-j1","limits_by":{"memory_mb":"cgroup","nofile":"rlimit"},"stdout":` + countsJSON + `,"stderr":{"total":1,"in_file":1},"end":` + jendJSON + `,"record":{"id":"j1"}}`
	reqJSON    = `{"seq":7,"op":"spawn","hello":` + helloJSON + `,"spawn":` + jspecJSON + `,"pty":` + pspecJSON + `,"id":"j1","force":true,"grace":1500000000,"no_reply":true,"deadline":"2024-05-06T07:08:09.123456789Z","keep":{"spec":{"id":"j1","path":"","argv":null,"env":null,"stdout":"/s/j1.out","stderr":"/s/j1.err"},"start":{"pid":100,"started":"2024-05-06T07:08:09.123456789Z","cgroup":"s1"},"record":{"id":"j1","state":"running"}},"take":[{"id":"j1","pid":0,"started":"0001-01-01T00:00:00Z","stdout":` + countsJSON + `,"stderr":{"total":0,"in_file":0}}],"end":` + jendJSON + `}`
	msgJSON    = `{"hello":` + helloJSON + `,"re":7,"error":"bad","code":"not_found","start":` + jstartJSON + `,"held":[` + jobJSON + `],"sessions":[` + psessJSON + `],"ev":"end","id":"j1","stdout":` + countsJSON + `,"stderr":` + countsJSON + `,"end":` + jendJSON + `,"spares":["/c/s1","/c/s2"],"void":true,"killed":true}`
)

func TestEncoding(t *testing.T) {
	for _, c := range []struct {
		name string
		v    any
		json string
	}{
		{"Hello", hello, helloJSON},
		{"Hello/zero", Hello{}, `{"proto":0,"min":0}`},
		{"Request", req, reqJSON},
		{"Request/zero", Request{}, `{"op":""}`},
		{"Message", msg, msgJSON},
		{"Message/zero", Message{}, `{}`},
		{"JobSpec", jspec, jspecJSON},
		{"JobSpec/zero", JobSpec{}, `{"id":"","path":"","argv":null,"env":null,"stdout":"","stderr":""}`},
		{"JobStart", jstart, jstartJSON},
		{"JobStart/zero", JobStart{}, `{"pid":0,"started":"0001-01-01T00:00:00Z"}`},
		{"JobEnd", jend, jendJSON},
		{"JobEnd/zero", JobEnd{}, `{"id":"","exit_code":0,"ended":"0001-01-01T00:00:00Z","stdout":{"total":0,"in_file":0},"stderr":{"total":0,"in_file":0}}`},
		{"Job", job, jobJSON},
		{"Job/zero", Job{}, `{"id":"","pid":0,"started":"0001-01-01T00:00:00Z","stdout":{"total":0,"in_file":0},"stderr":{"total":0,"in_file":0}}`},
		{"Counts", counts, countsJSON},
		{"Counts/zero", Counts{}, `{"total":0,"in_file":0}`},
		{"PTYSpec", pspec, pspecJSON},
		{"PTYSpec/zero", PTYSpec{}, `{"id":"","path":"","argv":null,"env":null,"cols":0,"rows":0,"output":""}`},
		{"PTYSession", psess, psessJSON},
		{"PTYSession/zero", PTYSession{}, `{"id":"","pid":0,"output":{"Total":0,"InFile":0,"Dropped":0,"Closed":false}}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			b, err := json.Marshal(c.v)
			if err != nil {
				t.Fatalf("marshal: %v", err)
			}
			if string(b) != c.json {
				t.Errorf("encoding changed:\n got %s\nwant %s", b, c.json)
			}
			// What an older or newer peer of this version sends reads
			// back as the same value.
			p := reflect.New(reflect.TypeOf(c.v))
			if err := json.Unmarshal([]byte(c.json), p.Interface()); err != nil {
				t.Fatalf("unmarshal: %v", err)
			}
			if got := p.Elem().Interface(); !reflect.DeepEqual(got, c.v) {
				t.Errorf("decoded %+v, want %+v", got, c.v)
			}
		})
	}
}

// The ops and events are the protocol's words: a renamed constant must
// not change what goes on the wire.
func TestWords(t *testing.T) {
	for got, want := range map[string]string{
		OpHello: "hello", OpSpawn: "spawn", OpStop: "stop", OpAck: "ack", OpHeld: "held", OpQuit: "quit",
		OpPTYSpawn: "pty_spawn", OpPTYClose: "pty_close", OpFD: "fd", EvProgress: "progress", EvEnd: "end",
		OpKeep: "keep", OpTake: "take", OpKeptEnd: "kept_end", OpKilled: "killed", EvSpares: "spares",
	} {
		if got != want {
			t.Errorf("%q, want %q", got, want)
		}
	}
	if EnvRefUnknown != "env_ref: unknown on this connection" {
		t.Errorf("EnvRefUnknown %q: the daemon knows it by its words", EnvRefUnknown)
	}
	if Proto != 6 || MinProto != 1 {
		t.Errorf("versions %d..%d: a change of version is a change of this test too", MinProto, Proto)
	}
}

// A spec's EnvTail is the daemon's own: it never goes on the wire.
func TestEnvTailNotSent(t *testing.T) {
	b, _ := json.Marshal(JobSpec{EnvTail: 2})
	if want := `{"id":"","path":"","argv":null,"env":null,"stdout":"","stderr":""}`; string(b) != want {
		t.Errorf("got %s, want %s", b, want)
	}
}

func TestCountsStats(t *testing.T) {
	st := counts.Stats(true)
	if want := (output.Stats{Total: 10, InFile: 8, Dropped: 2, Closed: true}); st != want {
		t.Fatalf("Stats(true) = %+v, want %+v", st, want)
	}
	if c := CountsOf(st); c != counts {
		t.Fatalf("CountsOf(%+v) = %+v, want %+v", st, c, counts)
	}
}
