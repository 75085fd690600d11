package topology

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"
)

func TestAttachPrecedence(t *testing.T) {
	now := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	sg200, err := DecodeLLDP(readFrame(t, "cisco-sg200.pcap"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile("testdata/lldpcli-json-2.json")
	if err != nil {
		t.Fatal(err)
	}
	lldpd, err := ParseLLDPCli(b)
	if err != nil {
		t.Fatal(err)
	}
	o := Observations{Now: now,
		Config: map[string]string{"eth9": "rack9-leaf"},
		LLDP: map[string]Heard{
			"eth7": {sg200, now.Add(-10 * time.Second)},  // heard: wins over lldpd's leaf-07
			"eth6": {sg200, now.Add(-121 * time.Second)}, // TTL 120 passed
			"eth9": {sg200, now},                         // configured wins
		},
		LLDPWhy: map[string]string{"eth5": "no frame within 2s"},
		LLDPD:   lldpd,
	}
	got := Attach([]string{"eth9", "eth8", "eth7", "eth6", "eth5", "eth7"}, o)
	want := []struct {
		netdev, sw, port string
		src              Source
		age              time.Duration
		reason           []string
	}{
		{"eth5", "", "", "", -1, []string{"LLDP: no frame within 2s", "lldpd: no neighbour on eth5", "fw-lldp-agent"}},
		{"eth6", "", "", "", -1, []string{"expired after its TTL of 120 s", "lldpd: no neighbour on eth6"}},
		{"eth7", "00:35:35:35:35:35", "g1", SourceLLDP, 10 * time.Second, nil},
		{"eth8", "leaf-07", "tswp2", SourceLLDPD, time.Second, nil},
		{"eth9", "rack9-leaf", "", SourceConfig, -1, nil},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d attachments: %+v", len(got), got)
	}
	for i, w := range want {
		g := got[i]
		if g.Netdev != w.netdev || g.Switch != w.sw || g.SwitchPort != w.port || g.Source != w.src || g.Age != w.age {
			t.Errorf("[%d] got %+v, want %+v", i, g, w)
		}
		for _, r := range w.reason {
			if !strings.Contains(g.Reason, r) {
				t.Errorf("%s: reason %q lacks %q", g.Netdev, g.Reason, r)
			}
		}
		if err := g.Validate(); err != nil {
			t.Errorf("%s: %v", g.Netdev, err)
		}
	}
	// One configured ToR for the node: every netdev.
	all := Attach([]string{"eth7", "eth8"}, Observations{Now: now, Config: map[string]string{"": "leaf-3"}})
	for _, a := range all {
		if a.Switch != "leaf-3" || a.Source != SourceConfig {
			t.Errorf("%+v", a)
		}
	}
}

func TestAttachmentJSON(t *testing.T) {
	now := time.Now()
	n, err := DecodeLLDP(readFrame(t, "lldpd-1.0.16.pcap"))
	if err != nil {
		t.Fatal(err)
	}
	in := Attach([]string{"eth0", "eth1", "eth2"}, Observations{Now: now, Config: map[string]string{"eth2": "leaf-2"},
		LLDP: map[string]Heard{"eth0": {n, now.Add(-1500 * time.Millisecond)}}, LLDPDWhy: "lldpcli is not installed"})
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{`"netdev":"eth0","switch":"vm","switch_port":"tswp1","source":"lldp","age_s":1.5,"lldp":{"chassis_id":"d2:31:68:05:c7:9b","chassis_id_type":"mac","port_id":"d2:31:68:05:c7:9b","port_id_type":"mac","system_name":"vm","port_description":"tswp1","management_address":"fe80::d031:68ff:fe05:c79b","ttl_s":120},"reason":null`,
		`"netdev":"eth1","switch":null,"switch_port":null,"source":null,"age_s":null,"lldp":null,"reason":"LLDP: no frame heard; lldpd: lldpcli is not installed; no switch configured; `,
		`"netdev":"eth2","switch":"leaf-2","switch_port":null,"source":"config","age_s":null,"lldp":null,"reason":null`} {
		if !bytes.Contains(b, []byte(k)) {
			t.Errorf("JSON lacks %s:\n%s", k, b)
		}
	}
	var back []Attachment
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	for i := range back {
		if back[i].Switch != in[i].Switch || back[i].Reason != in[i].Reason || back[i].Age != in[i].Age || (back[i].Neighbor == nil) != (in[i].Neighbor == nil) {
			t.Errorf("[%d] %+v, want %+v", i, back[i], in[i])
		}
		if back[i].Neighbor != nil && *back[i].Neighbor != *in[i].Neighbor {
			t.Errorf("[%d] neighbour %+v, want %+v", i, *back[i].Neighbor, *in[i].Neighbor)
		}
	}
	for _, bad := range []string{`{"netdev":"eth0","switch":"a b","switch_port":null,"source":"config","age_s":null,"lldp":null,"reason":null}`,
		`{"netdev":"eth0","switch":null,"switch_port":null,"source":null,"age_s":null,"lldp":null,"reason":null}`,
		`{"netdev":"eth0","switch":"x","switch_port":null,"source":"lldp","age_s":null,"lldp":null,"reason":null}`,
		`{"netdev":"eth0","switch":"x","switch_port":null,"source":"dns","age_s":null,"lldp":null,"reason":null}`} {
		var a Attachment
		if err := json.Unmarshal([]byte(bad), &a); err == nil && a.Validate() == nil {
			t.Errorf("%s: valid", bad)
		}
	}
}
