package probe

import (
	"errors"
	"net/netip"
	"testing"
)

// Only an address of one other host can be probed (RFC 4291 2.5.2/2.5.3/
// 2.7 and RFC 1122 3.2.1.3 name the unspecified, loopback, multicast and
// limited broadcast addresses); link-local and private unicast can.
func TestCheckDestination(t *testing.T) {
	for s, want := range map[string]string{
		"0.0.0.0": "unspecified", "::": "unspecified", "127.0.0.1": "loopback", "::1": "loopback",
		"::ffff:127.0.0.2": "loopback", "224.0.0.1": "multicast", "ff02::1": "multicast",
		"255.255.255.255": "limited broadcast", "::ffff:255.255.255.255": "limited broadcast",
		"10.0.0.1": "", "fd00::2": "", "fe80::1": "", "169.254.1.1": "", "192.168.1.255": "",
	} {
		err := CheckDestination(netip.MustParseAddr(s))
		if want == "" {
			if err != nil {
				t.Errorf("%s: %v, want nil", s, err)
			}
			continue
		}
		if !errors.Is(err, ErrNotUnicast) || err.Error() != "not a unicast address ("+want+")" {
			t.Errorf("%s: %v, want ErrNotUnicast (%s)", s, err, want)
		}
	}
	if err := CheckDestination(netip.Addr{}); !errors.Is(err, ErrNotUnicast) {
		t.Errorf("zero Addr: %v", err)
	}
}
