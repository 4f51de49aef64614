// Command skillrun runs third-party agent skills in a hardened sandbox and
// brokers every tool call they make. See README.md and DESIGN.md.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/skillrun/skillrun/internal/phase"
	"github.com/skillrun/skillrun/landlock/shim"
)

func main() {
	// The sandbox re-executes this binary: as the container's shim, and as
	// the shim's unprivileged exec stage. Neither is a user command.
	if code, ok := shim.Subcommand(os.Args[1:]); ok {
		os.Exit(code)
	}
	phase.Mark("main")
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := Run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(exitCode(err, os.Stderr))
}
