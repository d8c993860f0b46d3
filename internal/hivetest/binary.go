// Package hivetest is the end-to-end harness of hive's tests: it runs the
// hive binary as real processes (the CLI, `hive daemon`, the `hive mcp`
// bridge) on state dirs of their own, talks MCP to them with the SDK's
// client, and stops by pid what they leave; and it has the waits every test
// uses instead of a hand-written poll loop (Eventually, Wait).
//
// It imports nothing of hive but talks to the binary as a user would (its
// CLI, its socket protocol, its lock files), so the tests of every package
// may import it, internal ones included, without an import cycle.
//
// A package whose tests run hive calls Main from its TestMain; Main decides
// where the binary comes from (see there).
package hivetest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// MainEnv is the environment entry that makes a test binary whose TestMain
// calls Main with a hive main run as hive.
const MainEnv = "HIVE_TEST_MAIN=1"

// Binary is a hive executable as tests run it.
type Binary struct {
	// Path is the executable's absolute path.
	Path string
	// Env is added to the environment of every command that runs Path
	// (MainEnv for a test binary that doubles as hive; empty for a built
	// hive).
	Env []string
}

// Environ is the environment of a command of b on state dir state: the
// test's own environment, b.Env and HIVE_STATE_DIR=state (none if state
// is empty).
func (b Binary) Environ(state string) []string {
	env := append(os.Environ(), b.Env...)
	if state != "" {
		env = append(env, "HIVE_STATE_DIR="+state)
	}
	return env
}

// Where Bin takes the binary from, as Main set it.
var (
	mode int // modeUnset, modeSelf or modeBuild
	self Binary

	buildOnce sync.Once
	buildDir  string
	built     Binary
	buildErr  error
)

const (
	modeUnset = iota
	modeSelf
	modeBuild
)

// Main runs the tests of a package whose tests run hive, and exits with
// their result. Call it from TestMain, before anything else.
//
// With hiveMain set, the test binary doubles as hive: run with MainEnv in
// its environment (as every command of Bin is) it calls hiveMain and
// exits 0 if hiveMain returns, without running any test. The processes
// are then of the code under test, under -race too (GORACE's
// atexit_sleep_ms is set to 0 unless GORACE is set: every process of a
// -race binary would sleep a second at exit; a race is still reported and
// its process still exits 66).
//
// With hiveMain nil, Bin builds ./cmd/hive of the module the tests run in
// (go build, no -race) the first time it is called, so that tests that
// run no hive build nothing; the build is removed once the tests end.
//
// Each of after runs once the tests passed, in order; one that returns an
// error fails the run with it (a leak check: goleak.Find).
func Main(m *testing.M, hiveMain func(), after ...func() error) {
	if hiveMain == nil {
		mode = modeBuild
		code := checked(m.Run(), after)
		if buildDir != "" {
			os.RemoveAll(buildDir)
		}
		os.Exit(code)
	}
	if os.Getenv(mainEnvName) == mainEnvValue {
		hiveMain()
		os.Exit(0)
	}
	if _, ok := os.LookupEnv("GORACE"); !ok {
		os.Setenv("GORACE", "atexit_sleep_ms=0")
	}
	exe, err := os.Executable() // absolute: commands may run in other dirs
	if err != nil {
		fmt.Fprintln(os.Stderr, "hivetest: the test binary's path:", err)
		os.Exit(2)
	}
	mode, self = modeSelf, Binary{Path: exe, Env: []string{MainEnv}}
	os.Exit(checked(m.Run(), after))
}

// checked is the tests' exit code after the checks of Main.
func checked(code int, after []func() error) int {
	for _, check := range after {
		if code != 0 {
			break
		}
		if err := check(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			code = 1
		}
	}
	return code
}

var mainEnvName, mainEnvValue, _ = strings.Cut(MainEnv, "=")

// Bin is the hive binary of the tests, as Main chose it. It fails tb if
// Main was not called or the build failed (each test that asks fails the
// same way; the build is not tried again).
func Bin(tb testing.TB) Binary {
	tb.Helper()
	switch mode {
	case modeSelf:
		return self
	case modeBuild:
		buildOnce.Do(build)
		if buildErr != nil {
			tb.Fatal(buildErr)
		}
		return built
	}
	tb.Fatal("hivetest: no hive binary: the package's TestMain must call hivetest.Main")
	return Binary{}
}

// build builds ./cmd/hive of the module the tests run in.
func build() {
	gomod, err := exec.Command("go", "env", "GOMOD").Output()
	root := filepath.Dir(strings.TrimSpace(string(gomod)))
	if err != nil || root == "." {
		buildErr = fmt.Errorf("hivetest: find the module to build hive from (go env GOMOD: %q): %v", gomod, err)
		return
	}
	if buildDir, err = os.MkdirTemp("", "hivetest-bin-"); err != nil {
		buildErr = fmt.Errorf("hivetest: dir for the hive build: %w", err)
		return
	}
	path := filepath.Join(buildDir, "hive")
	cmd := exec.Command("go", "build", "-o", path, "./cmd/hive")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		buildErr = fmt.Errorf("hivetest: go build ./cmd/hive in %s: %v\n%s", root, err, out)
		return
	}
	built = Binary{Path: path}
}

// Command is `hive ARGS` on state dir state (HIVE_STATE_DIR; none if
// state is empty), not started. The caller may change it before starting
// it (Dir, Stdin, Stdout, Stderr, more Env).
func Command(tb testing.TB, state string, args ...string) *exec.Cmd {
	tb.Helper()
	b := Bin(tb)
	cmd := exec.Command(b.Path, args...)
	cmd.Env = b.Environ(state)
	return cmd
}

// Run runs `hive ARGS` on state dir state and waits for it. It returns its
// stdout; if it fails (err is then its *exec.ExitError, or why it did not
// run), its stdout followed by its stderr.
func Run(tb testing.TB, state string, args ...string) (string, error) {
	tb.Helper()
	cmd := Command(tb, state, args...)
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return out.String() + errb.String(), err
	}
	return out.String(), nil
}
