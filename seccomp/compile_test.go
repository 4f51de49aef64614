//go:build linux && cgo && seccomp

package seccomp

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"runtime"
	"strings"
	"testing"
	"unsafe"

	libseccomp "github.com/seccomp/libseccomp-golang"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// TestCompileMatchesLibcontainer reads back, with PTRACE_SECCOMP_GET_FILTER,
// the program libcontainer's InitSeccomp really loaded in a probe
// subprocess and requires Compile to return the same bytes: the evidence
// that the golden file and the model test describe the loaded filter.
func TestCompileMatchesLibcontainer(t *testing.T) {
	requires(t, root)
	want, err := Compile()
	if err != nil {
		t.Fatal(err)
	}
	cmd := probeCmd(t, "wait", "", true)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		stdin.Close() // the probe returns on EOF
		if err := cmd.Wait(); err != nil {
			t.Errorf("probe: %v", err)
		}
	}()
	var r report
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if rest, ok := strings.CutPrefix(line, reportTag); !ok || json.Unmarshal([]byte(rest), &r) != nil || r.Tid == 0 {
		t.Fatalf("no thread id from the probe: %q, %v", line, err)
	}
	got, err := loadedFilter(r.Tid)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("libcontainer loaded %d instructions, Compile returns %d; first difference at %d",
			len(got)/8, len(want)/8, firstDifference(got, want)/8)
	}
}

// loadedFilter stops thread tid, copies its seccomp filter out and lets it
// go. ptrace requests must come from the thread that attached.
func loadedFilter(tid int) ([]byte, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := unix.PtraceSeize(tid); err != nil {
		return nil, err
	}
	defer unix.PtraceDetach(tid)
	if err := unix.PtraceInterrupt(tid); err != nil {
		return nil, err
	}
	var ws unix.WaitStatus
	if _, err := unix.Wait4(tid, &ws, unix.WALL, nil); err != nil {
		return nil, err
	}
	n, _, errno := unix.Syscall6(unix.SYS_PTRACE, unix.PTRACE_SECCOMP_GET_FILTER, uintptr(tid), 0, 0, 0, 0)
	if errno != 0 {
		return nil, errno
	}
	prog := make([]unix.SockFilter, n)
	if _, _, errno := unix.Syscall6(unix.SYS_PTRACE, unix.PTRACE_SECCOMP_GET_FILTER, uintptr(tid), 0,
		uintptr(unsafe.Pointer(&prog[0])), 0, 0); errno != 0 {
		return nil, errno
	}
	var out []byte
	for _, ins := range prog {
		out = binary.NativeEndian.AppendUint16(out, ins.Code)
		out = append(out, ins.Jt, ins.Jf)
		out = binary.NativeEndian.AppendUint32(out, ins.K)
	}
	return out, nil
}

func firstDifference(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// TestNaiveIoctlExceptionIsDropped records the libseccomp behaviour that
// shapes the ioctl rule: an unconditional ALLOW plus a conditional ERRNO
// for the same syscall compiles to a plain ALLOW, whichever rule comes
// first. If a future libseccomp keeps the ERRNO rule, this fails, and the
// simpler formulation becomes possible.
func TestNaiveIoctlExceptionIsDropped(t *testing.T) {
	ioctl, err := libseccomp.GetSyscallFromName("ioctl")
	if err != nil {
		t.Fatal(err)
	}
	eacces := libseccomp.ActErrno.SetReturnCode(int16(unix.EACCES))
	deny, err := libseccomp.MakeCondition(1, libseccomp.CompareMaskedEqual, 0xffffffff, unix.TIOCSTI)
	if err != nil {
		t.Fatal(err)
	}
	for _, errnoFirst := range []bool{true, false} {
		f, err := libseccomp.NewFilter(libseccomp.ActErrno.SetReturnCode(int16(unix.EPERM)))
		if err != nil {
			t.Fatal(err)
		}
		rules := []func() error{
			func() error { return f.AddRule(ioctl, libseccomp.ActAllow) },
			func() error { return f.AddRuleConditional(ioctl, eacces, []libseccomp.ScmpCondition{deny}) },
		}
		if errnoFirst {
			rules[0], rules[1] = rules[1], rules[0]
		}
		for _, add := range rules {
			if err := add(); err != nil {
				t.Fatal(err)
			}
		}
		raw, err := export(f.ExportBPF)
		f.Release()
		if err != nil {
			t.Fatal(err)
		}
		prog, err := disassemble(raw)
		if err != nil {
			t.Fatal(err)
		}
		vm, err := bpf.NewVM(prog)
		if err != nil {
			t.Fatal(err)
		}
		data := make([]byte, 64)
		binary.BigEndian.PutUint32(data[0:], uint32(ioctl))
		binary.BigEndian.PutUint32(data[4:], auditArchX86_64)
		binary.BigEndian.PutUint32(data[24:], unix.TIOCSTI)
		if got, _ := vm.Run(data); uint32(got) != retAllow {
			t.Errorf("errno rule first %v: ioctl(TIOCSTI) gets %#x, not ALLOW: libseccomp now keeps the ERRNO rule",
				errnoFirst, got)
		}
	}
}
