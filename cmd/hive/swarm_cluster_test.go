package main

import (
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/hivetools/hive/internal/hivetest"
)

// startCluster starts n embedded nats-servers with JetStream, routed to
// each other on loopback, each with its store in a temp dir, and returns
// once their JetStream has a meta leader. They are shut down (and waited
// for) when the test ends.
//
// The route ports are picked free and closed before the servers listen
// on them: another process may take one meanwhile (a server that cannot
// listen for routes never becomes ready). Such a start is undone and
// made again on other ports, up to three times.
func startCluster(t *testing.T, n int) []*server.Server {
	t.Helper()
	for try := 1; ; try++ {
		ss, err := tryCluster(t, n)
		if err == nil {
			for _, s := range ss {
				t.Cleanup(func() { s.Shutdown(); s.WaitForShutdown() })
			}
			hivetest.Eventually(t, 20*time.Second, "a JetStream meta leader", func() error {
				if metaLeader(ss) < 0 {
					return fmt.Errorf("none of %d servers leads", n)
				}
				return nil
			})
			return ss
		}
		if try == 3 {
			t.Fatalf("a cluster of %d servers, %d tries: %v", n, try, err)
		}
		t.Logf("a cluster of %d servers, try %d: %v; again on other ports", n, try, err)
	}
}

// tryCluster starts n servers on route ports picked free now; if one
// does not become ready, those started are shut down and it fails.
func tryCluster(t *testing.T, n int) ([]*server.Server, error) {
	t.Helper()
	var routes []*url.URL
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		routes = append(routes, &url.URL{Scheme: "nats-route", Host: ln.Addr().String()})
		ln.Close()
	}
	var ss []*server.Server
	undo := func() {
		for _, s := range ss {
			s.Shutdown()
			s.WaitForShutdown()
		}
	}
	for i := range n {
		_, p, _ := net.SplitHostPort(routes[i].Host)
		var port int
		fmt.Sscan(p, &port)
		s, err := server.NewServer(&server.Options{ServerName: fmt.Sprintf("s%d", i), Host: "127.0.0.1", Port: server.RANDOM_PORT,
			JetStream: true, StoreDir: t.TempDir(), NoSigs: true,
			Cluster: server.ClusterOpts{Name: "hive-test", Host: "127.0.0.1", Port: port}, Routes: routes})
		if err != nil {
			undo()
			t.Fatalf("server s%d: %v", i, err)
		}
		s.Start()
		ss = append(ss, s)
		if !s.ReadyForConnections(10 * time.Second) {
			undo()
			return nil, fmt.Errorf("server s%d (routes on %s) takes no connections", i, routes[i].Host)
		}
	}
	return ss, nil
}

// metaLeader is the index of the server that leads JetStream's meta
// group, -1 if none (yet).
func metaLeader(ss []*server.Server) int {
	for i, s := range ss {
		if s.Running() && s.JetStreamIsLeader() {
			return i
		}
	}
	return -1
}

// streamLeader is the index of the server that leads the stream, -1
// if none (yet).
func streamLeader(ss []*server.Server, stream string) int {
	for i, s := range ss {
		if s.Running() && s.JetStreamIsStreamLeader(server.DEFAULT_GLOBAL_ACCOUNT, stream) {
			return i
		}
	}
	return -1
}

// TestSwarmCluster: three daemons, each on a different server of a
// three-server cluster. The server that holds the lead of the swarm's
// directory (its bucket's stream) is shut down mid-run: the cluster
// elects other leaders, the daemon that used it reconnects to a server
// it heard of, and the directory, the notices and the messages keep
// flowing between the three (the swarm's bucket and streams have a copy
// on each server: with one copy, the directory would go with its
// server).
func TestSwarmCluster(t *testing.T) {
	ss := startCluster(t, 3)
	names := []string{"ant", "bee", "cow"}
	states := map[string]string{}
	urls := map[string]string{}
	on := map[int]string{} // server index → the agent that uses it
	for i, n := range names {
		urls[n] = ss[i].ClientURL()
		on[i] = n
		states[n] = hivetest.StateDir(t)
		hivetest.StartDaemon(t, states[n], "--nats", urls[n], "--swarm", "farm", "--name", n)
	}
	// ls runs `hive swarm ls` on agent's state, through its server.
	ls := func(agent string) ([]swarmAgent, error) {
		out, err := hivetest.Run(t, states[agent], "swarm", "ls", "--format", "json", "--nats", urls[agent], "--swarm", "farm")
		if err != nil {
			return nil, fmt.Errorf("%v: %s", err, out)
		}
		var v struct {
			Agents []swarmAgent `json:"agents"`
		}
		if err := json.Unmarshal([]byte(out), &v); err != nil {
			return nil, fmt.Errorf("%v: %s", err, out)
		}
		return v.Agents, nil
	}
	statusOn := func(agent, of, want string) func() error {
		return func() error {
			as, err := ls(agent)
			if err != nil {
				return err
			}
			var got []string
			for _, a := range as {
				got = append(got, a.Name)
				if a.Name == of && a.StatusText == want {
					return nil
				}
			}
			return fmt.Errorf("%s's status is not %q in %s's directory (agents %v)", of, want, agent, got)
		}
	}
	hivetest.Eventually(t, 20*time.Second, "the three in cow's directory", func() error {
		as, err := ls("cow")
		if err != nil || len(as) != 3 {
			return fmt.Errorf("agents %v: %v", as, err)
		}
		return nil
	})

	// Shut down the server leading the directory; its agent is "ant"
	// below, the others bee and cow.
	var lead int
	hivetest.Eventually(t, 10*time.Second, "the directory's leader", func() error {
		if lead = streamLeader(ss, "KV_hive_agents_farm"); lead < 0 {
			return fmt.Errorf("no server leads KV_hive_agents_farm")
		}
		return nil
	})
	ant, bee, cow := on[lead], on[(lead+1)%3], on[(lead+2)%3]
	t.Logf("shutting down s%d (meta leader: s%d), the server of %s", lead, metaLeader(ss), ant)
	antS := hivetest.Connect(t, states[ant], t.TempDir())
	antS.MustCall("set_status", map[string]any{"text": "before"}, nil)
	hivetest.Eventually(t, 20*time.Second, "the status on another agent", statusOn(cow, ant, "before"))
	ss[lead].Shutdown()
	ss[lead].WaitForShutdown()
	hivetest.Eventually(t, 20*time.Second, "a new leader of the directory", func() error {
		if l := streamLeader(ss, "KV_hive_agents_farm"); l < 0 {
			return fmt.Errorf("no server leads KV_hive_agents_farm")
		}
		return nil
	})

	// Local tools never waited; the swarm comes back on its own.
	antS.MustCall("set_status", map[string]any{"text": "after"}, nil)
	antS.MustCall("run", map[string]any{"cmd": "echo cluster-job", "wait_seconds": 10}, nil)
	hivetest.Eventually(t, 20*time.Second, "the new status on the two others", func() error {
		if err := statusOn(bee, ant, "after")(); err != nil {
			return err
		}
		return statusOn(cow, ant, "after")()
	})
	hivetest.Eventually(t, 20*time.Second, "the job's end in another's events", func() error {
		ns, err := swarmEvents(t, states[cow], "--agent", ant, "--nats", urls[cow], "--swarm", "farm")
		if err != nil {
			return err
		}
		if _, ok := endedNotice(ns, ant, "echo cluster-job"); !ok {
			return fmt.Errorf("no job_ended of %s's echo among %d notices", ant, len(ns))
		}
		return nil
	})
	antS.MustCall("send_message", map[string]any{"to": bee, "body": "after the election"}, nil)
	hivetest.Eventually(t, 20*time.Second, "the message in another's inbox", func() error {
		ms, err := inboxMessages(t, states[bee])
		if err != nil {
			return err
		}
		if len(ms) != 1 || ms[0].From != "agent:"+ant || !strings.Contains(ms[0].Preview, "after the election") {
			return fmt.Errorf("%s's inbox %+v, want one message from agent:%s", bee, ms, ant)
		}
		return nil
	})
}
