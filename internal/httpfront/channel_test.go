package httpfront

import (
	"net/http/httptest"
	"testing"
	"time"
)

// The SSE writer turns a channel carrier event into the channel
// notification event, keeping the event's other lines; every other write
// passes as it is.
func TestChannelWriter(t *testing.T) {
	carrier := `{"jsonrpc":"2.0","method":"notifications/progress","params":{"_meta":{"hive/claude-channel":{"content":"task x done","meta":{"id":"x","kind":"job"}}},"progressToken":"hive/claude-channel","progress":0}}`
	channel := `{"jsonrpc":"2.0","method":"notifications/claude/channel","params":{"content":"task x done","meta":{"id":"x","kind":"job"}}}`
	progress := `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":7,"progress":1,"message":"half"}}`
	for _, tt := range []struct{ in, want string }{
		{"event: message\ndata: " + carrier + "\n\n", "event: message\ndata: " + channel + "\n\n"},
		{"event: message\nid: _0_3\ndata: " + carrier + "\n\n", "event: message\nid: _0_3\ndata: " + channel + "\n\n"},
		{"event: message\ndata: " + progress + "\n\n", "event: message\ndata: " + progress + "\n\n"},
		{`{"jsonrpc":"2.0","id":1,"result":{}}`, `{"jsonrpc":"2.0","id":1,"result":{}}`},
		{"event: message\ndata: {\"method\":\"notifications/progress\" not json\n\n", "event: message\ndata: {\"method\":\"notifications/progress\" not json\n\n"},
	} {
		rec := httptest.NewRecorder()
		w := channelWriter{newHTTPDeadlineWriter(rec, time.Minute)}
		n, err := w.Write([]byte(tt.in))
		if err != nil || n != len(tt.in) {
			t.Errorf("Write: %d %v, want %d nil", n, err, len(tt.in))
		}
		if got := rec.Body.String(); got != tt.want {
			t.Errorf("wrote\n%s\nwant\n%s", got, tt.want)
		}
	}
}
