package enforce

import (
	"errors"
	"strings"
	"testing"
)

func TestNormalizeHost(t *testing.T) {
	tests := []struct{ in, want string }{
		{"api.example.com", "api.example.com"},
		{"API.Example.COM", "api.example.com"},
		{"api.example.com.", "api.example.com"},
		{"bücher.example", "xn--bcher-kva.example"},
		{"BÜCHER.example", "xn--bcher-kva.example"},
		{"xn--bcher-kva.example", "xn--bcher-kva.example"},
		{"Straße.de", "xn--strae-oqa.de"}, // non-transitional, as browsers
		// Fullwidth dots and letters map to ASCII (UTS #46); matching and
		// dialling both use the mapped form, so nothing diverges.
		{"api．example．com", "api.example.com"},
		{"api。example。com。", "api.example.com"},
		{"ＡＰＩ.example.com", "api.example.com"},
		{"r3---sn-x.googlevideo.com", "r3---sn-x.googlevideo.com"},
		{"localhost", "localhost"},
		{"127.0.0.1", "127.0.0.1"},
		{"127.0.0.1.", "127.0.0.1"},
		{"１２７.０.０.１", "127.0.0.1"},
		{"::1", "::1"},
		{"[::1]", "::1"},
		{"[0:0:0:0:0:0:0:1]", "::1"},
		{"[2001:DB8::1]", "2001:db8::1"},
		{"::ffff:127.0.0.1", "127.0.0.1"},
		{"[::ffff:7f00:1]", "127.0.0.1"},
		{"a.123.example", "a.123.example"},
	}
	for _, tt := range tests {
		got, err := NormalizeHost(tt.in)
		if err != nil || got != tt.want {
			t.Errorf("NormalizeHost(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
}

func TestNormalizeHostInvalid(t *testing.T) {
	for _, in := range []string{
		"", ".", "..", "a..b", ".a", "a.b..",
		"a b", "a\tb", "a\x00b", "a\x7fb", "a%2eb", "api.example.com%00",
		"*.example.com", "a_b.example", "a/b", "a\\b", "a@b", "a?b", "a#b",
		"api.example.com:443", "[::1", "::1]", "[127.0.0.1]", "fe80::1%eth0", "[fe80::1%25eth0]",
		"0x7f.1", "127.1", "2130706433", "0177.0.0.1", "1.2.3.4.5", "example.0x1f", "256.0.0.1",
		"xn--abc.com", "xn--.com", strings.Repeat("a", 64) + ".com",
		strings.Repeat("a.", 127) + "com", strings.Repeat("a", 2000),
		"api\u3000example.com", "api\uff0fexample.com", "0\x85", "a.\xff.com",
	} {
		got, err := NormalizeHost(in)
		if !errors.Is(err, ErrBadHost) {
			t.Errorf("NormalizeHost(%q) = %q, %v; want ErrBadHost", in, got, err)
		}
	}
}

func TestNormalizeDomainGlob(t *testing.T) {
	tests := []struct{ in, want string }{
		{"api.example.com", "api.example.com"},
		{"*.Example.COM.", "*.example.com"},
		{"**.example.com", "**.example.com"},
		{"api-*.example.com", "api-*.example.com"},
		{"*.bücher.example", "*.xn--bcher-kva.example"},
		{"bücher.example", "xn--bcher-kva.example"},
		{"*.123.example", "*.123.example"},
		{"*", "*"},
		{"**", "**"},
		{"[::1]", "::1"},
		{"10.0.0.1", "10.0.0.1"},
	}
	for _, tt := range tests {
		got, err := NormalizeDomainGlob(tt.in)
		if err != nil || got != tt.want {
			t.Errorf("NormalizeDomainGlob(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
	for _, in := range []string{
		"", "https://api.example.com", "api.example.com/x", "user@api.example.com", "api.example.com:443",
		"api.example.?om", "{a,b}.example.com", "[a-z].example.com", "a**.example.com", "*..example.com",
		"*.example_x.com", "*.ex ample.com", "bü*.example", "10.0.0.*", "10.*", "*.0.0.1", "1*.0.0.1*", "a.b.c.0x1", "*\\.com",
	} {
		got, err := NormalizeDomainGlob(in)
		if !errors.Is(err, ErrInvalidPolicy) {
			t.Errorf("NormalizeDomainGlob(%q) = %q, %v; want ErrInvalidPolicy", in, got, err)
		}
	}
}

func TestNewDomainPolicyInvalid(t *testing.T) {
	p, err := NewDomainPolicy([]string{"api.example.com", "https://evil.com/"})
	if !errors.Is(err, ErrInvalidPolicy) || p != nil {
		t.Fatalf("NewDomainPolicy = %v, %v; want nil, ErrInvalidPolicy", p, err)
	}
}

func TestMatchHost(t *testing.T) {
	p, err := NewDomainPolicy([]string{"api.example.com", "*.wild.com", "**.deep.com", "cdn-*.static.com", "*", "10.0.0.1", "[::1]"})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		host string
		want bool
	}{
		{"api.example.com", true},
		{"example.com", false},
		{"x.api.example.com", false},
		{"a.wild.com", true},
		{"a.b.wild.com", false},
		{"wild.com", false},
		{"a.deep.com", true},
		{"a.b.c.deep.com", true},
		{"deep.com", false},
		{"cdn-1.static.com", true},
		{"cdn.static.com", false},
		{"localhost", true}, // "*" is any single-label name
		{"10.0.0.1", true},
		{"::1", true},
		// Wildcards never match IP literals, not even "*".
		{"10.0.0.2", false},
		{"::2", false},
		{"", false},
	}
	for _, tt := range tests {
		if got := p.MatchHost(tt.host); got != tt.want {
			t.Errorf("MatchHost(%q) = %v, want %v", tt.host, got, tt.want)
		}
	}
	var nilPolicy *DomainPolicy
	if nilPolicy.MatchHost("api.example.com") {
		t.Error("nil policy matched")
	}
}

func TestLiteral(t *testing.T) {
	p, err := NewDomainPolicy([]string{"localhost", "127.0.0.1", "*.corp.example", "[fd00::1]", "bücher.example"})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		host string
		want bool
	}{
		{"localhost", true},
		{"LOCALHOST.", true},
		{"127.0.0.1", true},
		{"::ffff:127.0.0.1", true},
		{"fd00::1", true},
		{"[fd00:0::1]", true},
		{"xn--bcher-kva.example", true},
		{"bücher.example", true},
		{"db.corp.example", false}, // matched by a wildcard, not named
		{"127.0.0.2", false},
		{"127.1", false},
		{"", false},
	}
	for _, tt := range tests {
		if got := p.Literal(tt.host); got != tt.want {
			t.Errorf("Literal(%q) = %v, want %v", tt.host, got, tt.want)
		}
	}
}

func TestCheckURL(t *testing.T) {
	p, err := NewDomainPolicy([]string{"api.example.com", "*.cdn.example", "bücher.example", "[::1]", "127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	allowed := []struct{ raw, want string }{
		{"https://api.example.com/x", "https://api.example.com/x"},
		{"HTTPS://API.Example.COM./x", "https://api.example.com/x"},
		{"http://api.example.com:8080/x?q=1#f", "http://api.example.com:8080/x?q=1#f"},
		{"https://api.example.com:/x", "https://api.example.com/x"},
		{"https://api．example．com/", "https://api.example.com/"},
		{"https://a.cdn.example/lib.js", "https://a.cdn.example/lib.js"},
		{"https://bücher.example/", "https://xn--bcher-kva.example/"},
		{"https://b%C3%BCcher.example/", "https://xn--bcher-kva.example/"},
		{"https://xn--bcher-kva.example/", "https://xn--bcher-kva.example/"},
		{"http://[::1]:8080/", "http://[::1]:8080/"},
		{"http://[0::1]/", "http://[::1]/"},
		{"http://127.0.0.1/", "http://127.0.0.1/"},
		{"https://api.example.com#@evil.com", "https://api.example.com#@evil.com"},
	}
	for _, tt := range allowed {
		u, err := p.CheckURL(tt.raw)
		if err != nil {
			t.Errorf("CheckURL(%q) = %v, want allowed", tt.raw, err)
			continue
		}
		if got := u.String(); got != tt.want {
			t.Errorf("CheckURL(%q) URL = %q, want %q", tt.raw, got, tt.want)
		}
	}
	denied := []string{
		"https://evil.com/y",
		"https://api.example.com.evil.com/",
		"https://evil.com?@api.example.com",
		"https://api.example.com@evil.com/",
		"https://user:pw@api.example.com/",
		"https://@api.example.com/",
		"https://api.example.com\\@evil.com",
		"https://api.example.com\\.evil.com/",
		"https://api%2eexample.com/",
		"https://api.example.com%00.evil.com/",
		"ftp://api.example.com/",
		"file:///etc/passwd",
		"javascript:alert(1)",
		"https:api.example.com",
		"//api.example.com/",
		"api.example.com/x",
		"https:///x",
		"https://",
		"https://api.example.com:0/",
		"https://api.example.com:99999/",
		"https://api.example.com:443:80/",
		"http://[::1%25lo]/",
		"http://[fe80::1%25eth0]:80/",
		"http://[::2]/",
		"http://0x7f.0.0.1/",
		"http://127.1/",
		"http://2130706433/",
		"http://[::ffff:127.0.0.2]/",
		"https://cdn.example/",
		"https://a.b.cdn.example/",
		"https://аpi.example.com/", // Cyrillic а
		"https://api.example.com /",
		"https://api.exam\tple.com/",
		"https://*.cdn.example/",
		"https://api_x.cdn.example/",
		"",
		"::",
	}
	for _, raw := range denied {
		u, err := p.CheckURL(raw)
		if !errors.Is(err, ErrDomainViolation) {
			t.Errorf("CheckURL(%q) = %v, %v; want ErrDomainViolation", raw, u, err)
			continue
		}
		if d, ok := AsDenial(err); !ok || d.Reason != ReasonDomainViolation || d.Detail == "" {
			t.Errorf("CheckURL(%q) denial = %+v", raw, d)
		}
	}
}

func TestCheckURLEmptyPolicy(t *testing.T) {
	empty, err := NewDomainPolicy(nil)
	if err != nil {
		t.Fatal(err)
	}
	var nilPolicy *DomainPolicy
	for _, p := range []*DomainPolicy{empty, nilPolicy} {
		if _, err := p.CheckURL("https://api.example.com/"); !errors.Is(err, ErrDomainViolation) {
			t.Errorf("CheckURL with no domains = %v, want ErrDomainViolation", err)
		}
	}
}

func TestMatchHostDoesNotAllocate(t *testing.T) {
	p, err := NewDomainPolicy([]string{"api.example.com", "*.example.org", "**.example.net", "cdn-*.example.io"})
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range []string{"api.example.com", "a.example.org", "a.b.example.net", "cdn-1.example.io", "evil.com", "10.0.0.1"} {
		if n := testing.AllocsPerRun(100, func() { p.MatchHost(h) }); n != 0 {
			t.Errorf("MatchHost(%q) allocates %v times", h, n)
		}
	}
}

func BenchmarkDomainMatch(b *testing.B) {
	p, err := NewDomainPolicy([]string{
		"api.example.com", "*.example.org", "**.example.net", "cdn-*.example.io",
		"*.*.example.dev", "uploads.example.com", "auth.example.com", "127.0.0.1",
	})
	if err != nil {
		b.Fatal(err)
	}
	cases := []struct{ name, host string }{
		{"literal", "api.example.com"},
		{"star", "a.example.org"},
		{"superstar", "a.b.c.example.net"},
		{"miss", "a.b.evil.example.com"},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				p.MatchHost(c.host)
			}
		})
	}
}
