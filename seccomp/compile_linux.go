//go:build linux && cgo && seccomp

package seccomp

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/opencontainers/runc/libcontainer/configs"
	libseccomp "github.com/seccomp/libseccomp-golang"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// Compile returns the BPF program libcontainer would load for Config(), as the
// kernel receives it: struct sock_filter records (code uint16, jt uint8,
// jf uint8, k uint32) in host byte order, the layout of
// seccomp_export_bpf(3).
//
// libcontainer exports no way to build its program without loading it into
// the calling thread (patchbpf.PatchAndLoad does both, the rest is
// unexported), so Compile replicates its two steps: the libseccomp filter
// exactly as seccomp.InitSeccomp sets it up, then runc's ENOSYS stub for
// the single amd64 architecture. TestCompileMatchesLibcontainer reads back
// the program that libcontainer's InitSeccomp really loaded and requires
// the same bytes.
//
// Unlike libcontainer, Compile fails (ErrUnknownSyscall) on a name the
// linked libseccomp does not know, and (errors.ErrUnsupported) on a host
// that is not amd64.
func Compile() ([]byte, error) {
	prog, err := compile(Config())
	if err != nil {
		return nil, err
	}
	raw, err := bpf.Assemble(prog)
	if err != nil {
		return nil, fmt.Errorf("seccomp: assemble: %w", err)
	}
	out := make([]byte, 0, 8*len(raw))
	for _, ins := range raw {
		out = binary.NativeEndian.AppendUint16(out, ins.Op)
		out = append(out, ins.Jt, ins.Jf)
		out = binary.NativeEndian.AppendUint32(out, ins.K)
	}
	return out, nil
}

// compile is Compile before encoding: runc's stub, then libseccomp's program.
func compile(cfg *configs.Seccomp) ([]bpf.Instruction, error) {
	if native, err := libseccomp.GetNativeArch(); err != nil || native != libseccomp.ArchAMD64 {
		return nil, fmt.Errorf("seccomp: compile: the profile is for amd64, this is %v: %w", native, errors.ErrUnsupported)
	}
	f, err := newFilter(cfg)
	if err != nil {
		return nil, err
	}
	defer f.Release()
	text, err := export(f.ExportBPF)
	if err != nil {
		return nil, fmt.Errorf("seccomp: export BPF: %w", err)
	}
	body, err := disassemble(text)
	if err != nil {
		return nil, err
	}
	stub, err := enosysStub(cfg)
	if err != nil {
		return nil, err
	}
	return append(stub, body...), nil
}

// newFilter builds the libseccomp filter the way libcontainer's
// seccomp.InitSeccomp does for this kind of config (no flags, no notify):
// same default action, architectures, optimisation level, attribute and
// rules in the same order.
func newFilter(cfg *configs.Seccomp) (*libseccomp.ScmpFilter, error) {
	def := libseccomp.ActErrno.SetReturnCode(int16(*cfg.DefaultErrnoRet))
	f, err := libseccomp.NewFilter(def)
	if err != nil {
		return nil, fmt.Errorf("seccomp: new filter: %w", err)
	}
	ok := false
	defer func() {
		if !ok {
			f.Release()
		}
	}()
	for _, a := range cfg.Architectures {
		arch, err := libseccomp.GetArchFromString(a)
		if err != nil {
			return nil, fmt.Errorf("seccomp: architecture %q: %w", a, err)
		}
		if err := f.AddArch(arch); err != nil {
			return nil, fmt.Errorf("seccomp: add architecture %q: %w", a, err)
		}
	}
	// libcontainer asks for the binary tree above 32 entries and ignores a
	// libseccomp too old to build one.
	if len(cfg.Syscalls) > 32 {
		_ = f.SetOptimize(2)
	}
	if err := f.SetNoNewPrivsBit(false); err != nil {
		return nil, fmt.Errorf("seccomp: no_new_privs attribute: %w", err)
	}
	for _, call := range cfg.Syscalls {
		if err := addRule(f, def, call); err != nil {
			return nil, err
		}
	}
	ok = true
	return f, nil
}

// addRule is libcontainer's matchCall for the entries Config produces:
// Allow or Errno, at most one comparison each.
func addRule(f *libseccomp.ScmpFilter, def libseccomp.ScmpAction, call *configs.Syscall) error {
	act := libseccomp.ActAllow
	if call.Action == configs.Errno {
		act = libseccomp.ActErrno.SetReturnCode(int16(*call.ErrnoRet))
	}
	if act == def {
		return nil // libcontainer skips rules that repeat the default
	}
	nr, err := libseccomp.GetSyscallFromName(call.Name)
	if err != nil {
		return fmt.Errorf("seccomp: %q: %w", call.Name, ErrUnknownSyscall)
	}
	if len(call.Args) == 0 {
		if err := f.AddRule(nr, act); err != nil {
			return fmt.Errorf("seccomp: rule for %s: %w", call.Name, err)
		}
		return nil
	}
	conds := make([]libseccomp.ScmpCondition, 0, len(call.Args))
	for _, a := range call.Args {
		op := libseccomp.CompareEqual
		if a.Op == configs.MaskEqualTo {
			op = libseccomp.CompareMaskedEqual
		}
		c, err := libseccomp.MakeCondition(a.Index, op, a.Value, a.ValueTwo)
		if err != nil {
			return fmt.Errorf("seccomp: condition for %s: %w", call.Name, err)
		}
		conds = append(conds, c)
	}
	if err := f.AddRuleConditional(nr, act, conds); err != nil {
		return fmt.Errorf("seccomp: rule for %s: %w", call.Name, err)
	}
	return nil
}

// enosysStub is runc's patchbpf.generateEnosysStub for a config whose only
// architecture is the native amd64: syscall numbers above the highest one
// in the config get ENOSYS, x32 and foreign architectures fall through to
// libseccomp's program, which kills them.
func enosysStub(cfg *configs.Seccomp) ([]bpf.Instruction, error) {
	var last libseccomp.ScmpSyscall
	for _, call := range cfg.Syscalls {
		if nr, err := libseccomp.GetSyscallFromNameByArch(call.Name, libseccomp.ArchAMD64); err == nil && nr > last {
			last = nr
		}
	}
	if last == 0 {
		return nil, fmt.Errorf("seccomp: ENOSYS stub: no syscall known on amd64")
	}
	const (
		auditArchX86_64 = 0xc000003e // AUDIT_ARCH_X86_64
		x32Bit          = 1 << 30    // __X32_SYSCALL_BIT
		retENOSYS       = 0x00050000 | enosys
	)
	return []bpf.Instruction{
		bpf.LoadAbsolute{Off: 4, Size: 4}, // arch
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: auditArchX86_64, SkipTrue: 1},
		bpf.Jump{Skip: 6},                 // another architecture: to the filter
		bpf.LoadAbsolute{Off: 0, Size: 4}, // syscall number
		bpf.JumpIf{Cond: bpf.JumpBitsSet, Val: x32Bit, SkipTrue: 1},
		bpf.JumpIf{Cond: bpf.JumpGreaterThan, Val: uint32(last), SkipTrue: 2},
		bpf.Jump{Skip: 2}, // to the filter
		bpf.Jump{Skip: 1}, // to the filter (runc's shared fall-through)
		bpf.RetConstant{Val: retENOSYS},
	}, nil
}

// disassemble parses libseccomp's exported program, failing like runc does
// on anything golang.org/x/net/bpf cannot represent.
func disassemble(raw []byte) ([]bpf.Instruction, error) {
	if len(raw)%8 != 0 {
		return nil, fmt.Errorf("seccomp: exported BPF is %d bytes, not whole instructions", len(raw))
	}
	ins := make([]bpf.RawInstruction, 0, len(raw)/8)
	for i := 0; i < len(raw); i += 8 {
		ins = append(ins, bpf.RawInstruction{
			Op: binary.NativeEndian.Uint16(raw[i:]),
			Jt: raw[i+2],
			Jf: raw[i+3],
			K:  binary.NativeEndian.Uint32(raw[i+4:]),
		})
	}
	prog, ok := bpf.Disassemble(ins)
	if !ok {
		return nil, errors.New("seccomp: could not disassemble the whole libseccomp program")
	}
	return prog, nil
}

// export collects what a libseccomp export function writes to a file
// descriptor (libseccomp 2.5 has no in-memory export).
func export(write func(*os.File) error) ([]byte, error) {
	fd, err := unix.MemfdCreate("skillrun-seccomp", unix.MFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("memfd_create: %w", err)
	}
	f := os.NewFile(uintptr(fd), "skillrun-seccomp")
	defer f.Close()
	if err := write(f); err != nil {
		return nil, err
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil, err
	}
	return io.ReadAll(f)
}

// pfc is libseccomp's own pseudo-code rendering of the filter, for the
// golden file. It shows the rules as libseccomp arranged them, without
// runc's stub.
func pfc(cfg *configs.Seccomp) (string, error) {
	f, err := newFilter(cfg)
	if err != nil {
		return "", err
	}
	defer f.Release()
	text, err := export(f.ExportPFC)
	if err != nil {
		return "", fmt.Errorf("seccomp: export PFC: %w", err)
	}
	return string(text), nil
}
