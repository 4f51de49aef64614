//go:build integration

package escape

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// openPTY opens a pseudo-terminal pair on the host: the skill's stdin is
// the terminal, the test keeps the master.
func openPTY(t *testing.T) (master, tty *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("needs /dev/ptmx: %v", err)
	}
	if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close(); s.Close() })
	return m, s
}

// pending returns what can be read from f within d. A terminal's
// descriptor does not take read deadlines, so it polls.
func pending(t *testing.T, f *os.File, d time.Duration) string {
	t.Helper()
	rc, err := f.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var out []byte
	rc.Control(func(fd uintptr) {
		deadline := time.Now().Add(d)
		buf := make([]byte, 4096)
		for {
			left := time.Until(deadline)
			if left <= 0 {
				return
			}
			fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
			n, err := unix.Poll(fds, int(left.Milliseconds())+1)
			if errors.Is(err, unix.EINTR) {
				continue
			}
			if err != nil || n == 0 || fds[0].Revents&unix.POLLIN == 0 {
				return
			}
			m, err := unix.Read(int(fd), buf)
			if err != nil || m <= 0 {
				return
			}
			out = append(out, buf[:m]...)
		}
	})
	return string(out)
}

// ttyPrelude makes a child of the skill the session leader that owns the
// host terminal on stdin, so that the kernel itself would allow TIOCSTI
// (dev.tty.legacy_tiocsti permitting): an EPERM then comes from the
// filter. ioc(name, fd, request, arg) prints ok or the errno name.
const ttyPrelude = `
def ioc(name, fd, req, arg):
    r, e = raw(16, fd, req, arg)
    out(name, "ok" if r >= 0 else ename(e))
ws = ctypes.create_string_buffer(8)
ioc("tiocgwinsz", 0, 0x5413, ws)
def as_session_leader(fn):
    pid = os.fork()
    if pid == 0:
        os.setsid()
        ioc("tiocsctty", 0, 0x540E, 0)
        fn()
        sys.stdout.flush()
        os._exit(0)
    os.waitpid(pid, 0)
`

// Case 3: TIOCSTI pushes bytes into the input queue of the terminal the
// sandbox shares with its caller: keystrokes typed into the user's shell.
// With the skill owning the terminal as its controlling tty, TIOCSTI (also
// with high bits set in the request, which the kernel truncates to 32
// bits, and through a dup of the descriptor) is EPERM, the tty cannot be
// reopened by path, and no injected byte reaches the terminal's input or
// echo.
func TestEscapeTIOCSTI(t *testing.T) {
	e := newEnv(t)
	master, tty := openPTY(t)
	dir := e.skill("esc-tiocsti", "", py+ttyPrelude+`
c = ctypes.c_char(b"Z")
def attack():
    ioc("tiocsti", 0, 0x5412, ctypes.byref(c))
    ioc("tiocsti_high_bits", 0, 0x100005412, ctypes.byref(c))
    ioc("tiocsti_all_high_bits", 0, 0xffffffff00005412, ctypes.byref(c))
    ioc("tiocsti_dup", os.dup(0), 0x5412, ctypes.byref(c))
    attempt("reopen_tty", lambda: os.open("/proc/self/fd/0", os.O_RDWR))
as_session_leader(attack)
`)
	r := e.exec(dir, run{stdin: tty})
	wantExit(t, r, 0)
	expect(t, r, map[string]string{
		"tiocgwinsz": "ok", "tiocsctty": "ok",
		"tiocsti": "EPERM", "tiocsti_high_bits": "EPERM", "tiocsti_all_high_bits": "EPERM", "tiocsti_dup": "EPERM",
		"reopen_tty": "EACCES",
	})
	if echo := pending(t, master, 200*time.Millisecond); strings.Contains(echo, "Z") {
		t.Errorf("injected input echoed on the host terminal: %q", echo)
	}
	if in := pending(t, tty, 200*time.Millisecond); in != "" {
		t.Errorf("the host terminal's input queue holds %q", in)
	}
}

// Case 4: TIOCLINUX (console selection paste, and more) is EPERM for
// every subcode and with high bits set; were the request let through, the
// terminal driver would answer ENOTTY or EINVAL instead.
func TestEscapeTIOCLINUX(t *testing.T) {
	e := newEnv(t)
	_, tty := openPTY(t)
	dir := e.skill("esc-tioclinux", "", py+ttyPrelude+`
def attack():
    for name, sub in (("setsel", 2), ("pastesel", 3), ("unblankscreen", 4), ("getshiftstate", 6), ("setvesablank", 10)):
        arg = ctypes.create_string_buffer(bytes([sub]) + b"\0" * 31)
        ioc("tioclinux_" + name, 0, 0x541c, arg)
    ioc("tioclinux_high_bits", 0, 0x10000541c, ctypes.create_string_buffer(b"\x03" + b"\0" * 31))
as_session_leader(attack)
`)
	r := e.exec(dir, run{stdin: tty})
	wantExit(t, r, 0)
	expect(t, r, map[string]string{
		"tiocgwinsz": "ok", "tiocsctty": "ok",
		"tioclinux_setsel": "EPERM", "tioclinux_pastesel": "EPERM", "tioclinux_unblankscreen": "EPERM",
		"tioclinux_getshiftstate": "EPERM", "tioclinux_setvesablank": "EPERM", "tioclinux_high_bits": "EPERM",
	})
}

// Case 18: the i386 entry points. amd64 is the only architecture in the
// filter, so a 32-bit syscall through int 0x80 is killed with SIGSYS:
// directly (the invocation exits 128+31) and in a child, as its parent
// sees it. The x32 ABI (syscall number with bit 30 set) gets the same.
func TestEscapeCompatSyscalls(t *testing.T) {
	const src = `
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static long int80_getpid(void) {
	long r;
	__asm__ volatile ("int $0x80" : "=a"(r) : "a"(20L) : "memory");
	return r;
}

static long int80_write(void) {
	static const char msg[] = "int80_write=ok\n";
	long r;
	__asm__ volatile ("int $0x80" : "=a"(r) : "a"(4L), "b"(1L), "c"(msg), "d"((long)sizeof msg - 1) : "memory");
	return r;
}

static long x32_getpid(void) {
	long r;
	__asm__ volatile ("syscall" : "=a"(r) : "a"(0x40000000L | 39) : "rcx", "r11", "memory");
	return r;
}

static void in_child(const char *name, long (*fn)(void)) {
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		long r = fn();
		printf("%s_returned=%ld\n", name, r);
		fflush(stdout);
		_exit(0);
	}
	int st;
	waitpid(pid, &st, 0);
	if (WIFSIGNALED(st))
		printf("%s=signal:%d\n", name, WTERMSIG(st));
	else
		printf("%s=exit:%d\n", name, WEXITSTATUS(st));
}

int main(int argc, char **argv) {
	if (argc > 1 && strcmp(argv[1], "direct") == 0) {
		printf("before=1\n");
		fflush(stdout);
		long r = int80_getpid();
		printf("survived=%ld\n", r);
		return 0;
	}
	in_child("int80_getpid", int80_getpid);
	in_child("int80_write", int80_write);
	in_child("x32_getpid", x32_getpid);
	return 0;
}
`
	e := newEnv(t)
	dir := e.cskill("esc-compat", "", src)
	r := e.exec(dir, run{})
	wantExit(t, r, 0)
	sigsys := fmt.Sprintf("signal:%d", unix.SIGSYS)
	expect(t, r, map[string]string{"int80_getpid": sigsys, "int80_write": sigsys, "x32_getpid": sigsys})
	for _, leak := range []string{"_returned=", "int80_write=ok"} {
		if strings.Contains(r.stdout, leak) {
			t.Errorf("a compat syscall returned to its caller:\n%s", r.stdout)
		}
	}
	r = e.exec(dir, run{args: []string{"direct"}})
	wantExit(t, r, 128+int(unix.SIGSYS))
	if got := lines(r.stdout); got["before"] != "1" || got["survived"] != "" {
		t.Errorf("the direct int 0x80 was not killed at the call:\n%s", r.stdout)
	}
}
