package tools

import (
	"net/netip"
	"testing"
)

func TestClassify(t *testing.T) {
	tests := []struct {
		ip   string
		want addrClass
	}{
		{"93.184.216.34", classPublic},
		{"8.8.8.8", classPublic},
		{"2606:4700::1111", classPublic},
		{"127.0.0.1", classLoopback},
		{"127.255.255.254", classLoopback},
		{"::1", classLoopback},
		{"::ffff:127.0.0.1", classLoopback},
		{"10.0.0.1", classPrivate},
		{"172.16.0.1", classPrivate},
		{"172.31.255.255", classPrivate},
		{"172.32.0.1", classPublic},
		{"192.168.1.1", classPrivate},
		{"::ffff:192.168.1.1", classPrivate},
		{"fc00::1", classPrivate},
		{"fd12:3456::1", classPrivate},
		{"fec0::1", classPrivate},
		{"169.254.1.1", classLinkLocal},
		{"fe80::1", classLinkLocal},
		{"100.64.0.1", classCGNAT},
		{"100.127.255.255", classCGNAT},
		{"100.128.0.1", classPublic},
		{"169.254.169.254", classMetadata},
		{"::ffff:169.254.169.254", classMetadata},
		{"fd00:ec2::254", classMetadata},
		{"100.100.100.200", classMetadata},
		{"169.254.170.2", classMetadata},
		{"0.0.0.0", classUnspecified},
		{"0.1.2.3", classUnspecified},
		{"::", classUnspecified},
		{"224.0.0.1", classMulticast},
		{"239.255.255.250", classMulticast},
		{"ff02::1", classMulticast},
		{"255.255.255.255", classBroadcast},
		{"240.0.0.1", classReserved},
		{"192.0.0.8", classReserved},
		{"198.18.0.1", classReserved},
		{"::127.0.0.1", classLoopback},
		{"::1.2.3.4", classReserved},
		{"100::1", classReserved},
		{"64:ff9b::7f00:1", classLoopback},
		{"64:ff9b::a9fe:a9fe", classMetadata},
		{"64:ff9b::808:808", classPublic},
		{"64:ff9b:1::1", classPrivate},
		{"2002:7f00:1::1", classLoopback},
		{"2002:a00:1::1", classPrivate},
		{"2002:808:808::1", classPublic},
	}
	for _, tt := range tests {
		if got := classify(netip.MustParseAddr(tt.ip)); got != tt.want {
			t.Errorf("classify(%s) = %q, want %q", tt.ip, got, tt.want)
		}
	}
}

func TestAddrAllowed(t *testing.T) {
	tests := []struct {
		declared []string
		host     string
		ip       string
		want     bool
	}{
		{[]string{"*.example.test"}, "a.example.test", "93.184.216.34", true},
		{[]string{"*.example.test"}, "a.example.test", "127.0.0.1", false},
		{[]string{"a.example.test"}, "a.example.test", "127.0.0.1", false},
		{[]string{"a.example.test"}, "a.example.test", "169.254.169.254", false},
		{[]string{"localhost"}, "localhost", "127.0.0.1", true},
		{[]string{"localhost"}, "localhost", "::1", true},
		{[]string{"localhost"}, "localhost", "10.0.0.1", false},
		{[]string{"localhost"}, "localhost", "169.254.169.254", false},
		{[]string{"*"}, "localhost", "127.0.0.1", false},
		{[]string{"127.0.0.1"}, "127.0.0.1", "127.0.0.1", true},
		{[]string{"127.0.0.1"}, "127.0.0.2", "127.0.0.2", false},
		{[]string{"::1"}, "::1", "::1", true},
		{[]string{"10.1.2.3"}, "10.1.2.3", "10.1.2.3", true},
		{[]string{"169.254.169.254"}, "169.254.169.254", "169.254.169.254", true},
		{[]string{"0.0.0.0"}, "0.0.0.0", "0.0.0.0", false},
		{[]string{"224.0.0.1"}, "224.0.0.1", "224.0.0.1", false},
		{[]string{"255.255.255.255"}, "255.255.255.255", "255.255.255.255", false},
		{[]string{"127.0.0.1"}, "127.0.0.1", "10.0.0.1", false},
	}
	for _, tt := range tests {
		e := httpPolicy(t, tt.declared...)
		if _, got := addrAllowed(e, tt.host, netip.MustParseAddr(tt.ip)); got != tt.want {
			t.Errorf("declared %v: addrAllowed(%s, %s) = %v, want %v", tt.declared, tt.host, tt.ip, got, tt.want)
		}
	}
}
