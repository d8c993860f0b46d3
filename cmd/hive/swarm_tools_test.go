package main

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hivetools/hive/internal/hivetest"
)

// The swarm group's tools: list_agents lists the swarm's three agents;
// send_message from one agent's session lands in another's inbox,
// labelled from agent:<sender>; outside a swarm both say why they fail.
func TestSwarmTools(t *testing.T) {
	h := startHub(t, hivetest.StateDir(t), "127.0.0.1:0")
	states := map[string]string{}
	for _, n := range []string{"ant", "bee", "cow"} {
		states[n] = hivetest.StateDir(t)
		hivetest.StartDaemon(t, states[n], "--nats", h.URL, "--swarm", "farm", "--name", n, "--hive", "host-"+n)
	}
	ant := hivetest.Connect(t, states["ant"], t.TempDir())
	type agents struct {
		Swarm  string       `json:"swarm"`
		Agents []swarmAgent `json:"agents"`
	}
	var text string
	hivetest.Eventually(t, 20*time.Second, "list_agents lists the three", func() error {
		var ls agents
		tx, isErr, err := ant.TryCall("list_agents", map[string]any{}, &ls)
		if err != nil || isErr {
			return fmt.Errorf("list_agents: %v %s", err, tx)
		}
		var got []string
		for _, a := range ls.Agents {
			if a.Hive != "host-"+a.Name {
				return fmt.Errorf("agent %+v: want hive host-%s", a, a.Name)
			}
			got = append(got, a.Name)
		}
		if ls.Swarm != "farm" || strings.Join(got, ",") != "ant,bee,cow" {
			return fmt.Errorf("list_agents: swarm %q, agents %v; want farm: ant, bee, cow", ls.Swarm, got)
		}
		text = tx
		return nil
	})
	if !strings.HasPrefix(text, "swarm farm: 3 agent(s)\nant on host-ant") || !strings.Contains(text, "\ncow on host-cow") {
		t.Errorf("list_agents' text:\n%s", text)
	}

	var sent struct {
		Seq uint64 `json:"seq"`
	}
	ant.MustCall("send_message", map[string]any{"to": "bee", "body": "the docs are built"}, &sent)
	if sent.Seq == 0 {
		t.Errorf("send_message: seq 0, want the message's number in the wake stream")
	}
	hivetest.Eventually(t, 20*time.Second, "the message in bee's inbox", func() error {
		ms, err := inboxMessages(t, states["bee"])
		if err != nil {
			return err
		}
		if len(ms) != 1 || ms[0].From != "agent:ant" || ms[0].Preview != "the docs are built" {
			return fmt.Errorf("bee's inbox %+v, want one message from agent:ant", ms)
		}
		return nil
	})
	for _, c := range []struct {
		args map[string]any
		want string
	}{
		{map[string]any{"to": "no.dots", "body": "x"}, `to "no.dots"`},
		{map[string]any{"to": "bee", "body": ""}, "body: must not be empty"},
	} {
		if tx, isErr := ant.Call("send_message", c.args, nil); !isErr || !strings.Contains(tx, c.want) {
			t.Errorf("send_message %v: error %v %q, want one with %q", c.args, isErr, tx, c.want)
		}
	}

	// A daemon in no swarm has the tools too, and says why they fail.
	solo := hivetest.Connect(t, hivetest.StateDir(t), t.TempDir())
	for _, c := range []struct {
		tool string
		args map[string]any
	}{{"list_agents", map[string]any{}}, {"send_message", map[string]any{"to": "bee", "body": "x"}}} {
		if tx, isErr := solo.Call(c.tool, c.args, nil); !isErr || !strings.Contains(tx, "in no swarm") {
			t.Errorf("%s outside a swarm: error %v %q, want one saying it is in no swarm", c.tool, isErr, tx)
		}
	}
}
