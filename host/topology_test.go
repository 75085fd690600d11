package host

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

// A snapshot written before the topology section (no "topology" key)
// decodes with Topology nil; one with the section round-trips; a bad
// attachment is refused with its place in the document.
func TestTopologySection(t *testing.T) {
	raw, err := os.ReadFile("testdata/rxe.json")
	if err != nil {
		t.Fatal(err)
	}
	old := bytes.Replace(raw, []byte("\n  \"topology\": null,"), nil, 1)
	if bytes.Equal(old, raw) {
		t.Fatal("fixture has no topology key to remove")
	}
	s, err := Decode(bytes.NewReader(old))
	if err != nil {
		t.Fatalf("snapshot without a topology key: %v", err)
	}
	if s.Topology != nil {
		t.Errorf("Topology %+v, want nil", s.Topology)
	}
	section := `"topology": {"attachments": [
	  {"netdev": "veth0", "switch": "leaf-07", "switch_port": "tswp1", "source": "lldpd", "age_s": 2,
	   "lldp": {"chassis_id": "d2:31:68:05:c7:9b", "chassis_id_type": "mac", "port_id": "tswp1", "port_id_type": "ifname",
	            "system_name": "leaf-07", "port_description": "tswp1", "management_address": null, "ttl_s": 120}, "reason": null},
	  {"netdev": "veth1", "switch": null, "switch_port": null, "source": null, "age_s": null, "lldp": null,
	   "reason": "LLDP: no frame heard"}]},`
	withTopo := bytes.Replace(raw, []byte(`"topology": null,`), []byte(section), 1)
	s, err = Decode(bytes.NewReader(withTopo))
	if err != nil {
		t.Fatal(err)
	}
	a := s.Topology.AttachmentOf("veth0")
	if a == nil || a.Switch != "leaf-07" || a.SwitchPort != "tswp1" || a.Neighbor == nil || a.Neighbor.TTL != 120 {
		t.Errorf("veth0: %+v", a)
	}
	if u := s.Topology.AttachmentOf("veth1"); u == nil || u.Known() || u.Reason == "" {
		t.Errorf("veth1: %+v", u)
	}
	var out bytes.Buffer
	if err := s.Encode(&out); err != nil {
		t.Fatal(err)
	}
	again, err := Decode(&out)
	if err != nil || len(again.Topology.Attachments) != 2 || again.Topology.Attachments[0].Switch != "leaf-07" {
		t.Fatalf("re-decoded: %+v, %v", again, err)
	}
	for bad, want := range map[string]string{
		`"topology": {"attachments": [{"netdev": "veth0", "switch": "leaf 7", "switch_port": null, "source": "config", "age_s": null, "lldp": null, "reason": null}]},`:    `topology.attachments[0]: veth0: switch "leaf 7"`,
		`"topology": {"attachments": [{"netdev": "veth0", "switch": null, "switch_port": null, "source": null, "age_s": null, "lldp": null, "reason": null}]},`:            "no switch and no reason",
		`"topology": {"attachments": [{"netdev": "veth0", "switch": "a", "switch_port": null, "source": "config", "age_s": null, "lldp": null, "reason": null, "x": 1}]},`: `unknown key "x"`,
	} {
		_, err := Decode(bytes.NewReader(bytes.Replace(raw, []byte(`"topology": null,`), []byte(bad), 1)))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", bad, err, want)
		}
	}
}
