// Command admitc compiles, tests and serves Kubernetes admission policies.
// See internal/cli for the commands.
package main

import (
	"os"

	"github.com/admitc/admitc/internal/cli"
)

func main() {
	os.Exit(cli.Execute(cli.Streams{In: os.Stdin, Out: os.Stdout, Err: os.Stderr}, os.Args[1:]))
}
