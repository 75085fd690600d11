package topology

import (
	"errors"
	"net/netip"
	"testing"

	"github.com/roce-probe/roce-probe/internal/testenv"
)

// readFrame returns the first frame of a pcap file of testdata.
func readFrame(t testing.TB, name string) []byte {
	return testenv.FirstFrame(t, "testdata/"+name)
}

// The expected values are tshark's decoding of each frame, and for the
// SG 200 lldpd's test_cisco_sg200 (chassis mac 00:35:35:35:35:35, port
// ifname g1, ttl 120).
func TestDecodeLLDPRealFrames(t *testing.T) {
	for _, tc := range []struct {
		file               string
		want               Neighbor
		switchName, swPort string
	}{
		{"cisco-sg200.pcap", Neighbor{ChassisID: "00:35:35:35:35:35", ChassisIDType: "mac", PortID: "g1", PortIDType: "ifname", TTL: 120},
			"00:35:35:35:35:35", "g1"},
		{"connectx4lx-firmware.pcap", Neighbor{ChassisID: "50:6b:4b:f6:1e:b3", ChassisIDType: "mac", PortID: "50:6b:4b:f6:1e:b1", PortIDType: "mac",
			PortDescription: "ConnectX-4 Lx, 25G/10G/1G SFP", TTL: 48},
			"50:6b:4b:f6:1e:b3", "ConnectX-4 Lx, 25G/10G/1G SFP"},
		{"lldpd-1.0.16.pcap", Neighbor{ChassisID: "d2:31:68:05:c7:9b", ChassisIDType: "mac", PortID: "d2:31:68:05:c7:9b", PortIDType: "mac",
			SystemName: "vm", PortDescription: "tswp1", ManagementAddress: netip.MustParseAddr("fe80::d031:68ff:fe05:c79b"), TTL: 120},
			"vm", "tswp1"},
	} {
		t.Run(tc.file, func(t *testing.T) {
			got, err := DecodeLLDP(readFrame(t, tc.file))
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("got  %+v\nwant %+v", got, tc.want)
			}
			if got.Switch() != tc.switchName || got.SwitchPort() != tc.swPort {
				t.Errorf("switch %q port %q, want %q %q", got.Switch(), got.SwitchPort(), tc.switchName, tc.swPort)
			}
		})
	}
}

func TestDecodeLLDPBad(t *testing.T) {
	frame := readFrame(t, "lldpd-1.0.16.pcap")
	notLLDP := append([]byte(nil), frame...)
	notLLDP[12], notLLDP[13] = 0x08, 0x00 // IPv4
	if _, err := DecodeLLDP(notLLDP[:34]); !errors.Is(err, ErrNotLLDP) {
		t.Errorf("IPv4 frame: %v, want ErrNotLLDP", err)
	}
	// Cut inside the system description TLV: a TLV runs past the end.
	if _, err := DecodeLLDP(frame[:40]); err == nil || errors.Is(err, ErrNotLLDP) {
		t.Errorf("truncated LLDPDU: %v, want a decoding error", err)
	}
	// Only the chassis ID TLV, then End: the port ID and TTL are missing.
	pdu := []byte{0x02, 0x07, 0x04, 1, 2, 3, 4, 5, 6, 0x00, 0x00}
	if _, err := DecodeLLDPDU(pdu); err == nil {
		t.Error("LLDPDU without port ID and TTL decoded")
	}
	if n, err := DecodeLLDPDU(frame[14:]); err != nil || n.SystemName != "vm" {
		t.Errorf("DecodeLLDPDU of the frame's payload: %+v, %v", n, err)
	}
}

func TestSwitchNames(t *testing.T) {
	for s, want := range map[string]bool{
		"leaf-07": true, "d2:31:68:05:c7:9b": true, "rack1.leaf_a": true, "": false, "two words": false,
		"x/y": false, "01234567890123456789012345678901234567890123456789012345678901234": false, // 65
	} {
		if ValidSwitch(s) != want {
			t.Errorf("ValidSwitch(%q) = %v", s, !want)
		}
	}
	// A system name with a space is not a switch name: the chassis ID is.
	n := Neighbor{SystemName: "Core Switch 1", ChassisID: "00:11:22:33:44:55", PortID: "Ethernet1/1", PortIDType: "ifname", PortDescription: "to node7"}
	if n.Switch() != "00:11:22:33:44:55" || n.SwitchPort() != "Ethernet1/1" {
		t.Errorf("switch %q port %q", n.Switch(), n.SwitchPort())
	}
}
