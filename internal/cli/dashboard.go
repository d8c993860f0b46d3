package cli

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"os/exec"
	"strings"

	"github.com/hivetools/hive/internal/client"
	"github.com/hivetools/hive/internal/proto"
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
			cmd := exec.Command(p, resp.URL)
			if err := cmd.Start(); err != nil {
				return fmt.Errorf("open the dashboard with %s: %w", opener, err)
			}
			// The opener hands the URL to a browser and exits; its status
			// says nothing useful.
			return cmd.Process.Release()
		}
	}
	fmt.Fprintln(e.Stderr, "hive dashboard: no xdg-open here: open the URL above in a browser (it works once, for two minutes)")
	return nil
}

func loopbackHost(h string) bool {
	if strings.EqualFold(h, "localhost") {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}
