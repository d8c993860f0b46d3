package dashboard

import "testing"

// Another agent's dashboard address comes from another host: only an
// http(s) one becomes a link on the swarm page.
func TestSwarmLinksOnlyWebAddresses(t *testing.T) {
	for s, want := range map[string]bool{
		"http://127.0.0.1:8765/": true, "https://host.example/": true,
		"javascript:alert(1)": false, "JAVASCRIPT:alert(1)": false, "data:text/html,x": false,
		"//evil.example/": false, "": false, "http://": false, "vbscript:x": false,
	} {
		if got := webURL(s); got != want {
			t.Errorf("webURL(%q) = %v, want %v", s, got, want)
		}
	}
}
