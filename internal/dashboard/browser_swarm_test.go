package dashboard_test

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/hivetools/hive/internal/daemon"
	"github.com/hivetools/hive/internal/hub"
	"github.com/hivetools/hive/internal/swarm"
)

// startSwarm starts an embedded NATS server and one daemon per name on
// it, in the swarm "farm"; the hub stops after the daemons.
func startSwarm(t *testing.T, names ...string) map[string]*env {
	envs, _ := startSwarmHub(t, names...)
	return envs
}

// swarmHub is the embedded server of startSwarmHub, which a test may
// stop and start again (same address, same store).
type swarmHub struct {
	t        *testing.T
	dir, url string
	h        *hub.Hub
}

func (s *swarmHub) stop() {
	if s.h != nil {
		s.h.Close()
		s.h = nil
	}
}

func (s *swarmHub) start() {
	s.t.Helper()
	h, err := hub.Start(hub.Options{Dir: s.dir, Addr: strings.TrimPrefix(s.url, "nats://")})
	if err != nil {
		s.t.Fatalf("start the hub again: %v", err)
	}
	s.h = h
}

// startSwarmHub is startSwarm, with the hub.
func startSwarmHub(t *testing.T, names ...string) (map[string]*env, *swarmHub) {
	t.Helper()
	dir := t.TempDir()
	h, err := hub.Start(hub.Options{Dir: dir, Addr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	sh := &swarmHub{t: t, dir: dir, url: h.URL(), h: h}
	t.Cleanup(sh.stop) // cleanups run last first: after the daemons' stops
	envs := map[string]*env{}
	for _, n := range names {
		envs[n] = startWith(t, shortDir(t), "127.0.0.1:0", func(c *daemon.Config) {
			c.Name = n
			c.Swarm = &swarm.Options{Conn: swarm.Conn{URL: h.URL(), Swarm: "farm"}, Hive: "host-" + n}
		})
	}
	return envs, sh
}

// swarmRow is the text of the swarm page's row of agent.
func swarmRow(agent string) string {
	return `(document.querySelector('#swarm tr[data-agent="` + agent + `"]')?.innerText || "")`
}

// TestBrowserSwarm: the swarm page of one agent lists the three agents
// of its swarm, each with a link to its own dashboard, and shows a
// status set on another agent without a reload.
func TestBrowserSwarm(t *testing.T) {
	envs := startSwarm(t, "ant", "bee", "cow")
	tb := newTab(t)
	tb.login(envs["ant"])
	tb.wait("the swarm link", `!document.getElementById("swarm-link").hidden`, 10*time.Second)
	tb.click("#swarm-link")
	tb.wait("the three agents", `[...document.querySelectorAll("#swarm tbody tr")].map((r) => r.dataset.agent).join() === "ant,bee,cow"`, 20*time.Second)
	for _, n := range []string{"ant", "bee", "cow"} {
		row := tb.text(swarmRow(n))
		for _, want := range []string{"up", "no status", "host-" + n, "daemon started", "todos 0"} {
			if !strings.Contains(row, want) {
				t.Errorf("the row of %s is %q: no %q", n, row, want)
			}
		}
		href := tb.text(`document.querySelector('#swarm tr[data-agent="` + n + `"] td.acts a')?.getAttribute("href") || ""`)
		if href != envs[n].base+"/" {
			t.Errorf("the dashboard link of %s is %q, want %s/", n, href, envs[n].base)
		}
	}
	// A status set on bee shows within 1 s, pushed: the page counts its
	// reads of the directory, and a try in which one landed (its slow
	// fallback) does not count. One try of three must make it: a single
	// late one is the machine's load (CI runs packages side by side);
	// without the push none makes it.
	tb.text(`(() => { window.swarmReads = 0; const f = window.fetch;
		window.fetch = function (u, o) { if (String(u).includes("/api/swarm")) window.swarmReads++; return f.call(this, u, o); };
		return "" })()`)
	bee := envs["bee"].mcp()
	var why []string
	for try := 1; ; try++ {
		if try > 3 {
			t.Fatalf("bee's status never on ant's swarm page within 1 s without a read of /api/swarm: %s", strings.Join(why, "; "))
		}
		text := fmt.Sprintf("building the docs, take %d", try)
		shown := swarmRow("bee") + `.includes(` + strconv.Quote(text) + `)`
		reads := tb.text(`String(window.swarmReads)`)
		tool(t, bee, "set_status", map[string]any{"text": text}, nil)
		set := time.Now()
		err := tb.poll(shown, time.Second)
		took := time.Since(set).Round(time.Millisecond)
		if again := tb.text(`String(window.swarmReads)`); again != reads {
			why = append(why, fmt.Sprintf("try %d: the page read /api/swarm meanwhile", try))
			continue
		}
		if err != nil {
			why = append(why, fmt.Sprintf("try %d: not within 1 s (%v; row %q)", try, err, tb.text(swarmRow("bee"))))
			tb.wait("bee's late status", shown, 10*time.Second)
			continue
		}
		t.Logf("bee's status on ant's swarm page %v after set_status returned (try %d)", took, try)
		tb.wait("bee's last notice", `document.querySelector('#swarm tr[data-agent="bee"] td.note').textContent.startsWith(`+strconv.Quote("status: "+text)+`)`, 10*time.Second)
		tb.wait("bee's notice in the latest notices", `[...document.querySelectorAll("#sw-notes li")].some((li) => li.textContent.includes(`+strconv.Quote("bee: status: "+text)+`))`, 10*time.Second)
		break
	}
	tb.screenshot("swarm")
	// cow stops: its row goes and its last notice comes, pushed.
	reads := tb.text(`String(window.swarmReads)`)
	envs["cow"].stop()
	tb.wait("cow's row gone", `!document.querySelector('#swarm tr[data-agent="cow"]')`, 10*time.Second)
	tb.wait("cow's stop in the latest notices", `[...document.querySelectorAll("#sw-notes li")].some((li) => li.textContent.includes("cow: daemon stopped"))`, 10*time.Second)
	if again := tb.text(`String(window.swarmReads)`); again != reads {
		t.Logf("the page read /api/swarm meanwhile (its slow fallback): the removal may not have been pushed")
	}
	tb.do("back", chromedp.Navigate(envs["ant"].base+"/#/"))
	tb.wait("the overview", `!document.getElementById("overview").hidden && document.getElementById("swarmview").hidden`, 5*time.Second)
}

// TestBrowserNoSwarm: a daemon in no swarm shows no swarm link, and its
// swarm page says why.
func TestBrowserNoSwarm(t *testing.T) {
	e := start(t, shortDir(t))
	tb := newTab(t)
	tb.login(e)
	tb.do("the swarm page", chromedp.Navigate(e.base+"/#/swarm"))
	tb.wait("why there is no list", `document.getElementById("sw-msg").textContent.includes("in no swarm")`, 5*time.Second)
	if hidden := tb.text(`String(document.getElementById("swarm-link").hidden)`); hidden != "true" {
		t.Errorf("the swarm link of a daemon in no swarm: hidden %s, want true", hidden)
	}
}

// TestBrowserSwarmAfterNATSAway: the swarm page stays live across a
// stop and a start of the NATS server: a status set once it is back
// shows without a reload.
func TestBrowserSwarmAfterNATSAway(t *testing.T) {
	envs, h := startSwarmHub(t, "ant", "bee")
	tb := newTab(t)
	tb.login(envs["ant"])
	tb.do("the swarm page", chromedp.Navigate(envs["ant"].base+"/#/swarm"))
	tb.wait("the two agents", `[...document.querySelectorAll("#swarm tbody tr")].map((r) => r.dataset.agent).join() === "ant,bee"`, 20*time.Second)
	h.stop()
	h.start()
	bee := envs["bee"].mcp()
	set := time.Now()
	tool(t, bee, "set_status", map[string]any{"text": "back online"}, nil)
	// The daemons reconnect within 0.5 s; ant's watch starts again then
	// (left to its consumer noticing the gap, it took about 9 s).
	tb.wait("bee's status after NATS came back", swarmRow("bee")+`.includes("back online")`, 5*time.Second)
	t.Logf("bee's status on ant's page %v after it was set, NATS back", time.Since(set).Round(time.Millisecond))
}
