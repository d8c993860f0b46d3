package tools

import (
	"runtime"
	"slices"
	"testing"

	"github.com/hivetools/hive/internal/shell"
)

func TestSessionEnv(t *testing.T) {
	sh, err := shell.Default()
	if err != nil {
		t.Fatal(err)
	}
	// The policy shell is every command's SHELL, whatever the client's.
	var tail []string
	if runtime.GOOS != "windows" {
		tail = []string{"SHELL=" + sh.Path}
	}
	with := func(env ...string) []string { return append(env, tail...) }
	sess := &Session{Env: []string{"A=1", "ZDOTDIR=/z", "PATH=/bin", "SHELL=/bin/zsh", "A=2", "ZSH_Q=1"}}
	base, err := sessionEnv(sess, nil)
	if err != nil || !slices.Equal(base, with("A=2", "PATH=/bin")) {
		t.Fatalf("base env %q %v", base, err)
	}
	// What a caller appends to one result must not show in the next.
	_ = append(base, "LEAK=1")
	withExtra, err := sessionEnv(sess, map[string]string{"B": "3", "A": "4", "ZSH_Y": "1", "SHELL": "/usr/bin/fish"})
	if err != nil || !slices.Equal(withExtra, with("A=4", "PATH=/bin", "B=3")) {
		t.Fatalf("env with extras %q %v", withExtra, err)
	}
	again, _ := sessionEnv(sess, nil)
	if !slices.Equal(again, with("A=2", "PATH=/bin")) {
		t.Fatalf("base env changed by earlier calls: %q", again)
	}
	if _, err := sessionEnv(sess, map[string]string{"BAD=KEY": "x"}); err == nil {
		t.Error("a key with '=' accepted")
	}
}
