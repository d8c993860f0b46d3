package tools

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// logInfo writes what log.Info writes (the daemon's handler adds no
// source), attribute for attribute.
func TestLogInfoAsInfo(t *testing.T) {
	var a, b bytes.Buffer
	la, lb := slog.New(slog.NewTextHandler(&a, nil)), slog.New(slog.NewTextHandler(&b, nil))
	logInfo(la, "tool done", slog.String("session", "s 1"), slog.String("tool", "run"), slog.Int64("duration_ms", 12), slog.String("outcome", "error: \"x\""))
	lb.Info("tool done", "session", "s 1", "tool", "run", "duration_ms", int64(12), "outcome", "error: \"x\"")
	drop := func(s string) string { _, rest, _ := strings.Cut(s, " "); return rest } // the time
	if drop(a.String()) != drop(b.String()) || a.Len() == 0 {
		t.Errorf("logInfo: %q\nInfo:    %q", a.String(), b.String())
	}
	var quiet bytes.Buffer
	logInfo(slog.New(slog.NewTextHandler(&quiet, &slog.HandlerOptions{Level: slog.LevelWarn})), "tool call")
	if quiet.Len() != 0 {
		t.Errorf("logged under a Warn level: %q", quiet.String())
	}
}

// BenchmarkLogInfo: a tool call's record by logInfo and by log.Info,
// taking turns (a handler that formats nothing): loginfo-ns/op,
// info-ns/op and their ratio.
func BenchmarkLogInfo(b *testing.B) {
	enabled := slog.New(nopHandler{})
	var fast, std time.Duration
	for b.Loop() {
		t0 := time.Now()
		logInfo(enabled, "tool call", slog.String("session", "unix-3"), slog.String("tool", "terminal_exec"), slog.String("args", `{"cmd":"true"}`))
		t1 := time.Now()
		enabled.Info("tool call", "session", "unix-3", "tool", "terminal_exec", "args", `{"cmd":"true"}`)
		fast, std = fast+t1.Sub(t0), std+time.Since(t1)
	}
	b.ReportMetric(float64(fast.Nanoseconds())/float64(b.N), "loginfo-ns/op")
	b.ReportMetric(float64(std.Nanoseconds())/float64(b.N), "info-ns/op")
	b.ReportMetric(float64(fast)/float64(std), "loginfo/info")
}

// nopHandler is enabled at every level and keeps nothing.
type nopHandler struct{}

func (nopHandler) Enabled(context.Context, slog.Level) bool  { return true }
func (nopHandler) Handle(context.Context, slog.Record) error { return nil }
func (h nopHandler) WithAttrs([]slog.Attr) slog.Handler      { return h }
func (h nopHandler) WithGroup(string) slog.Handler           { return h }
