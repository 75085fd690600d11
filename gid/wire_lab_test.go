//go:build lab && ibverbs && cgo

package gid_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"path/filepath"
	"testing"
	"time"

	"github.com/roce-probe/roce-probe/gid"
	"github.com/roce-probe/roce-probe/internal/lab"
	"github.com/roce-probe/roce-probe/internal/verbs"
	"github.com/roce-probe/roce-probe/vlan"
)

// The entry gid.Select picks for a peer address sends frames that reach the
// peer with exactly the VLAN tags of that lab network (none, 100, 200, or
// 802.1ad 1000 + 802.1Q 10) and the host address as IP source. Frames are
// captured on veth1 in the peer namespace with lab.CapturePeer (AF_PACKET,
// ready when it returns; the tags the kernel keeps out of band are put
// back into the frame) and left as gid-wire-<net>.pcapng artifacts.
func TestLabSelectedEntryTagsOnWire(t *testing.T) {
	p, h := labTable(t)
	c, err := verbs.Open(lab.RDMADevice)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ud, err := c.NewUD(1, 0x11111111)
	if err != nil {
		t.Fatal(err)
	}
	defer ud.Close()
	dir := lab.ArtifactDir(t)
	payload := []byte("roce-probe gid wire test")
	for _, n := range lab.Nets {
		t.Run(n.Name, func(t *testing.T) {
			dst := n.PeerIPv4.Addr()
			s, err := gid.Select(p.Entries, gid.FromAddr(dst), gid.Preferences{}, h)
			if err != nil {
				t.Fatal(err)
			}
			ah, err := ud.CreateAH(verbs.AHAttr{IsGlobal: true, Port: 1, SGIDIndex: uint8(s.Entry.Index), DGID: gid.FromAddr(dst), HopLimit: 64})
			if err != nil {
				t.Fatal(err)
			}
			defer ah.Close()
			capture, err := lab.CapturePeer() // capturing when it returns
			if err != nil {
				t.Fatal(err)
			}
			defer capture.Stop()
			// Send until the peer sees a RoCE v2 frame with the payload (the
			// first send may wait for neighbour resolution), for at most 20 s.
			match := func(f lab.Frame) bool {
				_, _, ok := parseRoCEv2(f.Data)
				return ok && bytes.Contains(f.Data, payload)
			}
			deadline := time.Now().Add(20 * time.Second)
			var f lab.Frame
			for sent := 1; ; sent++ {
				if err := ud.Send(ah, 0x12, 0x11111111, payload, time.Second); err != nil {
					t.Fatal(err)
				}
				ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
				f, err = capture.Wait(ctx, match)
				cancel()
				if err == nil {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("no RoCE v2 frame with the payload on %s after %d sends: %v", lab.PeerNetdev, sent, err)
				}
			}
			pcap := filepath.Join(dir, "gid-wire-"+n.Name+".pcapng")
			if err := lab.WritePcapng(pcap, lab.PeerNetdev, capture.Stop()); err != nil {
				t.Error(err)
			}
			tags, src, _ := parseRoCEv2(f.Data)
			if len(tags) != len(n.VLANs) {
				t.Fatalf("frame carries tags %v, want %v (selected index %d on %s; capture %s)", tags, n.VLANs, s.Entry.Index, s.Entry.Netdev, pcap)
			}
			for i, v := range n.VLANs {
				if tags[i] != (vlan.Tag{ID: v.ID, TPID: vlan.TPID(v.Proto)}) {
					t.Errorf("tag %d = %v, want %d/%#04x", i, tags[i], v.ID, v.Proto)
				}
			}
			if src != n.HostIPv4.Addr().As4() {
				t.Errorf("IP source %v, want %v", src, n.HostIPv4.Addr())
			}
		})
	}
}

// parseRoCEv2 returns the VLAN tags (outermost first) and the IPv4 source
// of an Ethernet frame, and whether it is a RoCE v2 frame over IPv4 (UDP
// destination port 4791).
func parseRoCEv2(data []byte) ([]vlan.Tag, [4]byte, bool) {
	var tags []vlan.Tag
	off := 12
	for off+4 <= len(data) {
		et := binary.BigEndian.Uint16(data[off:])
		if et != 0x8100 && et != 0x88a8 {
			break
		}
		tags = append(tags, vlan.Tag{ID: binary.BigEndian.Uint16(data[off+2:]) & 0xfff, TPID: vlan.TPID(et)})
		off += 4
	}
	var src [4]byte
	ip := off + 2
	if ip+24 > len(data) || binary.BigEndian.Uint16(data[off:]) != 0x0800 || data[ip+9] != 17 {
		return nil, src, false
	}
	udp := ip + int(data[ip]&0x0f)*4
	if udp+4 > len(data) || binary.BigEndian.Uint16(data[udp+2:]) != 4791 {
		return nil, src, false
	}
	copy(src[:], data[ip+12:ip+16])
	return tags, src, true
}
