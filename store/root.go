package store

import (
	"os"
	"path/filepath"
)

// RootEnv overrides the state dir, like the CLI's --root flag.
const RootEnv = "SKILLRUN_ROOT"

// SystemRoot is the state dir when running as root.
const SystemRoot = "/var/lib/skillrun"

// DefaultRoot is the state dir of this process: ResolveRoot over the real
// environment and effective uid. The CLI's --root wins over it.
func DefaultRoot() string {
	return ResolveRoot(os.Getenv, os.Geteuid())
}

// ResolveRoot picks the state dir from an environment lookup and an
// effective uid, without touching the file system: $SKILLRUN_ROOT if set;
// /var/lib/skillrun for uid 0; else $XDG_STATE_HOME/skillrun, falling back
// to $HOME/.local/state/skillrun. It returns "" when none applies (no HOME),
// which Open refuses.
func ResolveRoot(getenv func(string) string, euid int) string {
	if r := getenv(RootEnv); r != "" {
		return r
	}
	if euid == 0 {
		return SystemRoot
	}
	// The XDG spec says a relative value is invalid and must be ignored;
	// honouring it would put the state dir wherever the cwd happens to be.
	if x := getenv("XDG_STATE_HOME"); filepath.IsAbs(x) {
		return filepath.Join(x, "skillrun")
	}
	if h := getenv("HOME"); h != "" {
		return filepath.Join(h, ".local", "state", "skillrun")
	}
	return ""
}
