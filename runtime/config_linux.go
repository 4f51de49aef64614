//go:build linux

package runtime

import (
	"fmt"

	"github.com/opencontainers/runc/libcontainer/configs"
	"golang.org/x/sys/unix"

	"github.com/skillrun/skillrun/enforce"
)

var namespaceTypes = map[string]configs.NamespaceType{
	"pid": configs.NEWPID, "net": configs.NEWNET, "mount": configs.NEWNS, "ipc": configs.NEWIPC,
	"uts": configs.NEWUTS, "cgroup": configs.NEWCGROUP, "user": configs.NEWUSER,
}

// shimCaps are all the shim keeps: it switches to the invocation's uid when
// it starts the entrypoint (SETUID, SETGID) and forwards signals to it
// (KILL). The entrypoint itself runs with none.
var shimCaps = []string{"CAP_SETUID", "CAP_SETGID", "CAP_KILL"}

// config translates the grant plan into libcontainer's configuration.
func (s *container) config(rootfs, shimConfig string) (*configs.Config, error) {
	p := s.spec.Plan
	var ns configs.Namespaces
	for _, n := range p.Namespaces {
		t, ok := namespaceTypes[n]
		if !ok {
			return nil, fmt.Errorf("namespace %q: unknown", n)
		}
		if t == configs.NEWUSER {
			return nil, fmt.Errorf("%w: rootless operation (a user namespace) is not supported yet; run as root or use --isolation rlimit", ErrIsolationUnavailable)
		}
		ns = append(ns, configs.Namespace{Type: t})
	}
	mounts, err := s.mounts(shimConfig)
	if err != nil {
		return nil, err
	}
	devs, rules := devices()
	caps := &configs.Capabilities{Bounding: shimCaps, Effective: shimCaps, Permitted: shimCaps}
	return &configs.Config{
		Rootfs:       rootfs,
		Readonlyfs:   true,
		Mounts:       mounts,
		Devices:      devs,
		Hostname:     "skill",
		Namespaces:   ns,
		Capabilities: caps,
		Networks:     []*configs.Network{{Type: "loopback", Address: "127.0.0.1/0", Gateway: "localhost"}},
		Cgroups:      s.cgroup(rules),
		// No Seccomp here: the shim loads seccomp.Program itself, first
		// thing, on all its threads (libcontainer would compile the same
		// program with libseccomp in every init: ~5 ms a start).
		NoNewPrivileges:   true,
		NoNewKeyring:      true,
		ParentDeathSignal: int(unix.SIGKILL), // a dead supervisor takes its sandbox with it
		MaskPaths: []string{"/proc/acpi", "/proc/asound", "/proc/kcore", "/proc/keys", "/proc/latency_stats",
			"/proc/timer_list", "/proc/timer_stats", "/proc/sched_debug", "/proc/scsi", "/sys/firmware", "/proc/interrupts"},
		ReadonlyPaths: []string{"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"},
	}, nil
}

// mounts translates the plan's mount table. Every bind is nosuid and nodev;
// only system directories, the skill folder and the shim keep exec.
func (s *container) mounts(shimConfig string) ([]*configs.Mount, error) {
	const hardened = unix.MS_NOSUID | unix.MS_NODEV
	var out []*configs.Mount
	for _, m := range s.spec.Plan.Mounts {
		flags := hardened
		if m.ReadOnly {
			flags |= unix.MS_RDONLY
		}
		switch m.Kind {
		case "symlink":
			continue // made in the rootfs by prepareRootfs
		case "proc":
			out = append(out, &configs.Mount{Source: "proc", Destination: m.Target, Device: "proc", Flags: hardened | unix.MS_NOEXEC})
		case "dev":
			out = append(out, &configs.Mount{Source: "tmpfs", Destination: m.Target, Device: "tmpfs", Flags: unix.MS_NOSUID | unix.MS_NOEXEC | unix.MS_STRICTATIME, Data: "mode=755,size=64k"})
		case "tmpfs":
			out = append(out, &configs.Mount{Source: "tmpfs", Destination: m.Target, Device: "tmpfs", Flags: hardened | unix.MS_NOEXEC,
				Data: fmt.Sprintf("mode=1777,size=%d", s.spec.Plan.Limits.TmpBytes)})
		case "bind":
			src := m.Source
			switch m.Origin {
			case "broker":
				src = s.spec.SocketPath
			case "shim":
				src = s.spec.ShimBinary
				if m.Target == enforce.ShimConfigPath {
					src = shimConfig
				}
			case "skill":
				if s.spec.SkillSource != "" {
					src = s.spec.SkillSource
				}
			case "system":
			default:
				flags |= unix.MS_NOEXEC // declared data is never executable
			}
			out = append(out, &configs.Mount{Source: src, Destination: m.Target, Device: "bind", Flags: flags | unix.MS_BIND | unix.MS_REC})
		default:
			return nil, fmt.Errorf("mount %s: unknown kind %q", m.Target, m.Kind)
		}
	}
	return out, nil
}
