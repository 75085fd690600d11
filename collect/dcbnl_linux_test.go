package collect

import (
	"encoding/binary"
	"errors"
	"testing"

	"github.com/roce-probe/roce-probe/qos"
	"github.com/roce-probe/roce-probe/vlan"
)

func requireLittleEndian(t testing.TB) {
	t.Helper()
	if binary.NativeEndian.Uint16([]byte{1, 0}) != 1 {
		t.Skip("byte vectors are written for little-endian hosts (x86-64, arm64)")
	}
}

func TestDCBRequestBytes(t *testing.T) {
	requireLittleEndian(t)
	req := newDCBRequest(dcbCmdIEEEGet, "eth0")
	b := req.Serialize()
	// nlmsghdr (16) + dcbmsg (4) + IFNAME attribute (4 + "eth0\0" = 9, padded to 12).
	if len(b) != 32 {
		t.Fatalf("request is %d bytes, want 32: %x", len(b), b)
	}
	want := map[int]byte{
		0: 32, 1: 0, 2: 0, 3: 0, // nlmsg_len
		4: 0x4e, 5: 0, // RTM_GETDCB = 78
		6: 0x01, 7: 0, // NLM_F_REQUEST
		12: 0, 13: 0, 14: 0, 15: 0, // pid 0 (kernel fills the sender)
		16: 0, 17: 21, 18: 0, 19: 0, // dcbmsg: AF_UNSPEC, DCB_CMD_IEEE_GET, pad
		20: 9, 21: 0, 22: 1, 23: 0, // nla_len 9, DCB_ATTR_IFNAME
		24: 'e', 25: 't', 26: 'h', 27: '0', 28: 0, 29: 0, 30: 0, 31: 0,
	}
	for off, v := range want {
		if b[off] != v {
			t.Errorf("byte %d = 0x%02x, want 0x%02x (%x)", off, b[off], v, b)
		}
	}
	g := newDCBRequest(dcbCmdGDCBX, "eth0").Serialize()
	if g[17] != 22 {
		t.Errorf("GDCBX command byte = %d, want 22", g[17])
	}
}

func TestReadDCBLoopbackIsNoDCB(t *testing.T) {
	// lo has no dcbnl_ops: the kernel answers EOPNOTSUPP (dcb_doit), which
	// must come back as "no DCB", not as an error. Needs no privileges.
	d, err := (*dcbHandle)(nil).readDCB("lo")
	if err != nil {
		t.Fatalf("readDCB(lo): %v", err)
	}
	if d.Supported || d.Reason == "" || d.Trust() != qos.TrustUnknown {
		t.Errorf("readDCB(lo) = %+v, want unsupported with a reason", d)
	}
}

func TestReadDCBErrors(t *testing.T) {
	// A missing netdev: ENODEV with CONFIG_DCB; a kernel without DCB
	// answers EOPNOTSUPP for any name, which reads as "no DCB".
	if d, err := (*dcbHandle)(nil).readDCB("no-such-netdev0"); err != nil && !errors.Is(err, vlan.ErrNoLink) || err == nil && d.Supported {
		t.Errorf("missing netdev: %+v, %v; want ErrNoLink (or no DCB support)", d, err)
	}
	for _, name := range []string{"", "a-name-longer-than-15"} {
		if _, err := (*dcbHandle)(nil).readDCB(name); err == nil {
			t.Errorf("readDCB(%q) accepted", name)
		}
	}
}
