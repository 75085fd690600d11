package topology

import (
	"encoding/json"
	"os"
	"testing"
)

// Any frame decodes or fails without panicking; what decodes has a
// chassis ID and a port ID, and its switch name, when any, is valid.
func FuzzDecodeLLDP(f *testing.F) {
	for _, name := range []string{"cisco-sg200.pcap", "connectx4lx-firmware.pcap", "lldpd-1.0.16.pcap"} {
		f.Add(readFrame(f, name))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		n, err := DecodeLLDP(b)
		if err != nil {
			return
		}
		if n.ChassisIDType == "" || n.PortIDType == "" {
			t.Fatalf("decoded without chassis or port ID type: %+v", n)
		}
		if s := n.Switch(); s != "" && !ValidSwitch(s) {
			t.Fatalf("switch %q is not valid", s)
		}
		if _, err := json.Marshal(n); err != nil {
			t.Fatal(err)
		}
	})
}

// Any lldpcli output parses or fails without panicking, and the
// attachments decided from it validate.
func FuzzParseLLDPCli(f *testing.F) {
	for _, name := range []string{"lldpcli-json-1.json", "lldpcli-json-2.json", "lldpcli-json0-2.json"} {
		if b, err := os.ReadFile("testdata/" + name); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte(`{"lldp": {}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		ns, err := ParseLLDPCli(b)
		if err != nil {
			return
		}
		var nds []string
		for _, n := range ns {
			if n.Netdev != "" && len(n.Netdev) <= 15 {
				nds = append(nds, n.Netdev)
			}
		}
		for _, a := range Attach(nds, Observations{LLDPD: ns}) {
			if err := a.Validate(); err != nil && a.Netdev != "" && !badNetdev(a.Netdev) {
				t.Fatalf("%+v: %v", a, err)
			}
		}
	})
}

func badNetdev(s string) bool {
	return (Attachment{Netdev: s, Reason: "x"}).Validate() != nil
}
