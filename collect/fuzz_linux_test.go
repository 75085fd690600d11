package collect

import (
	"testing"

	"github.com/roce-probe/roce-probe/gid"
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
		p, err := gid.Parse(string(b))
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
