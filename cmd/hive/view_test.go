package main

import (
	"encoding/json"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/hivetools/hive/internal/hivetest"
)

// One job, asked through `hive inspect`, GET /api/jobs/{id} and
// terminal_job_list, shows the same keys with the same values: the
// terminal tool's job_id, status and runtime_ms stand for id, state and
// duration_ms, and a key it leaves out is only left out.
func TestOneViewOfAJob(t *testing.T) {
	state := hivetest.StateDir(t)
	addr := startHTTPDaemon(t, state, "127.0.0.1:0")
	id, err := hivetest.Run(t, state, "run", "--name", "viewed", "--", "echo out; echo err >&2; exit 1")
	if err != nil {
		t.Fatal(id, err)
	}
	id = strings.TrimSpace(id)
	if out, err := hivetest.Run(t, state, "wait", id); rc(t, err) != 1 {
		t.Fatalf("wait: %q %v", out, err)
	}

	out, err := hivetest.Run(t, state, "inspect", id)
	if err != nil {
		t.Fatal(out, err)
	}
	var inspected []map[string]any
	if err := json.Unmarshal([]byte(out), &inspected); err != nil || len(inspected) != 1 {
		t.Fatalf("inspect: %q %v", out, err)
	}
	cli := inspected[0]

	req, _ := http.NewRequest("GET", "http://"+addr+"/api/jobs/"+id, nil)
	req.Header.Set("Authorization", "Bearer "+httpToken(t, state))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var api map[string]any
	if err := json.Unmarshal(body, &api); err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET /api/jobs/%s: %d %s %v", id, resp.StatusCode, body, err)
	}

	s := hivetest.Connect(t, state, t.TempDir())
	var list struct {
		Jobs []map[string]any `json:"jobs"`
	}
	s.MustCall("terminal_job_list", map[string]any{}, &list)
	var entry map[string]any
	for _, e := range list.Jobs {
		if e["job_id"] == id {
			entry = e
		}
	}
	if entry == nil {
		t.Fatalf("terminal_job_list has no job %s: %v", id, list.Jobs)
	}

	if !reflect.DeepEqual(cli, api) {
		t.Errorf("hive inspect and GET /api/jobs/{id} differ:\ninspect: %v\napi:     %v", cli, api)
	}
	for _, k := range []string{"id", "name", "cmd", "state", "exit_code", "semantic_status", "semantic_message",
		"created", "started", "ended", "duration_ms", "stdout_bytes", "stderr_bytes", "stdout_path", "stderr_path"} {
		if _, ok := cli[k]; !ok {
			t.Errorf("inspect has no %q: %v", k, cli)
		}
	}
	if cli["exit_code"] != float64(1) || cli["state"] != "done" || cli["stdout_bytes"] != float64(4) {
		t.Errorf("inspect: %v", cli)
	}
	seed := map[string]string{"job_id": "id", "status": "state", "runtime_ms": "duration_ms"}
	for k, v := range entry {
		vk := k
		if s, ok := seed[k]; ok {
			vk = s
		} else if _, ok := cli[k]; !ok {
			t.Errorf("terminal_job_list's %q is not a key of the job's view (inspect: %v)", k, cli)
			continue
		}
		if !reflect.DeepEqual(v, cli[vk]) {
			t.Errorf("terminal_job_list's %s = %v, the view's %s = %v", k, v, vk, cli[vk])
		}
	}
	for _, k := range []string{"job_id", "status", "runtime_ms", "exit_code", "started", "ended", "cmd"} {
		if _, ok := entry[k]; !ok {
			t.Errorf("terminal_job_list's entry has no %q: %v", k, entry)
		}
	}
}
