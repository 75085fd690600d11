package gid

import (
	"encoding/json"
	"testing"
)

// Entry's JSON form never panics on input and round-trips what it accepts.
func FuzzEntryJSON(f *testing.F) {
	f.Add([]byte(`{"device":"rxe0","port":1,"index":3,"gid":"::ffff:10.0.100.1","type":"RoCE v2","kind":"ipv4","ip":"10.0.100.1","netdev":"veth0.100","ifindex":4,"vlan":100,"vlan_chain":[{"id":100,"tpid":33024,"pcp":null,"netdev":"veth0.100"}],"real_netdev":"veth0","mac":"02:00:00:00:00:01","mtu":1500,"operstate":"up","netns":"current","default":false,"empty":false}`))
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
