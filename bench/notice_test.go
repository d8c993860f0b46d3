package bench

import (
	"context"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hivetools/hive/internal/hivetest"
)

// BenchmarkEndNotice times the push of a background job's end: from the
// `run` call of `true` (wait_seconds 0: answered once it started) to the
// arrival of the log message (notifications/message) that says the job
// is done, through a real `hive mcp` bridge and daemon; against a raw
// spawn of `bash -c true` from this process in the same iteration.
//
// Metrics: notice-ns/op; bash-ns/op; ratio = notice/bash (issue 20's
// target: at most the job's runtime + 3 raw spawns, about 3-4 here).
func BenchmarkEndNotice(b *testing.B) {
	d := startDaemon(b)
	notes := make(chan noticeAt, 1024)
	c := mcp.NewClient(&mcp.Implementation{Name: "bench-notice", Version: "1"}, &mcp.ClientOptions{
		LoggingMessageHandler: func(_ context.Context, r *mcp.LoggingMessageRequest) {
			data, _ := json.Marshal(r.Params.Data)
			select {
			case notes <- noticeAt{time.Now(), string(data)}:
			default:
			}
		},
	})
	ctx := context.Background()
	sess, err := c.Connect(ctx, &mcp.CommandTransport{Command: hivetest.Command(b, d.Dir, "mcp")}, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { sess.Close() })
	params := &mcp.CallToolParams{Name: "run", Arguments: map[string]any{"cmd": "true", "wait_seconds": 0}}
	once := func() time.Duration {
		t0 := time.Now()
		res, err := sess.CallTool(ctx, params)
		if err != nil {
			b.Fatalf("call run: %v", err)
		}
		st, err := decodeStatus(res)
		if err != nil {
			b.Fatal(err)
		}
		timeout := time.After(30 * time.Second)
		for {
			select {
			case n := <-notes:
				if strings.Contains(n.data, `"key":"`+st.ID+`"`) && strings.Contains(n.data, " done") {
					return n.at.Sub(t0)
				}
			case <-timeout:
				b.Fatalf("no notice of job %s's end within 30 s", st.ID)
			}
		}
	}
	once() // warm up: the first exec of bash, the first store write
	if err := exec.Command("bash", "-c", "true").Run(); err != nil {
		b.Fatal(err)
	}
	var noticeD, bashD time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		noticeD += once()
		t0 := time.Now()
		if err := exec.Command("bash", "-c", "true").Run(); err != nil {
			b.Fatal(err)
		}
		bashD += time.Since(t0)
	}
	b.StopTimer()
	per := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / float64(b.N) }
	b.ReportMetric(per(noticeD), "notice-ns/op")
	b.ReportMetric(per(bashD), "bash-ns/op")
	b.ReportMetric(per(noticeD)/per(bashD), "ratio")
}

// noticeAt is a log message's data (as JSON) and when it arrived.
type noticeAt struct {
	at   time.Time
	data string
}
