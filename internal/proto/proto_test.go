package proto

import (
	"encoding/json"
	"strings"
	"testing"
)

// A request's id is a JSON string, or (inbox_ack) a JSON integer; either
// decodes into Request.ID, and inbox_ack's encodes as an integer.
func TestRequestID(t *testing.T) {
	for _, tt := range []struct {
		in      string
		want    string
		wantErr string
	}{
		{`{"cmd":"kill","id":"build"}`, "build", ""},
		{`{"cmd":"inbox_ack","id":42}`, "42", ""},
		{`{"cmd":"inbox_ack","id":"42"}`, "42", ""},
		{`{"cmd":"inbox_ack","id":1.5}`, "1.5", ""}, // the handler refuses it, naming the field
		{`{"cmd":"ps"}`, "", ""},
		{`{"cmd":"ps","id":null}`, "", ""},
		{`{"cmd":"kill","id":true}`, "", "id: must be a string or a number"},
		{`{"cmd":"kill","id":{}}`, "", "id: must be a string or a number"},
		{`{"cmd":5}`, "", "cannot unmarshal number"},
	} {
		var r Request
		err := json.Unmarshal([]byte(tt.in), &r)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("%s: error %v, want %q", tt.in, err, tt.wantErr)
			}
			continue
		}
		if err != nil || r.ID != tt.want {
			t.Errorf("%s: id %q, %v; want %q", tt.in, r.ID, err, tt.want)
		}
	}
	for _, tt := range []struct {
		req  Request
		want string
	}{
		{Request{Cmd: CmdInboxAck, ID: "42"}, `{"cmd":"inbox_ack","id":42}`},
		{Request{Cmd: CmdInboxAck, ID: "042"}, `{"cmd":"inbox_ack","id":"042"}`},
		{Request{Cmd: CmdKill, ID: "42"}, `{"cmd":"kill","id":"42"}`},
		{Request{Cmd: CmdTurn, State: "idle", ContextUsage: new(float64)}, `{"cmd":"turn","state":"idle","context_usage":0}`},
		{Request{Cmd: CmdInboxNext, Wait: true, TimeoutSecs: 2}, `{"cmd":"inbox_next","timeout_secs":2,"wait":true}`},
	} {
		b, err := json.Marshal(tt.req)
		if err != nil || string(b) != tt.want {
			t.Errorf("%+v: %s %v, want %s", tt.req, b, err, tt.want)
		}
		var back Request
		if err := json.Unmarshal(b, &back); err != nil || back.ID != tt.req.ID || back.Cmd != tt.req.Cmd {
			t.Errorf("round trip of %s: %+v %v", b, back, err)
		}
	}
}
