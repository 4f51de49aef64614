//go:build integration

package escape

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// countAccepts accepts and closes every connection to ln until it is
// closed (by the test's cleanup), counting them.
func countAccepts(t *testing.T, ln net.Listener) *atomic.Int64 {
	t.Helper()
	t.Cleanup(func() { ln.Close() })
	var n atomic.Int64
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			n.Add(1)
			c.Close()
		}
	}()
	return &n
}

// countPackets reads and counts every datagram to pc until it is closed.
func countPackets(t *testing.T, pc net.PacketConn) *atomic.Int64 {
	t.Helper()
	t.Cleanup(func() { pc.Close() })
	var n atomic.Int64
	go func() {
		buf := make([]byte, 64)
		for {
			if _, _, err := pc.ReadFrom(buf); err != nil {
				return
			}
			n.Add(1)
		}
	}()
	return &n
}

// dialTries dials network/addr from the host n times, 100 ms apart, and
// returns "connected" or the errno of each try.
func dialTries(network, addr string, n int) []string {
	var out []string
	for range n {
		c, err := net.Dial(network, addr)
		if err == nil {
			c.Close()
			out = append(out, "connected")
		} else {
			var errno syscall.Errno
			errors.As(err, &errno)
			out = append(out, errno.Error())
		}
		time.Sleep(100 * time.Millisecond)
	}
	return out
}

// Case 8: abstract Unix sockets are named in a per-network-namespace table
// (and Landlock's abstract-socket scoping, ABI ≥ 6, sits behind that). The
// skill connects to a stream and a datagram abstract socket the host
// listens on, and to a pathname socket in a host directory: all fail.
// Then it binds an abstract name of its own, which the host cannot reach
// while the skill waits for it, though the skill itself can.
func TestEscapeAbstractUnixSockets(t *testing.T) {
	e := newEnv(t)
	tag := fmt.Sprintf("skillrun-escape-%d", time.Now().UnixNano())
	ln, err := net.Listen("unix", "@"+tag+"-host")
	if err != nil {
		t.Fatal(err)
	}
	accepts := countAccepts(t, ln)
	dg, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: "@" + tag + "-dgram", Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	datagrams := countPackets(t, dg)
	sockDir := t.TempDir()
	os.Chmod(sockDir, 0o755)
	pathSock := sockDir + "/host.sock"
	pl, err := net.Listen("unix", pathSock)
	if err != nil {
		t.Fatal(err)
	}
	pathAccepts := countAccepts(t, pl)
	os.Chmod(pathSock, 0o777)

	dir := e.skill("esc-abstract", "", py+`
tag, path = sys.argv[1], sys.argv[2]
def conn(addr, kind=socket.SOCK_STREAM):
    s = socket.socket(socket.AF_UNIX, kind)
    if kind == socket.SOCK_DGRAM:
        s.sendto(b"x", addr)
    else:
        s.connect(addr)
attempt("connect_host_abstract", lambda: conn("\0" + tag + "-host"))
attempt("sendto_host_abstract_dgram", lambda: conn("\0" + tag + "-dgram", socket.SOCK_DGRAM))
attempt("connect_host_path", lambda: conn(path))
mine = socket.socket(socket.AF_UNIX)
mine.bind("\0" + tag + "-skill")
mine.listen(8)
attempt("connect_own_abstract", lambda: conn("\0" + tag + "-skill"))
out("bound", 1)
mine.settimeout(0.3)
accepted, deadline = 0, time.time() + 1.5
while time.time() < deadline:
    try:
        mine.accept()[0].close()
        accepted += 1
    except socket.timeout:
        pass
out("accepted", accepted)
`)
	tries := make(chan []string, 1)
	r := e.exec(dir, run{args: []string{tag, pathSock}, onLine: func(l string) {
		if l == "bound=1" {
			go func() { tries <- dialTries("unix", "@"+tag+"-skill", 5) }()
		}
	}})
	wantExit(t, r, 0)
	expect(t, r, map[string]string{
		"connect_host_abstract": "ECONNREFUSED", "sendto_host_abstract_dgram": "ECONNREFUSED", "connect_host_path": "ENOENT",
		"connect_own_abstract": "ok", "accepted": "1",
	})
	if n := accepts.Load() + datagrams.Load() + pathAccepts.Load(); n != 0 {
		t.Errorf("the host's sockets got %d connections or datagrams from the sandbox", n)
	}
	select {
	case h := <-tries:
		if slices.Contains(h, "connected") {
			t.Errorf("the host reached the skill's abstract socket: %v", h)
		}
	case <-time.After(5 * time.Second):
		t.Error("the host never tried the skill's abstract socket")
	}
}

// hostIPv4 is a non-loopback IPv4 address of the host, or "".
func hostIPv4() string {
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if ipn, ok := a.(*net.IPNet); ok && ipn.IP.To4() != nil && !ipn.IP.IsLoopback() {
			return ipn.IP.String()
		}
	}
	return ""
}

// resolver is the host's first nameserver, or a documentation address.
func resolver() string {
	f, err := os.Open("/etc/resolv.conf")
	if err == nil {
		defer f.Close()
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if fs := strings.Fields(sc.Text()); len(fs) == 2 && fs[0] == "nameserver" && net.ParseIP(fs[1]).To4() != nil {
				return fs[1]
			}
		}
	}
	return "192.0.2.53"
}

// 26+: the network. The sandbox has only its own loopback ("lo", no
// route out, no way to add a link); UDP to the host's resolver and to the
// host's address is unreachable; UDP to 127.0.0.1 stays on the sandbox's
// own loopback; TCP connect and bind are refused by Landlock; raw, packet
// and the rarer socket families are refused by the filter or the kernel.
// The host's TCP and UDP listeners (on all addresses) hear nothing.
func TestEscapeNetwork(t *testing.T) {
	e := newEnv(t)
	ip := hostIPv4()
	if ip == "" {
		t.Skip("needs a non-loopback IPv4 address on the host")
	}
	tcp, err := net.Listen("tcp", "0.0.0.0:0")
	if err != nil {
		t.Fatal(err)
	}
	tcpAccepts := countAccepts(t, tcp)
	udp, err := net.ListenPacket("udp", "0.0.0.0:0")
	if err != nil {
		t.Fatal(err)
	}
	udpPackets := countPackets(t, udp)
	tport, uport := tcp.Addr().(*net.TCPAddr).Port, udp.LocalAddr().(*net.UDPAddr).Port
	dir := e.skill("esc-network", "", py+`
import subprocess
hostip, dns, tport, uport = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
ifs = [l.split(":")[0].strip() for l in open("/proc/net/dev").read().splitlines()[2:]]
out("interfaces", ",".join(sorted(ifs)))
o = subprocess.run(["/usr/sbin/ip", "-o", "link"], capture_output=True, text=True)
out("ip_links", ",".join(l.split(":")[1].strip() for l in o.stdout.splitlines()))
o = subprocess.run(["/usr/sbin/ip", "route", "get", dns], capture_output=True, text=True)
out("route_to_resolver", "none" if o.returncode != 0 else o.stdout.split()[0])
o = subprocess.run(["/usr/sbin/ip", "link", "add", "escape0", "type", "dummy"], capture_output=True, text=True)
out("ip_link_add", "EPERM" if "Operation not permitted" in o.stderr else "exit:%d" % o.returncode)
def udp(addr):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.sendto(b"escape", addr)
def tcp(fam, addr):
    s = socket.socket(fam, socket.SOCK_STREAM)
    s.settimeout(2)
    s.connect(addr)
attempt("udp_resolver", lambda: udp((dns, 53)))
attempt("udp_host_ip", lambda: udp((hostip, uport)))
attempt("udp_loopback_own", lambda: udp(("127.0.0.1", uport)))
attempt("tcp_host_ip", lambda: tcp(socket.AF_INET, (hostip, tport)))
attempt("tcp_loopback", lambda: tcp(socket.AF_INET, ("127.0.0.1", tport)))
attempt("tcp6_loopback", lambda: tcp(socket.AF_INET6, ("::1", tport)))
attempt("tcp_metadata", lambda: tcp(socket.AF_INET, ("169.254.169.254", 80)))
attempt("tcp_bind", lambda: socket.socket().bind(("127.0.0.1", 8080)))
for name, fam, typ, proto in (("packet_raw", 17, socket.SOCK_RAW, 0), ("inet_raw", 2, socket.SOCK_RAW, 1),
                              ("inet6_raw", 10, socket.SOCK_RAW, 58), ("ping_dgram", 2, socket.SOCK_DGRAM, 1),
                              ("alg", 38, socket.SOCK_SEQPACKET, 0), ("vsock", 40, socket.SOCK_STREAM, 0),
                              ("bluetooth", 31, socket.SOCK_RAW, 0), ("key", 15, socket.SOCK_RAW, 2),
                              ("can", 29, socket.SOCK_RAW, 1), ("rds", 21, socket.SOCK_SEQPACKET, 0),
                              ("tipc", 30, socket.SOCK_RDM, 0), ("xdp", 44, socket.SOCK_RAW, 0),
                              ("netlink_route", 16, socket.SOCK_RAW, 0)):
    attempt("socket_" + name, lambda: socket.socket(fam, typ, proto))
sv = (ctypes.c_int * 2)()
sc("socketpair_inet", 53, 2, 1, 0, sv)
sc("socketpair_unix", 53, 1, 1, 0, sv)
`)
	r := e.exec(dir, run{args: []string{ip, resolver(), fmt.Sprint(tport), fmt.Sprint(uport)}})
	wantExit(t, r, 0)
	expect(t, r, map[string]string{
		"interfaces": "lo", "ip_links": "lo", "route_to_resolver": "none", "ip_link_add": "EPERM",
		"udp_resolver": "ENETUNREACH", "udp_host_ip": "ENETUNREACH", "udp_loopback_own": "ok",
		"tcp_host_ip": "EACCES", "tcp_loopback": "EACCES", "tcp6_loopback": "EACCES", "tcp_metadata": "EACCES", "tcp_bind": "EACCES",
		"socket_packet_raw": "EPERM", "socket_inet_raw": "EPERM", "socket_inet6_raw": "EPERM", "socket_ping_dgram": "EACCES",
		"socket_alg": "EPERM", "socket_vsock": "EPERM", "socket_bluetooth": "EPERM", "socket_key": "EPERM",
		"socket_can": "EPERM", "socket_rds": "EPERM", "socket_tipc": "EPERM", "socket_xdp": "EPERM",
		"socket_netlink_route": "ok", "socketpair_inet": "EPERM", "socketpair_unix": "ok",
	})
	time.Sleep(200 * time.Millisecond)
	if n := tcpAccepts.Load(); n != 0 {
		t.Errorf("the host's TCP listener accepted %d connections from the sandbox", n)
	}
	if n := udpPackets.Load(); n != 0 {
		t.Errorf("the host's UDP listener got %d datagrams from the sandbox", n)
	}
}
