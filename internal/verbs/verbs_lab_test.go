//go:build lab && ibverbs && cgo

package verbs

import (
	"bytes"
	"encoding/binary"
	"net/netip"
	"testing"
	"time"

	"github.com/roce-probe/roce-probe/internal/lab"
)

// findGID returns the index of the RoCE v2 GID of addr on rxe0 port 1.
func findGID(t *testing.T, c *Context, addr netip.Addr) int {
	t.Helper()
	pa, err := c.QueryPort(1)
	if err != nil {
		t.Fatal(err)
	}
	want := addr.As16()
	for i := 0; i < pa.GIDTableLen && i < 256; i++ {
		e, err := c.QueryGID(1, i)
		if err != nil {
			continue // empty entries fail with ENODATA
		}
		if e.GID == want && e.Type == 2 {
			return i
		}
	}
	t.Fatalf("no RoCE v2 GID for %v on %s port 1", addr, c.Name())
	return -1
}

// A UD SEND from one QP of rxe0 to another through an AH on the host's own
// address loops back inside rxe: the receive completes with the sender's
// QPN, the GRH flag and the IP header in the GRH area.
func TestLabUDLoopback(t *testing.T) {
	c, err := Open(lab.RDMADevice)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	base := lab.Nets[0]
	for _, addr := range []netip.Addr{base.HostIPv4.Addr(), base.HostIPv6.Addr()} {
		t.Run(addr.String(), func(t *testing.T) {
			const qkey = 0x11111111
			idx := findGID(t, c, addr)
			a, err := c.NewUDConfig(UDConfig{Port: 1, QKey: qkey, SQPSN: 0x123456})
			if err != nil {
				t.Fatal(err)
			}
			defer a.Close()
			b, err := c.NewUD(1, qkey)
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			ah, err := a.CreateAH(AHAttr{IsGlobal: true, Port: 1, SGIDIndex: uint8(idx), DGID: addr.As16(), HopLimit: 64, TrafficClass: 0x68})
			if err != nil {
				t.Fatal(err)
			}
			payload := []byte("roce-probe loopback")
			if err := a.Send(ah, b.QPN(), qkey, payload, 2*time.Second); err != nil {
				t.Fatal(err)
			}
			wc, err := b.Recv(2 * time.Second)
			if err != nil {
				t.Fatal(err)
			}
			if wc.Status != WCSuccess || wc.SrcQP != a.QPN() || wc.Flags&WCGRH == 0 || !bytes.Equal(wc.Payload, payload) {
				t.Fatalf("completion %+v: want success from QPN %#x with GRH and payload %q", wc, a.QPN(), payload)
			}
			if addr.Is4() {
				ip := wc.GRH[20:]
				if ip[0] != 0x45 || ip[1] != 0x68 || !bytes.Equal(ip[12:16], addr.AsSlice()) || ip[9] != 17 {
					t.Errorf("GRH area bytes 20..39 = % x, want an IPv4 header with TOS 0x68 from %v", ip, addr)
				}
			} else {
				fc := binary.BigEndian.Uint32(wc.GRH[0:4])
				if fc>>28 != 6 || (fc>>20)&0xff != 0x68 || wc.GRH[6] != 17 || !bytes.Equal(wc.GRH[8:24], addr.AsSlice()) {
					t.Errorf("GRH area = % x, want an IPv6 header with traffic class 0x68 from %v", wc.GRH, addr)
				}
			}
		})
	}
}
