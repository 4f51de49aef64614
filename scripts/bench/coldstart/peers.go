//go:build benchtool && linux

package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/opencontainers/runc/libcontainer/configs"

	"github.com/skillrun/skillrun/seccomp"
)

// The peers run the same no-op entrypoint (a copy of /usr/bin/true in a
// read-only skill folder) in a sandbox built like skillrun's: an empty
// read-only root with /usr bound read-only and the merged-/usr links, the
// loader cache and /etc/alternatives, /proc, a small tmpfs /dev and a
// 64 MiB tmpfs /tmp, and skillrun's own seccomp allowlist (the same table,
// translated by seccomp.Config for runc, compiled by seccomp.Compile for
// bwrap). What skillrun binds on top (broker socket, shim binary, shim
// config) the peers do not need.

const (
	// runcCgroupParent holds the bundle's cgroup, cgroupsPath /skillrun-bench/runc.
	runcCgroupParent = "skillrun-bench"
	skillInSandbox   = "/skill"
	sandboxPATH      = "PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin"
)

// mergedUsr are the root links of a merged-/usr host, as skillrun makes them.
var mergedUsr = [][2]string{{"bin", "usr/bin"}, {"sbin", "usr/sbin"}, {"lib", "usr/lib"}, {"lib64", "usr/lib64"}}

// writeBundle writes an OCI bundle for `runc run` into dir and returns it.
func writeBundle(dir, skillDir string) error {
	rootfs := filepath.Join(dir, "rootfs")
	if err := os.MkdirAll(rootfs, 0o755); err != nil {
		return err
	}
	for _, l := range mergedUsr {
		if err := os.Symlink(l[1], filepath.Join(rootfs, l[0])); err != nil && !os.IsExist(err) {
			return err
		}
	}
	cfg, err := ociConfig(skillDir)
	if err != nil {
		return err
	}
	data, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "config.json"), data, 0o644)
}

type object = map[string]any

// ociConfig mirrors runtime/config_linux.go: the same namespaces, mounts,
// masked and read-only paths, limits and seccomp table. The process runs
// as an unprivileged uid with no capabilities, as skillrun's entrypoint
// does once its shim has switched to the invocation's uid.
func ociConfig(skillDir string) (object, error) {
	sc, err := ociSeccomp(seccomp.Config())
	if err != nil {
		return nil, err
	}
	ro := []string{"rbind", "ro", "nosuid", "nodev"}
	mounts := []object{
		{"destination": "/proc", "type": "proc", "source": "proc", "options": []string{"nosuid", "nodev", "noexec"}},
		{"destination": "/dev", "type": "tmpfs", "source": "tmpfs", "options": []string{"nosuid", "noexec", "strictatime", "mode=755", "size=64k"}},
		{"destination": "/usr", "type": "bind", "source": "/usr", "options": ro},
		{"destination": "/etc/ld.so.cache", "type": "bind", "source": "/etc/ld.so.cache", "options": ro},
		{"destination": "/etc/alternatives", "type": "bind", "source": "/etc/alternatives", "options": ro},
		{"destination": "/tmp", "type": "tmpfs", "source": "tmpfs", "options": []string{"nosuid", "nodev", "noexec", "mode=1777", "size=67108864"}},
		{"destination": skillInSandbox, "type": "bind", "source": skillDir, "options": ro},
	}
	var ns []object
	for _, t := range []string{"pid", "network", "mount", "ipc", "uts", "cgroup"} {
		ns = append(ns, object{"type": t})
	}
	mem, pids := int64(512<<20), int64(64)
	quota, period := int64(100000), uint64(100000)
	return object{
		"ociVersion": "1.0.2",
		"process": object{
			"terminal":        false,
			"user":            object{"uid": 200999, "gid": 200999},
			"args":            []string{skillInSandbox + "/main"},
			"env":             []string{sandboxPATH, "HOME=/tmp", "LANG=C.UTF-8"},
			"cwd":             skillInSandbox,
			"capabilities":    object{"bounding": []string{}, "effective": []string{}, "permitted": []string{}},
			"noNewPrivileges": true,
			"rlimits": []object{
				{"type": "RLIMIT_NOFILE", "hard": 1024, "soft": 1024},
				{"type": "RLIMIT_NPROC", "hard": 8, "soft": 8},
				{"type": "RLIMIT_CORE", "hard": 0, "soft": 0},
			},
		},
		"root":     object{"path": "rootfs", "readonly": true},
		"hostname": "skill",
		"mounts":   mounts,
		"linux": object{
			"namespaces":  ns,
			"cgroupsPath": "/" + runcCgroupParent + "/runc",
			"resources": object{
				"devices": []object{{"allow": false, "access": "rwm"}},
				"memory":  object{"limit": mem},
				"pids":    object{"limit": pids},
				"cpu":     object{"quota": quota, "period": period},
			},
			"seccomp": sc,
			"maskedPaths": []string{"/proc/acpi", "/proc/asound", "/proc/kcore", "/proc/keys", "/proc/latency_stats",
				"/proc/timer_list", "/proc/timer_stats", "/proc/sched_debug", "/proc/scsi", "/sys/firmware", "/proc/interrupts"},
			"readonlyPaths": []string{"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"},
		},
	}, nil
}

// ociSeccomp translates libcontainer's seccomp configuration (what skillrun
// hands libcontainer) into the OCI runtime-spec form runc reads.
func ociSeccomp(c *configs.Seccomp) (object, error) {
	action := map[configs.Action]string{configs.Allow: "SCMP_ACT_ALLOW", configs.Errno: "SCMP_ACT_ERRNO"}
	op := map[configs.Operator]string{configs.EqualTo: "SCMP_CMP_EQ", configs.MaskEqualTo: "SCMP_CMP_MASKED_EQ"}
	arch := map[string]string{"amd64": "SCMP_ARCH_X86_64"}
	out := object{"defaultAction": action[c.DefaultAction]}
	if c.DefaultErrnoRet != nil {
		out["defaultErrnoRet"] = *c.DefaultErrnoRet
	}
	var archs []string
	for _, a := range c.Architectures {
		archs = append(archs, arch[a])
	}
	out["architectures"] = archs
	var calls []object
	for _, s := range c.Syscalls {
		a, ok := action[s.Action]
		if !ok {
			return nil, fmt.Errorf("seccomp: %s: action %v has no OCI form here", s.Name, s.Action)
		}
		e := object{"names": []string{s.Name}, "action": a}
		if s.ErrnoRet != nil {
			e["errnoRet"] = *s.ErrnoRet
		}
		var args []object
		for _, arg := range s.Args {
			o, ok := op[arg.Op]
			if !ok {
				return nil, fmt.Errorf("seccomp: %s: operator %v has no OCI form here", s.Name, arg.Op)
			}
			args = append(args, object{"index": arg.Index, "value": arg.Value, "valueTwo": arg.ValueTwo, "op": o})
		}
		if args != nil {
			e["args"] = args
		}
		calls = append(calls, e)
	}
	out["syscalls"] = calls
	return out, nil
}

// bwrapArgs is the same sandbox for bwrap; the seccomp program is read
// from fd 3 (the first ExtraFiles entry).
func bwrapArgs(skillDir string, withSeccomp bool) []string {
	args := []string{"--unshare-all", "--die-with-parent", "--cap-drop", "ALL",
		"--ro-bind", "/usr", "/usr"}
	for _, l := range mergedUsr {
		args = append(args, "--symlink", l[1], "/"+l[0])
	}
	args = append(args,
		"--ro-bind", "/etc/ld.so.cache", "/etc/ld.so.cache",
		"--ro-bind", "/etc/alternatives", "/etc/alternatives",
		"--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp",
		"--ro-bind", skillDir, skillInSandbox, "--chdir", skillInSandbox,
		"--clearenv", "--setenv", "PATH", sandboxPATH[len("PATH="):], "--setenv", "HOME", "/tmp")
	if withSeccomp {
		args = append(args, "--seccomp", "3")
	}
	return append(args, skillInSandbox+"/main")
}

// writeSeccompProgram writes skillrun's compiled filter for bwrap.
func writeSeccompProgram(path string) error {
	prog, err := seccomp.Compile()
	if err != nil {
		return err
	}
	return os.WriteFile(path, prog, 0o600)
}
