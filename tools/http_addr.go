package tools

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"syscall"

	"github.com/skillrun/skillrun/enforce"
)

// addrClass names why an address is not an ordinary public unicast one;
// "" means it is. The name goes into the denial's detail.
type addrClass string

const (
	classPublic      addrClass = ""
	classMetadata    addrClass = "cloud metadata"
	classLoopback    addrClass = "loopback"
	classPrivate     addrClass = "private"
	classLinkLocal   addrClass = "link-local"
	classCGNAT       addrClass = "shared address space (CGNAT)"
	classUnspecified addrClass = "unspecified"
	classMulticast   addrClass = "multicast"
	classBroadcast   addrClass = "broadcast"
	classReserved    addrClass = "reserved"
)

// metadataAddrs are the cloud instance-metadata endpoints: they hand out
// the host's credentials to anyone who can reach them.
var metadataAddrs = map[netip.Addr]bool{
	netip.MustParseAddr("169.254.169.254"): true, // AWS, GCP, Azure, OpenStack
	netip.MustParseAddr("fd00:ec2::254"):   true, // AWS over IPv6
	netip.MustParseAddr("100.100.100.200"): true, // Alibaba Cloud
	netip.MustParseAddr("169.254.170.2"):   true, // AWS ECS task credentials
}

// specialPrefixes are the ranges netip's predicates do not cover. Each one
// reaches the host, its network or nothing routable, never a public server.
var specialPrefixes = []struct {
	prefix netip.Prefix
	class  addrClass
}{
	{netip.MustParsePrefix("0.0.0.0/8"), classUnspecified},  // "this network": Linux dials the host itself
	{netip.MustParsePrefix("100.64.0.0/10"), classCGNAT},    // carrier NAT, often the provider's own services
	{netip.MustParsePrefix("192.0.0.0/24"), classReserved},  // IETF protocol assignments
	{netip.MustParsePrefix("198.18.0.0/15"), classReserved}, // benchmarking, used inside networks
	{netip.MustParsePrefix("255.255.255.255/32"), classBroadcast},
	{netip.MustParsePrefix("240.0.0.0/4"), classReserved},
	{netip.MustParsePrefix("::/96"), classReserved},         // deprecated IPv4-compatible form of any IPv4 address
	{netip.MustParsePrefix("100::/64"), classReserved},      // discard-only
	{netip.MustParsePrefix("64:ff9b:1::/48"), classPrivate}, // local-use NAT64
	{netip.MustParsePrefix("fec0::/10"), classPrivate},      // deprecated site-local
}

// These IPv6 ranges embed an IPv4 address that a gateway or the stack
// may dial for us: the embedded address is classified too.
var (
	nat64          = netip.MustParsePrefix("64:ff9b::/96")
	sixToFour      = netip.MustParsePrefix("2002::/16")
	ipv4Compatible = netip.MustParsePrefix("::/96")
)

// classify says why ip is special, or classPublic.
func classify(ip netip.Addr) addrClass {
	ip = ip.Unmap() // ::ffff:127.0.0.1 is 127.0.0.1 on the wire
	switch {
	case metadataAddrs[ip]:
		return classMetadata
	case ip.IsUnspecified():
		return classUnspecified
	case ip.IsLoopback():
		return classLoopback
	case ip.IsPrivate():
		return classPrivate
	case ip.IsLinkLocalUnicast():
		return classLinkLocal
	case ip.IsMulticast():
		return classMulticast
	}
	if v4, ok := embeddedIPv4(ip); ok {
		if c := classify(v4); c != classPublic {
			return c
		}
	}
	for _, p := range specialPrefixes {
		if p.prefix.Contains(ip) {
			return p.class
		}
	}
	return classPublic
}

// embeddedIPv4 returns the IPv4 address inside an IPv6 form that carries
// one to a gateway or stack that may dial it for us.
func embeddedIPv4(ip netip.Addr) (netip.Addr, bool) {
	b := ip.As16()
	switch {
	case !ip.Is6():
		return netip.Addr{}, false
	case nat64.Contains(ip), ipv4Compatible.Contains(ip):
		return netip.AddrFrom4([4]byte(b[12:16])), true
	case sixToFour.Contains(ip):
		return netip.AddrFrom4([4]byte(b[2:6])), true
	}
	return netip.Addr{}, false
}

// localhost is the one name whose literal declaration opens an address
// range (loopback): by RFC 6761 it never leaves the machine, so a reviewer
// reading the declaration sees what it reaches.
const localhost = "localhost"

// addrAllowed decides whether ip, one address host resolved to, may be
// dialled. Public addresses always may. A special one only when the
// declaration visibly names it: the URL's host is that very IP literal,
// declared literally, or it is loopback and the host is a literally
// declared "localhost". Any other name never reaches a special address,
// literal or not: its DNS owner can point it anywhere at any time.
func addrAllowed(e *enforce.Enforcer, host string, ip netip.Addr) (addrClass, bool) {
	c := classify(ip)
	switch c {
	case classPublic:
		return c, true
	case classUnspecified, classMulticast, classBroadcast:
		// Never a server: 0.0.0.0 and :: dial the host itself.
		return c, false
	}
	if h, err := netip.ParseAddr(host); err == nil {
		return c, h.Unmap() == ip.Unmap() && e.HostLiteral(host)
	}
	return c, c == classLoopback && host == localhost && e.HostLiteral(host)
}

// resolveFunc resolves a host name to its addresses.
type resolveFunc func(ctx context.Context, host string) ([]net.IPAddr, error)

// maxCandidates bounds how many addresses of one name are checked and
// tried: a resolver answer is attacker-controlled input.
const maxCandidates = 16

// dialer dials what the URL names after checking every address it
// resolves to, then dials the checked addresses literally, so a second
// resolution (DNS rebinding) cannot swap an address in after the check.
type dialer struct {
	tool    string
	policy  func() *enforce.Enforcer
	resolve resolveFunc
	cfg     *httpConfig
}

// DialContext is the Transport's dial: addr is the URL's host and port.
func (d *dialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	e := d.policy()
	if e == nil {
		return nil, fmt.Errorf("dial %s: %w", addr, ErrHTTPUnbound)
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", addr, err)
	}
	ips, err := d.candidates(ctx, host)
	if err != nil {
		return nil, err
	}
	allowed := make(map[netip.Addr]bool, len(ips))
	for _, ip := range ips {
		if c, ok := addrAllowed(e, host, ip); !ok {
			// One bad candidate refuses the name: a public address next
			// to an internal one is how rebinding attacks are set up.
			den := enforce.Deny(enforce.ReasonDomainViolation, d.tool,
				"host %q resolves to %s (%s), which only a literal declaration of that address reaches", host, ip, c)
			den.SkillID = e.SkillID()
			return nil, den
		}
		allowed[ip] = true
	}
	nd := net.Dialer{
		Timeout: d.cfg.limits.DialTimeout,
		// The last word: refuse any socket address that was not checked.
		Control: func(_, address string, _ syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(address)
			if err != nil || !allowed[ap.Addr().Unmap()] {
				return fmt.Errorf("dial %s: %w", address, ErrUncheckedAddr)
			}
			return nil
		},
	}
	var firstErr error
	for _, ip := range ips {
		c, err := nd.DialContext(ctx, network, net.JoinHostPort(ip.String(), port))
		if err == nil {
			return c, nil
		}
		if firstErr == nil {
			firstErr = err
		}
		if ctx.Err() != nil {
			break
		}
	}
	return nil, firstErr
}

// candidates resolves host (an IP literal resolves to itself), unmapped.
func (d *dialer) candidates(ctx context.Context, host string) ([]netip.Addr, error) {
	if ip, err := netip.ParseAddr(host); err == nil {
		return []netip.Addr{ip.Unmap()}, nil
	}
	addrs, err := d.resolve(ctx, host)
	if err != nil {
		return nil, fmt.Errorf("resolve %s: %w", host, err)
	}
	out := make([]netip.Addr, 0, min(len(addrs), maxCandidates))
	for _, a := range addrs[:min(len(addrs), maxCandidates)] {
		// A zone is dropped: only link-local addresses carry one, and
		// those are refused whatever their zone.
		ip, ok := netip.AddrFromSlice(a.IP)
		if !ok {
			return nil, fmt.Errorf("resolve %s: %w: %v", host, ErrUncheckedAddr, a)
		}
		out = append(out, ip.Unmap())
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("resolve %s: %w", host, &net.DNSError{Err: "no addresses", Name: host, IsNotFound: true})
	}
	return out, nil
}

// systemResolve is the production resolver.
func systemResolve(ctx context.Context, host string) ([]net.IPAddr, error) {
	return net.DefaultResolver.LookupIPAddr(ctx, host)
}
