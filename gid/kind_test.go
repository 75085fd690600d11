package gid

import "testing"

func TestKind(t *testing.T) {
	for s, want := range map[string]AddrKind{
		"::":                   KindNone,
		"::ffff:10.0.0.1":      KindIPv4,
		"::ffff:169.254.3.4":   KindIPv4LinkLocal,
		"::ffff:224.0.0.251":   KindMulticast,
		"fe80::ff:fe00:1":      KindLinkLocal,
		"febf::1":              KindLinkLocal, // fe80::/10
		"fd00:100::1":          KindULA,
		"fc00::1":              KindULA,
		"2001:db8::1":          KindGlobal,
		"ff02::1":              KindMulticast,
		"ff0e::ffff:239.1.1.1": KindMulticast,
		"::1":                  KindOther,
		"0000:0000:0000:0000:0000:ffff:c0a8:0002": KindIPv4,
	} {
		if got := MustParse(s).Kind(); got != want {
			t.Errorf("Kind(%s) = %q, want %q", s, got, want)
		}
	}
	if !KindIPv4LinkLocal.LinkLocal() || KindULA.LinkLocal() || KindIPv4.Family() != 4 || KindULA.Family() != 6 {
		t.Errorf("LinkLocal/Family wrong")
	}
}
