//go:build linux

package main

import (
	"os"

	"github.com/opencontainers/runc/libcontainer"
	_ "github.com/opencontainers/runc/libcontainer/nsenter" // the cgo stage that joins namespaces before Go starts
)

// libcontainer starts each container by re-executing this binary as
// "init"; that must happen before main and before cobra sees the args.
func init() {
	if len(os.Args) > 1 && os.Args[1] == "init" {
		libcontainer.Init()
	}
}
