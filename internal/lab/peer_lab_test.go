//go:build lab && linux

package lab

import (
	"bytes"
	"context"
	"encoding/binary"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/roce-probe/roce-probe/internal/verbs"
)

// RunInPeer runs commands in the peer namespace: there, veth1 has the
// peer's addresses and rxe0 does not exist.
func TestRunInPeer(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := RunInPeer(ctx, "ip", "-br", "addr", "show", "dev", PeerNetdev)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range []string{Nets[0].PeerIPv4.String(), Nets[0].PeerIPv6.String()} {
		if !strings.Contains(string(out), a) {
			t.Errorf("ip addr in %s: %q lacks %s", PeerNetns, out, a)
		}
	}
	if _, err := RunInPeer(ctx, "ip", "link", "show", "dev", HostNetdev); err == nil {
		t.Errorf("%s is visible in namespace %s", HostNetdev, PeerNetns)
	}
	if _, err := RunInPeer(ctx, "false"); err == nil {
		t.Error("RunInPeer(false): no error")
	}
}

// A UDP socket opened with InPeer on the peer's address receives rxe0's
// UD SEND as an ordinary datagram to port 4791: BTH, DETH, payload, ICRC.
// This is how a peer-side test answers rxe.
func TestPeerReceivesRoCEAsUDP(t *testing.T) {
	var conn net.PacketConn
	n := Nets[1] // vlan100
	err := InPeer(func() error {
		var err error
		conn, err = net.ListenPacket("udp4", n.PeerIPv4.Addr().String()+":4791")
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()

	ctx, err := verbs.Open(RDMADevice)
	if err != nil {
		t.Fatal(err)
	}
	defer ctx.Close()
	ud, err := ctx.NewUD(1, udQKey)
	if err != nil {
		t.Fatal(err)
	}
	defer ud.Close()
	idx := gidIndex(t, readSysfsGIDs(t, RDMADevice, 1), n.HostIPv4.Addr(), n.HostNetdev)
	ah, err := ud.CreateAH(verbs.AHAttr{IsGlobal: true, Port: 1, SGIDIndex: uint8(idx), DGID: n.PeerIPv4.Addr().As16(), HopLimit: 64})
	if err != nil {
		t.Fatal(err)
	}
	defer ah.Close()
	payload := []byte("to the peer's UDP socket")
	if err := ud.Send(ah, udRemoteQPN, udQKey, payload, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	buf := make([]byte, 2048)
	m, from, err := conn.ReadFrom(buf)
	if err != nil {
		t.Fatal(err)
	}
	b := buf[:m]
	if ua, ok := from.(*net.UDPAddr); !ok || !ua.IP.Equal(n.HostIPv4.Addr().AsSlice()) {
		t.Errorf("datagram from %v, want %v", from, n.HostIPv4.Addr())
	}
	if len(b) != 12+8+len(payload)+4 || b[0] != 0x64 || binary.BigEndian.Uint32(b[12:16]) != udQKey ||
		!bytes.Equal(b[20:20+len(payload)], payload) {
		t.Errorf("datagram % x: want BTH (UD SEND Only), DETH with Q_Key %#x, %q, ICRC", b, udQKey, payload)
	}
}
