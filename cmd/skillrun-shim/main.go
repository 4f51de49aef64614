// Command skillrun-shim is the part of skillrun that runs inside the
// sandbox: pid 1 of every container (`skillrun-shim __shim.v1 CONFIG`) and the
// unprivileged exec stage it starts (`skillrun-shim __exec.v1 JSON`). skillrun
// uses it when it is installed beside the skillrun binary; without it the
// skillrun binary plays both parts itself, only slower to start (it is
// about fifteen times larger). It is not a user command.
package main

import (
	"fmt"
	"os"

	"github.com/skillrun/skillrun/landlock/shim"
)

func main() {
	if code, ok := shim.Subcommand(os.Args[1:]); ok {
		os.Exit(code)
	}
	if len(os.Args) == 2 && (os.Args[1] == "version" || os.Args[1] == "--version") {
		fmt.Printf("skillrun-shim protocol %d\n", shim.Protocol)
		return
	}
	fmt.Fprintln(os.Stderr, "skillrun-shim: started by skillrun inside its sandboxes, not by hand (usage: skillrun-shim __shim.v1 CONFIG | __exec.v1 JSON)")
	os.Exit(2)
}
