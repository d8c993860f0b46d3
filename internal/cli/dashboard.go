package cli

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/hivetools/hive/internal/client"
	"github.com/hivetools/hive/internal/proto"
	"github.com/hivetools/hive/internal/termsafe"
)

func init() {
	register(command{name: "dashboard", usage: "dashboard [--print-url] [--base-url URL] [--json]   a one-time login link to the dashboard (opened in a browser unless --print-url)", run: runDashboard})
}

// runDashboard asks the running daemon for a one-time login URL (good for
// one login within two minutes), prints it, and unless --print-url opens
// it with xdg-open (open on macOS) when there is one.
func runDashboard(ctx context.Context, e Env, args []string) error {
	fs, dir := newFlags("dashboard", e)
	printOnly := fs.Bool("print-url", false, "only print the URL; open no browser")
	asJSON := fs.Bool("json", false, `JSON output: {"url": ...}`)
	base := fs.String("base-url", "", "build the link on this scheme://host[:port] (a LAN name, a TLS proxy) instead of the daemon's address")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		return fmt.Errorf("%w: hive dashboard takes no arguments, got %q", ErrUsage, fs.Args())
	}
	l, err := layout(*dir)
	if err != nil {
		return err
	}
	var baseURL *url.URL
	if *base != "" {
		u, err := url.Parse(*base)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || strings.Trim(u.Path, "/") != "" || u.RawQuery != "" {
			return fmt.Errorf("%w: --base-url %q: want scheme://host[:port] (http or https, no path)", ErrUsage, *base)
		}
		baseURL = u
	}
	resp, err := client.Call(l, proto.Request{Cmd: proto.CmdDashboard})
	if err != nil {
		return err
	}
	if baseURL != nil {
		u, err := url.Parse(resp.URL)
		if err != nil {
			return fmt.Errorf("the daemon's login URL %q: %w", resp.URL, err)
		}
		u.Scheme, u.Host = baseURL.Scheme, baseURL.Host
		resp.URL = u.String()
		if u.Scheme == "http" && !loopbackHost(u.Hostname()) {
			fmt.Fprintln(e.Stderr, "hive dashboard: warning: plain HTTP off this machine sends the login code and then the session cookie in clear; put a TLS proxy in front (docs/http-api.md)")
		}
	}
	if *asJSON {
		if err := jsonOut(e, map[string]string{"url": resp.URL}); err != nil {
			return err
		}
	} else {
		fmt.Fprintln(e.Stdout, resp.URL)
	}
	if *printOnly {
		return nil
	}
	for _, opener := range []string{"xdg-open", "open"} {
		if p, err := exec.LookPath(opener); err == nil {
			if err := openURL(p, resp.URL); err != nil {
				fmt.Fprintf(e.Stderr, "hive dashboard: could not open a browser: %s: open the URL above in one (it works once, for two minutes)\n", termsafe.Line(err.Error()))
			}
			return nil
		}
	}
	fmt.Fprintln(e.Stderr, "hive dashboard: no xdg-open here: open the URL above in a browser (it works once, for two minutes)")
	return nil
}

// openerWait is how long openURL waits for the opener's verdict.
const openerWait = 3 * time.Second

// openURL runs the opener at path on url and waits for it to hand the
// URL to a browser and exit: its failure (no browser, no display) is an
// error naming it, its status and the last line it printed. An opener
// still running after openerWait is taken to be the browser itself (a
// text browser xdg-open ran): it is left running, and its waiter ends
// with this process.
func openURL(path, url string) error {
	cmd := exec.Command(path, url)
	// Its output goes to a file, not a pipe: a browser it starts keeps
	// the descriptors, and a pipe would hold Wait until the browser ends
	// (or break under the browser once closed).
	out, err := os.CreateTemp("", "hive-opener-*")
	if err != nil {
		return fmt.Errorf("a file for %s's output: %w", filepath.Base(path), err)
	}
	os.Remove(out.Name()) // gone with the last descriptor
	defer out.Close()
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("%s: %w", filepath.Base(path), err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t := time.NewTimer(openerWait)
	defer t.Stop()
	select {
	case err := <-done:
		if err == nil {
			return nil
		}
		b, _ := io.ReadAll(io.NewSectionReader(out, 0, 64<<10))
		lines := strings.Split(strings.TrimSpace(string(b)), "\n")
		if last := strings.TrimSpace(lines[len(lines)-1]); last != "" {
			return fmt.Errorf("%s: %w: %s", filepath.Base(path), err, last)
		}
		return fmt.Errorf("%s: %w", filepath.Base(path), err)
	case <-t.C:
		return nil
	}
}

func loopbackHost(h string) bool {
	if strings.EqualFold(h, "localhost") {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}
