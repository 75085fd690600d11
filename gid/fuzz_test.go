package gid

import (
	"encoding/json"
	"testing"
)

// The fast %pI6 decoder agrees with Parse on everything it accepts.
func FuzzParseSysfsGID(f *testing.F) {
	f.Add([]byte("fe80:0000:0000:0000:0202:c9ff:fe00:0001"))
	f.Add([]byte("0000:0000:0000:0000:0000:ffff:0a00:0001"))
	f.Add([]byte("FE80:0000:0000:0000:0202:C9FF:FE00:0001"))
	f.Add([]byte("fe80:0000:0000:0000:0202:c9ff:fe00:000g"))
	f.Fuzz(func(t *testing.T, b []byte) {
		g, ok := parseSysfsGID(b)
		if !ok {
			return
		}
		p, err := Parse(string(b))
		if err != nil || p != g {
			t.Fatalf("parseSysfsGID(%q) = %s, Parse = %s, %v", b, g, p, err)
		}
		if g.SysfsString() != string(toLower(b)) {
			t.Fatalf("round trip %q → %q", b, g.SysfsString())
		}
	})
}

func toLower(b []byte) []byte {
	out := make([]byte, len(b))
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		out[i] = c
	}
	return out
}

// Entry's JSON form never panics on input and round-trips what it accepts.
func FuzzEntryJSON(f *testing.F) {
	f.Add([]byte(`{"device":"rxe0","port":1,"index":3,"gid":"::ffff:10.0.100.1","type":"RoCE v2","kind":"ipv4","ip":"10.0.100.1","netdev":"veth0.100","ifindex":4,"vlan":100,"vlan_chain":[{"id":100,"proto":"802.1Q"}],"real_netdev":"veth0","mac":"02:00:00:00:00:01","mtu":1500,"state":"up","netns":"current","default":false,"empty":false}`))
	f.Add([]byte(`{"gid":"::","empty":true}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		var e Entry
		if err := json.Unmarshal(b, &e); err != nil {
			return
		}
		out, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		var back Entry
		if err := json.Unmarshal(out, &back); err != nil {
			t.Fatalf("re-decoding %s: %v", out, err)
		}
		again, _ := json.Marshal(back)
		if string(again) != string(out) {
			t.Fatalf("not stable:\n%s\n%s", out, again)
		}
	})
}
