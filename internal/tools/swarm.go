package tools

import (
	"context"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hivetools/hive/internal/service"
)

type sendIn struct {
	To   string `json:"to"`
	Body string `json:"body"`
}

// Sent is the answer of send_message.
type Sent struct {
	// Seq is the message's number in the swarm's wake stream.
	Seq int64 `json:"seq"`
}

// Agents is the answer of list_agents.
type Agents struct {
	Swarm  string               `json:"swarm"`
	Agents []service.SwarmAgent `json:"agents"`
}

func (h *handlers) addSwarm(s *mcp.Server) {
	addTool(s, &mcp.Tool{Name: "send_message", Description: "Message an agent of your swarm."}, h.sendMessage)
	addTool(s, &mcp.Tool{Name: "list_agents", Description: "Your swarm's agents: status, turn, jobs, host."}, h.listAgents)
}

func (h *handlers) sendMessage(ctx context.Context, _ *mcp.CallToolRequest, in sendIn) (*mcp.CallToolResult, Sent, error) {
	seq, err := h.d.SendTo(ctx, in.To, in.Body)
	if err != nil {
		return nil, Sent{}, err
	}
	return text(fmt.Sprintf("sent to %s (message %d)", in.To, seq)), Sent{Seq: int64(seq)}, nil
}

func (h *handlers) listAgents(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, Agents, error) {
	name, _, ok := h.d.InSwarm()
	if !ok {
		return nil, Agents{}, service.ErrNoSwarm
	}
	as, err := h.d.SwarmAgents(ctx)
	if err != nil {
		return nil, Agents{}, err
	}
	out := Agents{Swarm: name, Agents: as}
	return text(renderAgents(out)), out, nil
}

// renderAgents is list_agents' text: a line an agent.
func renderAgents(a Agents) string {
	var b strings.Builder
	fmt.Fprintf(&b, "swarm %s: %d agent(s)", a.Swarm, len(a.Agents))
	for _, x := range a.Agents {
		fmt.Fprintf(&b, "\n%s on %s", x.Name, x.Hive)
		if x.Turn != "" {
			fmt.Fprintf(&b, ", %s", x.Turn)
		}
		fmt.Fprintf(&b, ", %d job(s) running", x.JobsRunning)
		if le := x.LooseEnds; le != nil {
			fmt.Fprintf(&b, ", loose ends %d/%d/%d (reminders/todos/inbox)", le.Reminders, le.Todos, le.Inbox)
		}
		if x.StatusText != "" {
			fmt.Fprintf(&b, ": %s", x.StatusText)
		}
	}
	return b.String()
}
