// Command hive gives an AI agent a real terminal and an inbox, as MCP tools.
// See the README; everything lives in internal/.
package main

import (
	"context"
	"os"

	"github.com/hivetools/hive/internal/cli"
)

func main() {
	exe, err := os.Executable()
	if err != nil {
		exe = os.Args[0]
	}
	err = cli.Run(context.Background(), cli.Env{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, Exe: exe}, os.Args[1:])
	os.Exit(cli.ExitCode(err, os.Stderr))
}
