package cli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/hivetools/hive/internal/build"
	"github.com/hivetools/hive/internal/client"
	"github.com/hivetools/hive/internal/paths"
	"github.com/hivetools/hive/internal/proto"
)

const (
	unitName              = "hive.service"
	serviceInstallUsage   = "service install [--http 127.0.0.1:PORT] [--exe PATH]   write and enable a systemd user unit running hive daemon"
	serviceUninstallUsage = "service uninstall   disable and remove the unit"
	serviceStatusUsage    = "service status   the unit, systemd's view of it, and the daemon"
)

func init() {
	register(command{name: "service", usage: serviceInstallUsage + "\n  hive " + serviceUninstallUsage + "\n  hive " + serviceStatusUsage, run: runService})
	registerSub("service install", serviceInstallUsage)
	registerSub("service uninstall", serviceUninstallUsage)
	registerSub("service status", serviceStatusUsage)
}

// systemctl is the systemctl command ($HIVE_SYSTEMCTL, for tests and
// unusual installs, else systemctl).
func systemctl() string {
	if s := os.Getenv("HIVE_SYSTEMCTL"); s != "" {
		return s
	}
	return "systemctl"
}

// unitKeepsJobs says whether the unit leaves what its daemon started
// running when the daemon exits (KillMode=process, as hive service
// install writes it since the holder of the jobs): then hive restart can
// stop the daemon keeping its jobs and have systemd start it again.
func unitKeepsJobs() bool {
	out, err := exec.Command(systemctl(), "--user", "show", "-p", "KillMode", "--value", unitName).Output()
	return err == nil && strings.TrimSpace(string(out)) == "process"
}

// userSystemd says whether systemctl --user works here, and if not why.
func userSystemd() error {
	p, err := exec.LookPath(systemctl())
	if err != nil {
		return fmt.Errorf("no systemctl: %v", err)
	}
	if out, err := exec.Command(p, "--user", "show-environment").CombinedOutput(); err != nil {
		return fmt.Errorf("systemctl --user does not work here: %v: %s", err, strings.TrimSpace(string(out)))
	}
	return nil
}

// unitPath is where the user unit goes: $XDG_CONFIG_HOME/systemd/user.
func unitPath() (string, error) {
	base := os.Getenv("XDG_CONFIG_HOME")
	if base == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("unit path: no $XDG_CONFIG_HOME and no home directory: %w", err)
		}
		base = filepath.Join(home, ".config")
	}
	return filepath.Join(base, "systemd", "user", unitName), nil
}

// systemdQuote quotes one ExecStart argument: double quotes, with \, "
// escaped, and % and $ doubled (systemd's specifiers and variables).
func systemdQuote(s string) string {
	s = strings.ReplaceAll(s, `\`, `\\`)
	s = strings.ReplaceAll(s, `"`, `\"`)
	s = strings.ReplaceAll(s, "%", "%%")
	s = strings.ReplaceAll(s, "$", "$$")
	return `"` + s + `"`
}

// unitText is the unit running `exe daemon --state-dir DIR [--http A]`.
func unitText(exe, state, httpAddr string) string {
	argv := []string{exe, "daemon", "--state-dir", state}
	if httpAddr != "" {
		argv = append(argv, "--http", httpAddr)
	}
	q := make([]string, len(argv))
	for i, a := range argv {
		q[i] = systemdQuote(a)
	}
	return fmt.Sprintf(`# Written by hive service install; hive service uninstall removes it.
# The daemon's other settings are in %s (see hive config).
[Unit]
Description=hive: a terminal and an inbox for AI agents, as MCP tools

[Service]
Type=simple
ExecStart=%s
Environment=%s=systemd
# SIGTERM to the daemon only: it stops its jobs (SIGINT, grace, SIGKILL)
# through the holder of the jobs, records them, and the holder exits.
# process, not mixed: a daemon that exits for hive restart leaves the
# holder and the jobs running for the daemon systemd starts next.
KillMode=process
TimeoutStopSec=60
Restart=on-failure
RestartSec=2

[Install]
WantedBy=default.target
`, paths.Layout{Dir: state}.Config(), strings.Join(q, " "), envSupervisor)
}

func runService(ctx context.Context, e Env, args []string) error {
	if len(args) == 0 {
		return fmt.Errorf("%w: hive service install|uninstall|status (hive service -h)", ErrUsage)
	}
	switch args[0] {
	case "install":
		return runServiceInstall(e, args[1:])
	case "uninstall":
		return runServiceUninstall(e, args[1:])
	case "status":
		return runServiceStatus(e, args[1:])
	}
	fs, _ := newFlags("service", e)
	if err := parse(fs, args); err != nil {
		return err
	}
	return fmt.Errorf("%w: hive service %q: want install, uninstall or status", ErrUsage, args[0])
}

func runServiceInstall(e Env, args []string) error {
	fs, dir := newFlags("service install", e)
	httpAddr := fs.String("http", "", "the daemon serves streamable HTTP MCP on this address too (host:port)")
	exe := fs.String("exe", "", "the hive binary the unit runs (default: this one)")
	if err := parse(fs, args); err != nil {
		return err
	}
	if *httpAddr != "" {
		if _, port, err := net.SplitHostPort(*httpAddr); err != nil || port == "" {
			return fmt.Errorf("%w: --http %q: want host:port, such as 127.0.0.1:8765", ErrUsage, *httpAddr)
		}
	}
	bin := *exe
	if bin == "" {
		bin = e.Exe
		if build.Temporary(bin) {
			return fmt.Errorf("%w: this hive (%s) is a temporary build of go run or go test, gone soon: build it (go build -o ~/.local/bin/hive ./cmd/hive) and run that binary's service install, or give --exe", ErrUsage, bin)
		}
	}
	abs, err := filepath.Abs(bin)
	if err != nil {
		return err
	}
	if fi, err := os.Stat(abs); err != nil || fi.IsDir() {
		return fmt.Errorf("%w: --exe %q: not an executable file", ErrUsage, abs)
	}
	l, err := layout(*dir)
	if err != nil {
		return err
	}
	unit, err := unitPath()
	if err != nil {
		return err
	}
	text := unitText(abs, l.Dir, *httpAddr)
	if err := os.MkdirAll(filepath.Dir(unit), 0o755); err != nil {
		return fmt.Errorf("make %s: %w", filepath.Dir(unit), err)
	}
	if err := paths.ReplaceFile(unit, []byte(text)); err != nil {
		return fmt.Errorf("write unit: %w", err)
	}
	os.Chmod(unit, 0o644)
	fmt.Fprintf(e.Stdout, "wrote %s\n", unit)
	if err := userSystemd(); err != nil {
		fmt.Fprintf(e.Stdout, "systemd is not available here (%v): the unit is written but not enabled; it reads:\n\n%s", err, text)
		return nil
	}
	sc := systemctl()
	if out, err := exec.Command(sc, "--user", "daemon-reload").CombinedOutput(); err != nil {
		return fmt.Errorf("systemctl --user daemon-reload: %v: %s", err, out)
	}
	// A daemon already running outside systemd holds the state dir: the
	// unit's would fail, so it is only enabled, to start at next login.
	r, rerr := client.Call(l, proto.Request{Cmd: proto.CmdVersion})
	if rerr == nil && r.Supervisor != "systemd" {
		if out, err := exec.Command(sc, "--user", "enable", unitName).CombinedOutput(); err != nil {
			return fmt.Errorf("systemctl --user enable %s: %v: %s", unitName, err, out)
		}
		fmt.Fprintf(e.Stdout, "enabled %s; a daemon (pid %d) runs outside systemd: hive stop, then systemctl --user start hive\n", unitName, r.PID)
		return nil
	}
	if out, err := exec.Command(sc, "--user", "enable", "--now", unitName).CombinedOutput(); err != nil {
		return fmt.Errorf("systemctl --user enable --now %s: %v: %s", unitName, err, out)
	}
	fmt.Fprintf(e.Stdout, "enabled and started %s (systemctl --user status hive; journalctl --user -u hive)\n", unitName)
	if rerr == nil { // it ran under systemd before this install
		fmt.Fprintf(e.Stdout, "the service's daemon (pid %d) keeps its old command line until hive restart (which keeps its jobs)\n", r.PID)
	}
	return nil
}

func runServiceUninstall(e Env, args []string) error {
	fs, _ := newFlags("service uninstall", e)
	if err := parse(fs, args); err != nil {
		return err
	}
	unit, err := unitPath()
	if err != nil {
		return err
	}
	sysErr := userSystemd()
	if sysErr == nil {
		// Not enabled or not loaded is fine: the file goes either way.
		exec.Command(systemctl(), "--user", "disable", "--now", unitName).Run()
	}
	if err := os.Remove(unit); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove %s: %w", unit, err)
	} else if err != nil {
		fmt.Fprintf(e.Stdout, "no unit at %s\n", unit)
	} else {
		fmt.Fprintf(e.Stdout, "removed %s\n", unit)
	}
	if sysErr == nil {
		exec.Command(systemctl(), "--user", "daemon-reload").Run()
		fmt.Fprintf(e.Stdout, "disabled and stopped %s\n", unitName)
	} else {
		fmt.Fprintf(e.Stdout, "systemd is not available here (%v): nothing to disable\n", sysErr)
	}
	return nil
}

func runServiceStatus(e Env, args []string) error {
	fs, dir := newFlags("service status", e)
	if err := parse(fs, args); err != nil {
		return err
	}
	unit, err := unitPath()
	if err != nil {
		return err
	}
	if b, err := os.ReadFile(unit); err == nil {
		fmt.Fprintf(e.Stdout, "unit    %s\n", unit)
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "ExecStart="); ok {
				fmt.Fprintf(e.Stdout, "runs    %s\n", v)
			}
		}
	} else {
		fmt.Fprintf(e.Stdout, "unit    not installed (%s)\n", unit)
	}
	if err := userSystemd(); err != nil {
		fmt.Fprintf(e.Stdout, "systemd not available (%v)\n", err)
	} else {
		out, _ := exec.Command(systemctl(), "--user", "is-active", unitName).Output()
		en, _ := exec.Command(systemctl(), "--user", "is-enabled", unitName).Output()
		fmt.Fprintf(e.Stdout, "systemd %s, %s\n", strings.TrimSpace(string(out)), strings.TrimSpace(string(en)))
	}
	l, err := layout(*dir)
	if err != nil {
		return err
	}
	if r, err := client.Call(l, proto.Request{Cmd: proto.CmdVersion}); err == nil {
		by := "outside systemd"
		if r.Supervisor == "systemd" {
			by = "under systemd"
		}
		fmt.Fprintf(e.Stdout, "daemon  pid %d, %s, hive %s\n", r.PID, by, buildOf(r))
	} else {
		fmt.Fprintln(e.Stdout, "daemon  not running")
	}
	return nil
}
