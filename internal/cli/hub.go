package cli

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/hivetools/hive/internal/hub"
)

func init() {
	register(command{name: "hub", usage: "hub [--listen 127.0.0.1:4222] [--token-file F]   run a NATS JetStream server for a swarm on this machine (store in <state>/hub); prints its URL", run: runHub})
}

func runHub(ctx context.Context, e Env, args []string) error {
	fs, dir := newFlags("hub", e)
	addr := fs.String("listen", hub.DefaultAddr, "address to listen on (port 0: a free one)")
	tokenFile := fs.String("token-file", "", "file holding a token every client must give (--nats-token-file of the daemons)")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: hive hub takes no arguments, got %q", ErrUsage, fs.Args())
	}
	l, err := layout(*dir)
	if err != nil {
		return err
	}
	if err := l.Create(); err != nil {
		return err
	}
	var token string
	if *tokenFile != "" {
		b, err := os.ReadFile(*tokenFile)
		if err != nil {
			return fmt.Errorf("--token-file: %w", err)
		}
		if token = strings.TrimSpace(string(b)); token == "" {
			return fmt.Errorf("%w: --token-file %s: empty", ErrUsage, *tokenFile)
		}
	}
	h, err := hub.Start(hub.Options{Dir: filepath.Join(l.Dir, "hub"), Addr: *addr, Token: token})
	if err != nil {
		return err
	}
	defer h.Close()
	fmt.Fprintln(e.Stdout, h.URL())
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	<-ctx.Done()
	return nil
}
