package roce

import "testing"

func TestGIDKind(t *testing.T) {
	for s, want := range map[string]GIDKind{
		"::":                   GIDKindNone,
		"::ffff:10.0.0.1":      GIDKindIPv4,
		"::ffff:169.254.3.4":   GIDKindIPv4LinkLocal,
		"::ffff:224.0.0.251":   GIDKindMulticast,
		"fe80::ff:fe00:1":      GIDKindLinkLocal,
		"febf::1":              GIDKindLinkLocal, // fe80::/10
		"fd00:100::1":          GIDKindULA,
		"fc00::1":              GIDKindULA,
		"2001:db8::1":          GIDKindGlobal,
		"ff02::1":              GIDKindMulticast,
		"ff0e::ffff:239.1.1.1": GIDKindMulticast,
		"::1":                  GIDKindOther,
		"0000:0000:0000:0000:0000:ffff:c0a8:0002": GIDKindIPv4,
	} {
		if got := MustParseGID(s).Kind(); got != want {
			t.Errorf("Kind(%s) = %q, want %q", s, got, want)
		}
	}
	if !GIDKindIPv4LinkLocal.LinkLocal() || GIDKindULA.LinkLocal() || GIDKindIPv4.Family() != 4 || GIDKindULA.Family() != 6 {
		t.Errorf("LinkLocal/Family wrong")
	}
}
