package landlock

import (
	"strings"

	golandlock "github.com/landlock-lsm/go-landlock/landlock"
	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"
)

// Result is what Restrict really enforced, to be recorded on the invocation.
type Result struct {
	ABI          int      `json:"abi"`                     // the ABI whose rights are enforced; 0: none
	KernelABI    int      `json:"kernel_abi"`              // what the kernel reported; 0: the query failed
	Rules        int      `json:"rules"`                   // path rules in the ruleset
	Skipped      int      `json:"skipped"`                 // plan rules whose path does not exist here
	SkippedPaths []string `json:"skipped_paths,omitempty"` // …and their paths
	Net          bool     `json:"net"`                     // TCP bind/connect handled (ABI ≥ 4)
	Scoped       bool     `json:"scoped"`                  // abstract sockets/signals scoped (ABI ≥ 6)
	// Unenforced names what the plan would deny that this ABI cannot
	// restrict (for example "tcp_connect" below ABI 4).
	Unenforced []string `json:"unenforced,omitempty"`
}

// abiConfigs are go-landlock's presets indexed by ABI: each handles every
// access right and scope its ABI knows.
var abiConfigs = []golandlock.Config{{},
	golandlock.V1, golandlock.V2, golandlock.V3, golandlock.V4, golandlock.V5, golandlock.V6,
	golandlock.V7, golandlock.V8, golandlock.V9, golandlock.V10, golandlock.V11,
}

// maxABI is the newest ABI whose rights go-landlock, and so skillrun, can
// name. A newer kernel is used at this ABI.
var maxABI = len(abiConfigs) - 1

func abiConfig(abi int) golandlock.Config {
	return abiConfigs[max(0, min(abi, maxABI))]
}

// Rights a plan rule maps to. make_char and make_block are never granted
// (device nodes are the sandbox's business, not the skill's), nor ioctl_dev
// (ioctls on devices opened in the sandbox), nor resolve_unix (connecting
// to pathname sockets other than the broker's).
const (
	readFileRights = llsys.AccessFSReadFile
	readDirRights  = llsys.AccessFSReadFile | llsys.AccessFSReadDir
	execRights     = llsys.AccessFSExecute
	writeFile      = llsys.AccessFSWriteFile | llsys.AccessFSTruncate
	// Refer lets a file move between directories of a writable tree (git's
	// object store, write-then-rename into a subdirectory); without it such
	// renames fail with EXDEV. It grants nothing new: Landlock refuses a
	// rename or link that would give the file rights it lacked.
	writeDir = writeFile | llsys.AccessFSMakeReg | llsys.AccessFSMakeDir | llsys.AccessFSMakeSym |
		llsys.AccessFSMakeFifo | llsys.AccessFSMakeSock | llsys.AccessFSRemoveFile |
		llsys.AccessFSRemoveDir | llsys.AccessFSRefer
)

// fsAccess is the access a plan rule grants at abi on a directory (the
// whole tree beneath) or on a single file, restricted to what abi handles.
// A Dir rule on a file gets the file rights only.
func fsAccess(r FSRule, isDir bool, abi int) golandlock.AccessFSSet {
	var a golandlock.AccessFSSet
	switch {
	case r.Read && isDir:
		a |= readDirRights
	case r.Read:
		a |= readFileRights
	}
	if r.Exec {
		a |= execRights
	}
	switch {
	case r.Write && isDir:
		a |= writeDir
	case r.Write:
		a |= writeFile
	}
	return a & abiConfig(abi).HandledAccessFS
}

// netAccess is the set of TCP rights the plan denies that abi can handle.
// No rule is ever added for them, so handling one denies it on every port.
// UDP (ABI ≥ 10) is left alone: the plan does not ask for it, and the
// sandbox's network namespace has only loopback.
func netAccess(p Plan, abi int) golandlock.AccessNetSet {
	var a golandlock.AccessNetSet
	if p.DenyTCPBind {
		a |= llsys.AccessNetBindTCP
	}
	if p.DenyTCPConnect {
		a |= llsys.AccessNetConnectTCP
	}
	return a & abiConfig(abi).HandledAccessNet
}

// scopes is the set of IPC scopes the plan asks for that abi can handle.
func scopes(p Plan, abi int) golandlock.ScopedSet {
	var s golandlock.ScopedSet
	if p.ScopeAbstract {
		s |= llsys.ScopeAbstractUnixSocket
	}
	if p.ScopeSignal {
		s |= llsys.ScopeSignal
	}
	return s & abiConfig(abi).Scoped
}

// unenforced names what the plan would deny (with the rights skillrun
// handles at its newest ABI) but abi cannot restrict.
func unenforced(p Plan, abi int) []string {
	var out []string
	fs := abiConfig(abi).HandledAccessFS
	if abi <= 0 {
		out = append(out, "filesystem")
	}
	for _, r := range []struct {
		right golandlock.AccessFSSet
		name  string
	}{{llsys.AccessFSTruncate, "truncate"}, {llsys.AccessFSIoctlDev, "ioctl_dev"}, {llsys.AccessFSResolveUnix, "resolve_unix"}} {
		if abi > 0 && fs&r.right == 0 {
			out = append(out, r.name)
		}
	}
	net := netAccess(p, abi)
	if p.DenyTCPBind && net&llsys.AccessNetBindTCP == 0 {
		out = append(out, "tcp_bind")
	}
	if p.DenyTCPConnect && net&llsys.AccessNetConnectTCP == 0 {
		out = append(out, "tcp_connect")
	}
	sc := scopes(p, abi)
	if p.ScopeAbstract && sc&llsys.ScopeAbstractUnixSocket == 0 {
		out = append(out, "scope_abstract_unix_socket")
	}
	if p.ScopeSignal && sc&llsys.ScopeSignal == 0 {
		out = append(out, "scope_signal")
	}
	return out
}

// Granted is what the rules grant on path: Landlock allows an access when
// any rule on path itself or, for Dir rules, on a directory above it
// allows it. The result's Path is path; Dir is unset.
func Granted(rules []FSRule, path string) FSRule {
	g := FSRule{Path: path}
	for _, r := range rules {
		if r.Path == path || (r.Dir && beneath(r.Path, path)) {
			g.Read = g.Read || r.Read
			g.Write = g.Write || r.Write
			g.Exec = g.Exec || r.Exec
		}
	}
	return g
}

func beneath(dir, path string) bool {
	return dir == "/" || strings.HasPrefix(path, strings.TrimSuffix(dir, "/")+"/")
}
