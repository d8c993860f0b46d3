package tools

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hivetools/hive/internal/client"
	"github.com/hivetools/hive/internal/paths"
	"github.com/hivetools/hive/internal/proto"
	"github.com/hivetools/hive/internal/service"
)

type metaIn struct {
	Name string `json:"name,omitempty"`
}

// AgentMeta is the answer of get_agent_meta.
type AgentMeta struct {
	Name           string                  `json:"name"`
	Version        string                  `json:"version,omitempty"`
	Running        bool                    `json:"running"`
	StatusText     string                  `json:"status_text"`
	StatusSetAt    int64                   `json:"status_set_at,omitempty"`
	TurnState      string                  `json:"turn_state,omitempty"`
	TurnStateSince int64                   `json:"turn_state_since,omitempty"`
	JobsRunning    int                     `json:"jobs_running"`
	LooseEnds      *service.LooseEndCounts `json:"loose_ends,omitempty"`
	// HiveName and SwarmName: the host the agent runs on and its swarm,
	// when its daemon joined one.
	HiveName  string `json:"hive_name,omitempty"`
	SwarmName string `json:"swarm_name,omitempty"`
}

func (h *handlers) addMeta(s *mcp.Server) {
	addTool(s, &mcp.Tool{Name: "get_agent_meta", Description: "An agent's state (name: default you)."}, h.agentMeta)
}

// agentNameRE is what a sibling's name may be: a directory's base name.
var agentNameRE = regexp.MustCompile(`^[A-Za-z0-9._-]{1,128}$`)

func (h *handlers) agentMeta(ctx context.Context, _ *mcp.CallToolRequest, in metaIn) (*mcp.CallToolResult, AgentMeta, error) {
	self, _ := h.d.AgentState()
	// This daemon's own agent, by its name or by its state dir's: its
	// data is here, in process (never a call to its own socket).
	if in.Name == "" || in.Name == self.Name || in.Name == filepath.Base(h.d.Layout.Dir) {
		m, err := h.selfMeta(ctx)
		if err != nil {
			return nil, AgentMeta{}, err
		}
		m.SwarmName, m.HiveName, _ = h.d.InSwarm()
		return text(renderMeta(m)), m, nil
	}
	// An agent of the swarm, by its directory entry; else a sibling on
	// this host.
	var swarmErr error
	if _, _, ok := h.d.InSwarm(); ok {
		a, err := h.d.SwarmAgent(ctx, in.Name)
		if err == nil {
			m := swarmMeta(a)
			return text(renderMeta(m)), m, nil
		}
		swarmErr = err
	}
	m, err := siblingMeta(h.d.Layout, in.Name)
	if err != nil {
		if swarmErr != nil {
			return nil, AgentMeta{}, fmt.Errorf("%w; on this host: %v", swarmErr, err)
		}
		return nil, AgentMeta{}, err
	}
	return text(renderMeta(m)), m, nil
}

// swarmMeta is the meta of an agent as the swarm's directory has it: it
// heartbeats, so its daemon runs.
func swarmMeta(a service.SwarmAgent) AgentMeta {
	m := AgentMeta{Name: a.Name, Version: a.Version, Running: true, StatusText: a.StatusText, TurnState: a.Turn,
		JobsRunning: a.JobsRunning, LooseEnds: a.LooseEnds, HiveName: a.Hive, SwarmName: a.Swarm}
	if !a.StatusSetAt.IsZero() {
		m.StatusSetAt = a.StatusSetAt.Unix()
	}
	if !a.TurnSince.IsZero() {
		m.TurnStateSince = a.TurnSince.Unix()
	}
	return m
}

func (h *handlers) selfMeta(ctx context.Context) (AgentMeta, error) {
	st, _ := h.d.AgentState()
	m := AgentMeta{Name: st.Name, Version: h.d.Version, Running: true, StatusText: st.StatusText,
		TurnState: st.Turn, TurnStateSince: st.TurnSince.Unix(), JobsRunning: h.d.JobsRunning()}
	if !st.StatusSetAt.IsZero() {
		m.StatusSetAt = st.StatusSetAt.Unix()
	}
	n, err := h.d.LooseEndCounts(ctx)
	if err != nil {
		return AgentMeta{}, err
	}
	m.LooseEnds = &n
	return m, nil
}

// siblingMeta reads what can be known of another agent: a state dir of
// that name beside this one, its status file, and whether its daemon
// answers.
func siblingMeta(self paths.Layout, name string) (AgentMeta, error) {
	if !agentNameRE.MatchString(name) || name == "." || name == ".." {
		return AgentMeta{}, fmt.Errorf("name %q: must be an agent's name (a state dir's base name: letters, digits, . _ -)", name)
	}
	l := paths.Layout{Dir: filepath.Join(filepath.Dir(self.Dir), name)}
	if fi, err := os.Stat(l.Dir); err != nil || !fi.IsDir() {
		return AgentMeta{}, fmt.Errorf("name %q: no agent of that name (no state dir %s)", name, l.Dir)
	}
	m := AgentMeta{Name: name}
	if f, err := paths.OpenFile(l.Status(), os.O_RDONLY); err == nil {
		var b [4 * MaxStatusBytes]byte
		n, _ := f.Read(b[:])
		if fi, err := f.Stat(); err == nil && n > 0 {
			m.StatusSetAt = fi.ModTime().Unix()
		}
		f.Close()
		m.StatusText = strings.TrimSpace(string(b[:n]))
	} else if !errors.Is(err, os.ErrNotExist) {
		return AgentMeta{}, fmt.Errorf("name %q: read its status: %w", name, err)
	}
	if resp, err := client.Call(l, proto.Request{Cmd: proto.CmdVersion}); err == nil {
		m.Running, m.Version = true, resp.Version
		if sr, err := client.Call(l, proto.Request{Cmd: proto.CmdStats}); err == nil && sr.Stats != nil {
			m.JobsRunning = sr.Stats.JobsRunning
		}
	}
	return m, nil
}

// MaxStatusBytes bounds a status line in bytes (200 characters of up to
// 4 bytes).
const MaxStatusBytes = 200

func renderMeta(m AgentMeta) string {
	var b strings.Builder
	state := "not running"
	if m.Running {
		state = "running"
	}
	fmt.Fprintf(&b, "%s: %s", m.Name, state)
	if m.SwarmName != "" {
		fmt.Fprintf(&b, " on %s, swarm %s", m.HiveName, m.SwarmName)
	}
	if m.Version != "" {
		fmt.Fprintf(&b, ", hive %s", m.Version)
	}
	if m.TurnState != "" {
		fmt.Fprintf(&b, ", %s since %s", m.TurnState, time.Unix(m.TurnStateSince, 0).Format(time.DateTime))
	}
	fmt.Fprintf(&b, ", %d job(s) running", m.JobsRunning)
	if m.StatusText != "" {
		fmt.Fprintf(&b, "\nstatus: %s", m.StatusText)
	}
	if le := m.LooseEnds; le != nil {
		fmt.Fprintf(&b, "\nloose ends: %d reminder(s), %d todo(s), %d message(s)", le.Reminders, le.Todos, le.Inbox)
	}
	return b.String()
}
