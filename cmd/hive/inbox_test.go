package main

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hivetools/hive/internal/hivetest"
)

// The inbox as the agent sees it over a real bridge.
type inboxLooseEnds struct {
	Reminders []struct {
		ID      int64  `json:"id"`
		DueAt   int64  `json:"due_at"`
		Preview string `json:"preview"`
	} `json:"reminders"`
	Todos []struct {
		ID  int64  `json:"id"`
		Key string `json:"key"`
	} `json:"todos"`
	Inbox struct {
		Undelivered int `json:"undelivered"`
		Oldest      []struct {
			ID      int64  `json:"id"`
			From    string `json:"from"`
			Preview string `json:"preview"`
		} `json:"oldest"`
	} `json:"inbox"`
}

type inboxRead struct {
	Messages []struct {
		ID   int64  `json:"id"`
		From string `json:"from"`
		Body string `json:"body"`
	} `json:"messages"`
	Left int `json:"left"`
}

// A reminder scheduled, then the daemon killed (-9) before it was due,
// fires after the restart: pushed to the session (resources/updated of
// hive://inbox and a log message), listed in get_loose_ends, delivered
// by read_inbox. Bad arguments name the field.
func TestRemindSurvivesKill9(t *testing.T) {
	state := hivetest.StateDir(t)
	hivetest.StartDaemon(t, state)
	s := hivetest.Connect(t, state, t.TempDir())
	var r struct {
		ID    int64 `json:"id"`
		DueAt int64 `json:"due_at"`
	}
	s.MustCall("remind", map[string]any{"message": "check the deploy", "delay_seconds": 1.5}, &r)
	var le inboxLooseEnds
	s.MustCall("get_loose_ends", nil, &le)
	if len(le.Reminders) != 1 || le.Reminders[0].ID != r.ID || le.Reminders[0].Preview != "check the deploy" {
		t.Fatalf("pending: %+v", le.Reminders)
	}
	s.Close()
	pid := hivetest.DaemonPid(state)
	hivetest.Kill(pid)
	hivetest.Eventually(t, 10*time.Second, "the killed daemon to end", hivetest.Gone(pid))

	// A new daemon (the bridge starts one); the reminder fires on time.
	s = hivetest.Connect(t, state, t.TempDir())
	ctx := t.Context()
	if err := s.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "info"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Subscribe(ctx, &mcp.SubscribeParams{URI: "hive://inbox"}); err != nil {
		t.Fatal(err)
	}
	s.WaitFor("the reminder's message pushed", func(up, logs []string) bool {
		for _, l := range logs {
			if strings.Contains(l, `"from":"reminder"`) && strings.Contains(l, "check the deploy") {
				return true
			}
		}
		return false
	})
	if late := time.Since(time.Unix(r.DueAt, 0)); late > 3*time.Second {
		t.Errorf("fired %v after its due time", late)
	}
	s.MustCall("get_loose_ends", nil, &le)
	if len(le.Reminders) != 0 || le.Inbox.Undelivered != 1 || le.Inbox.Oldest[0].From != "reminder" {
		t.Fatalf("after firing: %+v", le)
	}
	var rd inboxRead
	s.MustCall("read_inbox", nil, &rd)
	if len(rd.Messages) != 1 || rd.Messages[0].Body != "check the deploy" || rd.Left != 0 {
		t.Fatalf("read_inbox: %+v", rd)
	}
	s.MustCall("read_inbox", nil, &rd)
	if len(rd.Messages) != 0 {
		t.Errorf("read twice: %+v", rd)
	}

	for _, tt := range []struct {
		args map[string]any
		want string
	}{
		{map[string]any{"message": "x"}, "delay_seconds or at_unix_timestamp: give one"},
		{map[string]any{"message": "x", "delay_seconds": 5, "at_unix_timestamp": time.Now().Unix() + 60}, "give one, not both"},
		{map[string]any{"message": "x", "at_unix_timestamp": time.Now().Unix() - 60}, "at_unix_timestamp"},
		{map[string]any{"message": "x", "delay_seconds": 400 * 24 * 3600}, "delay_seconds"},
		{map[string]any{"message": "x", "delay_seconds": -1}, "delay_seconds"},
		{map[string]any{"message": "", "delay_seconds": 5}, "message"},
	} {
		if text, isErr := s.Call("remind", tt.args, nil); !isErr || !strings.Contains(text, tt.want) {
			t.Errorf("remind(%v): %v %q, want an error naming %q", tt.args, isErr, text, tt.want)
		}
	}
}

// The 51st pending reminder is refused, saying how many are pending and
// how to cancel; cancel_loose_end takes reminders (with their spill
// files), messages and todos.
func TestRemindLimitAndCancelKinds(t *testing.T) {
	state := hivetest.StateDir(t)
	s := hivetest.Connect(t, state, t.TempDir())
	var first struct {
		ID        int64  `json:"id"`
		SpillPath string `json:"spill_path"`
	}
	s.MustCall("remind", map[string]any{"message": strings.Repeat("long ", 1000), "delay_seconds": 3600}, &first)
	if first.SpillPath != filepath.Join(state, "reminders", "1.md") {
		t.Errorf("spill path %q", first.SpillPath)
	}
	if fi, err := os.Stat(first.SpillPath); err != nil || (runtime.GOOS != "windows" && fi.Mode().Perm() != 0o600) { // Windows has no such modes
		t.Errorf("spill file: %v %v", fi, err)
	}
	for i := 1; i < 50; i++ {
		s.MustCall("remind", map[string]any{"message": "r", "delay_seconds": 3600}, nil)
	}
	text, isErr := s.Call("remind", map[string]any{"message": "one too many", "delay_seconds": 3600}, nil)
	if !isErr || !strings.Contains(text, "50 are pending") || !strings.Contains(text, "cancel_loose_end") {
		t.Errorf("51st reminder: %v %q", isErr, text)
	}
	s.MustCall("cancel_loose_end", map[string]any{"kind": "reminder", "id": first.ID}, nil)
	if _, err := os.Stat(first.SpillPath); !os.IsNotExist(err) {
		t.Errorf("spill file kept after the cancel: %v", err)
	}
	s.MustCall("remind", map[string]any{"message": "room again", "delay_seconds": 3600}, nil)
	for _, tt := range []struct {
		args map[string]any
		want string
	}{
		{map[string]any{"kind": "reminder", "id": first.ID}, "no pending reminder"},
		{map[string]any{"kind": "message", "id": 999}, "no message"},
		{map[string]any{"kind": "todo", "id": 999}, "no todo"},
		{map[string]any{"kind": "thing", "id": 1}, `kind "thing"`},
	} {
		if text, isErr := s.Call("cancel_loose_end", tt.args, nil); !isErr || !strings.Contains(text, tt.want) {
			t.Errorf("cancel_loose_end(%v): %v %q, want %q", tt.args, isErr, text, tt.want)
		}
	}
}

// compact is refused (no side effect) until a harness reports a context
// usage above 66%; get_agent_meta tells self and a sibling agent.
func TestCompactAndMeta(t *testing.T) {
	state := hivetest.StateDir(t)
	s := hivetest.Connect(t, state, t.TempDir())
	text, isErr := s.Call("compact", nil, nil)
	if !isErr || !strings.Contains(text, "66%") {
		t.Errorf("compact with no usage: %v %q", isErr, text)
	}
	s.MustCall("set_status", map[string]any{"text": "reading the code"}, nil)
	var m struct {
		Name        string `json:"name"`
		Running     bool   `json:"running"`
		StatusText  string `json:"status_text"`
		StatusSetAt int64  `json:"status_set_at"`
		TurnState   string `json:"turn_state"`
		LooseEnds   *struct {
			Reminders int `json:"reminders"`
		} `json:"loose_ends"`
	}
	s.MustCall("get_agent_meta", nil, &m)
	if m.Name != filepath.Base(state) || !m.Running || m.StatusText != "reading the code" || m.StatusSetAt == 0 || m.TurnState != "idle" || m.LooseEnds == nil {
		t.Errorf("self: %+v", m)
	}
	// A sibling agent: a state dir beside this one, not running.
	sib := filepath.Join(filepath.Dir(state), filepath.Base(state)+"-sib")
	if err := os.Mkdir(sib, 0o700); err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(sib)
	os.WriteFile(filepath.Join(sib, "hyperhive-status"), []byte("asleep"), 0o600)
	m.LooseEnds = nil
	s.MustCall("get_agent_meta", map[string]any{"name": filepath.Base(sib)}, &m)
	if m.Name != filepath.Base(sib) || m.Running || m.StatusText != "asleep" {
		t.Errorf("sibling: %+v", m)
	}
	for _, bad := range []string{"nope-no-such-agent", "../etc"} {
		if text, isErr := s.Call("get_agent_meta", map[string]any{"name": bad}, nil); !isErr || !strings.Contains(text, "name") {
			t.Errorf("get_agent_meta(%q): %v %q", bad, isErr, text)
		}
	}
}

// A reminder that falls due while no daemon runs fires when one starts.
func TestReminderDueDuringDowntime(t *testing.T) {
	state := hivetest.StateDir(t)
	hivetest.StartDaemon(t, state)
	s := hivetest.Connect(t, state, t.TempDir())
	var r struct {
		DueAt int64 `json:"due_at"`
	}
	s.MustCall("remind", map[string]any{"message": "while you were out", "delay_seconds": 0.5}, &r)
	s.Close()
	pid := hivetest.DaemonPid(state)
	hivetest.Kill(pid)
	hivetest.Eventually(t, 10*time.Second, "the killed daemon to end", hivetest.Gone(pid))
	// The due time passes with no daemon (the wait is for the clock).
	time.Sleep(time.Until(time.Unix(r.DueAt+1, 0)))
	hivetest.StartDaemon(t, state)
	s = hivetest.Connect(t, state, t.TempDir())
	hivetest.Eventually(t, 10*time.Second, "the reminder due during downtime to fire at start", func() error {
		var le inboxLooseEnds
		s.MustCall("get_loose_ends", nil, &le)
		if le.Inbox.Undelivered != 1 || le.Inbox.Oldest[0].From != "reminder" || len(le.Reminders) != 0 {
			return fmt.Errorf("loose ends: %+v", le)
		}
		return nil
	})
}

// The reminder cap comes from --remind-max, else
// HIVE_REMIND_MAX_PENDING_PER_AGENT (the seed's name), else
// HIVE_REMIND_MAX_PENDING; the seed's name wins when both are set.
func TestRemindMaxFromEnv(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  []string
		max  int
	}{
		{"short name", []string{"HIVE_REMIND_MAX_PENDING=2"}, 2},
		{"seed name", []string{"HIVE_REMIND_MAX_PENDING_PER_AGENT=1"}, 1},
		{"both", []string{"HIVE_REMIND_MAX_PENDING=3", "HIVE_REMIND_MAX_PENDING_PER_AGENT=2"}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			state := hivetest.StateDir(t)
			d := hivetest.Command(t, state, "daemon")
			d.Env = append(d.Env, tc.env...)
			hivetest.StartDaemonCmd(t, state, d)
			s := hivetest.Connect(t, state, t.TempDir())
			for range tc.max {
				s.MustCall("remind", map[string]any{"message": "r", "delay_seconds": 3600}, nil)
			}
			want := fmt.Sprintf("%d are pending", tc.max)
			if text, isErr := s.Call("remind", map[string]any{"message": "r", "delay_seconds": 3600}, nil); !isErr || !strings.Contains(text, want) {
				t.Errorf("reminder %d of at most %d: error %v, %q (want %q)", tc.max+1, tc.max, isErr, text, want)
			}
		})
	}
}
