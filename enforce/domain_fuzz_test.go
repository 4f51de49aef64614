package enforce

import (
	"errors"
	"net/url"
	"strings"
	"testing"
)

// FuzzDomainMatch feeds random URLs to CheckURL. Whatever it allows must be
// http(s), without userinfo, and name exactly a host the policy declares,
// also after the URL is printed and parsed again (what a client would do).
// NormalizeHost must be idempotent on every host it accepts. More seeds
// are in testdata/fuzz/FuzzDomainMatch.
func FuzzDomainMatch(f *testing.F) {
	for _, s := range []string{
		"https://api.example.com/x", "HTTPS://API.Example.COM./x", "https://evil.com/y",
		"https://api.example.com@evil.com/", "http://[::1]:8080/", "https://a.b.example.com/",
		"https://x.example.com/", "https://api．example．com/", "file:///etc/passwd",
	} {
		f.Add(s)
	}
	exact, err := NewDomainPolicy([]string{"api.example.com"})
	if err != nil {
		f.Fatal(err)
	}
	wild, err := NewDomainPolicy([]string{"*.example.com"})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		checkURLOracle(t, exact, raw, func(h string) bool { return h == "api.example.com" })
		checkURLOracle(t, wild, raw, func(h string) bool {
			label, ok := strings.CutSuffix(h, ".example.com")
			return ok && label != "" && !strings.Contains(label, ".")
		})
		if u, err := url.Parse(raw); err == nil {
			if h, err := NormalizeHost(u.Hostname()); err == nil {
				if again, err := NormalizeHost(h); err != nil || again != h {
					t.Fatalf("NormalizeHost not idempotent: %q -> %q -> %q, %v", u.Hostname(), h, again, err)
				}
			}
		}
	})
}

func checkURLOracle(t *testing.T, p *DomainPolicy, raw string, hostOK func(string) bool) {
	t.Helper()
	u, err := p.CheckURL(raw)
	if err != nil {
		if d, ok := AsDenial(err); !ok || d.Reason != ReasonDomainViolation || !errors.Is(err, ErrDomainViolation) {
			t.Fatalf("CheckURL(%q) = %v, want a domain_violation denial", raw, err)
		}
		return
	}
	if u.Scheme != "http" && u.Scheme != "https" || u.User != nil || u.Opaque != "" || !hostOK(u.Hostname()) {
		t.Fatalf("CheckURL(%q) allowed %q (scheme %q, host %q)", raw, u, u.Scheme, u.Hostname())
	}
	again, err := url.Parse(u.String())
	if err != nil || again.Hostname() != u.Hostname() || again.User != nil {
		t.Fatalf("CheckURL(%q) = %q, which parses again as %v, %v", raw, u, again, err)
	}
}
