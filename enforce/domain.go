package enforce

import (
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/gobwas/glob"
	"golang.org/x/net/idna"
)

// ErrBadHost marks a host that cannot be normalised. It is not a denial
// reason, so it lives here rather than in errors.go: CheckURL turns it into
// a domain_violation, NewDomainPolicy into ErrInvalidPolicy.
var ErrBadHost = errors.New("bad host")

// hostProfile is UTS #46 lookup processing as browsers do it:
// non-transitional (ß stays ß), STD3 characters only, Bidi rule, but no
// hyphen checks, which would refuse real hosts like r3---sn-x.googlevideo.com.
var hostProfile = idna.New(idna.MapForLookup(), idna.BidiRule(),
	idna.Transitional(false), idna.CheckHyphens(false))

// maxHostInput bounds the work done on one host: a usable name is at most
// 253 bytes, and 1 KiB leaves room for a Unicode spelling of one.
const maxHostInput = 1024

// NormalizeHost returns the canonical form of a URL host: IDNA A-labels,
// lowercase, one trailing dot removed; an IP literal in netip's canonical
// form, without brackets, IPv4-mapped IPv6 unmapped. It refuses what a
// resolver or another URL parser could read differently: zone ids, empty
// labels, spaces, escapes, and names ending in a number that are not a
// plain dotted-quad IPv4 address (0x7f.1, 127.1, 2130706433).
func NormalizeHost(host string) (string, error) {
	if strings.HasPrefix(host, "[") || strings.Contains(host, ":") {
		return normalizeIPv6(host)
	}
	a, err := toASCII(host)
	if err != nil {
		return "", err
	}
	if endsInNumber(a) {
		ip, err := netip.ParseAddr(a)
		if err != nil || !ip.Is4() {
			return "", badHost(host, "ends in a number but is not a dotted-quad IPv4 address")
		}
		return ip.String(), nil
	}
	return a, nil
}

// toASCII maps a name to lowercase A-labels without its trailing dot and
// checks the result is a plain LDH name.
func toASCII(host string) (string, error) {
	switch {
	case host == "":
		return "", badHost(host, "empty")
	case len(host) > maxHostInput:
		return "", badHost(host[:64]+"…", "too long")
	}
	for i := 0; i < len(host); i++ {
		switch c := host[i]; {
		case c == 0:
			return "", badHost(host, "contains a NUL byte")
		case c == '%':
			return "", badHost(host, "contains %")
		case c <= ' ' || c == 0x7f:
			return "", badHost(host, "contains a space or control character")
		}
	}
	if !utf8.ValidString(host) {
		// idna would encode the bad bytes as U+FFFD, a name that does not
		// survive its own validation.
		return "", badHost(host, "is not valid UTF-8")
	}
	a, err := hostProfile.ToASCII(host)
	if err != nil {
		return "", fmt.Errorf("%w %q: %w", ErrBadHost, host, err)
	}
	a = strings.TrimSuffix(a, ".")
	if why := badLabels(a, false); why != "" {
		return "", badHost(host, why)
	}
	if again, err := hostProfile.ToASCII(a); err != nil || again != a {
		// One name, one spelling: a result idna would change or refuse
		// is not canonical, whatever produced it.
		return "", badHost(host, "does not normalise to a stable name")
	}
	return a, nil
}

func badHost(host, why string) error {
	return fmt.Errorf("%w %q: %s", ErrBadHost, host, why)
}

func normalizeIPv6(host string) (string, error) {
	inner := host
	if strings.HasPrefix(host, "[") {
		if !strings.HasSuffix(host, "]") {
			return "", badHost(host, "unbalanced [")
		}
		inner = host[1 : len(host)-1]
	}
	if strings.Contains(inner, "%") {
		// A zone id names a local interface; no declaration can mean one.
		return "", badHost(host, "has a zone id")
	}
	ip, err := netip.ParseAddr(inner)
	if err != nil || !ip.Is6() {
		return "", badHost(host, "has ':' or '[' but is not an IPv6 address (a port is not part of a host)")
	}
	// ::ffff:127.0.0.1 dials 127.0.0.1: give one address one spelling.
	return ip.Unmap().String(), nil
}

// badLabels checks an ASCII name for what IDNA lets through: empty labels,
// lengths, and characters outside letters, digits and hyphens ('*' too
// when wild). It returns why the name is bad, or "".
func badLabels(name string, wild bool) string {
	if name == "" {
		return "empty"
	}
	if len(name) > 253 {
		return "longer than 253 bytes"
	}
	for label := range strings.SplitSeq(name, ".") {
		if label == "" {
			return "has an empty label"
		}
		if len(label) > 63 {
			return "has a label longer than 63 bytes"
		}
		for i := 0; i < len(label); i++ {
			c := label[i]
			if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || wild && c == '*') {
				return fmt.Sprintf("has character %q", c)
			}
		}
	}
	return ""
}

// endsInNumber reports whether the last label is digits or 0x-hex: the
// WHATWG URL parser and inet_aton read such a name as an IPv4 address.
func endsInNumber(name string) bool {
	last := name[strings.LastIndexByte(name, '.')+1:]
	if h, ok := strings.CutPrefix(last, "0x"); ok {
		return strings.Trim(h, "0123456789abcdef") == ""
	}
	return isDigits(last)
}

// isIPHost reports whether a normalised host is an IP literal. Allocation
// free: MatchHost calls it.
func isIPHost(h string) bool {
	return strings.IndexByte(h, ':') >= 0 || h != "" && endsInNumber(h)
}

// NormalizeDomainGlob returns the canonical form of a declared host glob.
// A label without '*' is normalised as NormalizeHost does, per label; a
// label with '*' must be ASCII: "*" matches one label, "**" (a whole label)
// any number of labels, and '*' inside a label part of one label. Other
// glob syntax, schemes, ports and paths are refused.
func NormalizeDomainGlob(g string) (string, error) {
	invalid := func(why string) error {
		return fmt.Errorf("%w: domain %q: %s", ErrInvalidPolicy, g, why)
	}
	if strings.ContainsAny(g, "/@") {
		return "", invalid("a domain is a host name, without scheme, userinfo or path")
	}
	if !strings.Contains(g, "*") {
		h, err := NormalizeHost(g)
		if err != nil {
			return "", fmt.Errorf("%w: domain %q: %w", ErrInvalidPolicy, g, err)
		}
		return h, nil
	}
	if strings.ContainsAny(g, "?[]{}\\!:%") {
		return "", invalid("only '*' wildcards are supported")
	}
	labels := strings.Split(strings.TrimSuffix(g, "."), ".")
	for i, l := range labels {
		switch {
		case l == "*" || l == "**":
		case strings.Contains(l, "**"):
			return "", invalid("'**' must be a whole label")
		case strings.Contains(l, "*"):
			labels[i] = strings.ToLower(l)
		default:
			a, err := toASCII(l)
			if err != nil || strings.Contains(a, ".") {
				return "", invalid(fmt.Sprintf("label %q is not a host name label", l))
			}
			labels[i] = a
		}
	}
	out := strings.Join(labels, ".")
	if why := badLabels(out, true); why != "" {
		return "", invalid(why)
	}
	if ipLikeGlob(labels) {
		// Wildcards never match IP literals (MatchHost): say so now
		// rather than let 10.0.0.* silently match nothing.
		return "", invalid("an IP address must be declared literally, without wildcards")
	}
	return out, nil
}

// ipLikeGlob reports whether a glob can only be meant for IPv4 addresses:
// its last label is numeric (stars aside), or it is all stars and numeric
// labels with at least one of the latter (10.0.0.*).
func ipLikeGlob(labels []string) bool {
	numeric := func(l string) bool { return isDigits(strings.ReplaceAll(l, "*", "")) }
	stars := func(l string) bool { return strings.Trim(l, "*") == "" }
	if last := labels[len(labels)-1]; !stars(last) {
		return numeric(last)
	}
	any := false
	for _, l := range labels {
		switch {
		case stars(l):
		case numeric(l):
			any = true
		default:
			return false
		}
	}
	return any
}

// DomainPolicy matches hosts against x-allowed-domains. It is immutable
// and safe for concurrent use; a nil *DomainPolicy allows nothing.
type DomainPolicy struct {
	literal map[string]struct{} // globs without a wildcard, normalised
	globs   []*glob.Pattern     // the rest, compiled with '.' as separator
	source  []string            // every normalised glob, in declaration order
}

// NewDomainPolicy normalises and compiles the declared globs. A bad glob is
// an error wrapping ErrInvalidPolicy that names it.
func NewDomainPolicy(globs []string) (*DomainPolicy, error) {
	p := &DomainPolicy{literal: make(map[string]struct{}, len(globs))}
	for _, raw := range globs {
		g, err := NormalizeDomainGlob(raw)
		if err != nil {
			return nil, err
		}
		p.source = append(p.source, g)
		if !strings.Contains(g, "*") {
			p.literal[g] = struct{}{}
			continue
		}
		c, err := glob.Compile(g, '.')
		if err != nil {
			return nil, fmt.Errorf("%w: domain glob %q: %w", ErrInvalidPolicy, raw, err)
		}
		p.globs = append(p.globs, c)
	}
	return p, nil
}

// Globs returns the normalised globs, in declaration order.
func (p *DomainPolicy) Globs() []string {
	if p == nil {
		return nil
	}
	return append([]string(nil), p.source...)
}

// MatchHost reports whether a host already normalised by NormalizeHost is
// allowed. Wildcards never match an IP literal: an address must be
// declared as written, so `*` or `**` do not open every IP.
func (p *DomainPolicy) MatchHost(normalisedHost string) bool {
	if p == nil || normalisedHost == "" {
		return false
	}
	if _, ok := p.literal[normalisedHost]; ok {
		return true
	}
	if isIPHost(normalisedHost) {
		return false
	}
	for _, g := range p.globs {
		if g.Match(normalisedHost) {
			return true
		}
	}
	return false
}

// Literal reports whether the declaration names host (a name or an IP, in
// any spelling NormalizeHost accepts) exactly, without a wildcard. The
// dialer uses it to allow a loopback or private address only when declared.
func (p *DomainPolicy) Literal(host string) bool {
	if p == nil {
		return false
	}
	h, err := NormalizeHost(host)
	if err != nil {
		return false
	}
	_, ok := p.literal[h]
	return ok
}

// CheckURL parses raw and allows it when the scheme is http or https, there
// is no userinfo, and the normalised host matches. It returns the parsed URL
// with the host replaced by its normalised form, so that what is fetched is
// what was checked. A refusal is a *Denial with reason domain_violation;
// its Tool is left for the caller (HttpFetch, HttpPost) to fill in.
func (p *DomainPolicy) CheckURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, denyDomain("url does not parse: %v", err)
	}
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return nil, denyDomain("scheme %q is not http or https", u.Scheme)
	case u.Opaque != "":
		return nil, denyDomain("url has no //host")
	case u.User != nil:
		// user@host is a classic way to make one host read as another.
		return nil, denyDomain("url has userinfo")
	}
	host, err := NormalizeHost(u.Hostname())
	if err != nil {
		return nil, denyDomain("%v", err)
	}
	port := u.Port()
	if port != "" {
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return nil, denyDomain("port %q is out of range", port)
		}
	}
	if !p.MatchHost(host) {
		return nil, denyDomain("host %q is not in x-allowed-domains", host)
	}
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	if port != "" {
		host += ":" + port
	}
	u.Host = host
	return u, nil
}

func denyDomain(format string, args ...any) *Denial {
	return Deny(ReasonDomainViolation, "", format, args...)
}
