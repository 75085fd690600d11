//go:build lab && ibverbs && cgo

package gid

import (
	"bytes"
	"context"
	"encoding/binary"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/gopacket/gopacket/pcapgo"
	"github.com/roce-probe/roce-probe/internal/lab"
	"github.com/roce-probe/roce-probe/internal/verbs"
	"github.com/roce-probe/roce-probe/vlan"
)

// The entry Select picks for a peer address sends frames that reach the
// peer with exactly the VLAN tags of that lab network (none, 100, 200, or
// 802.1ad 1000 + 802.1Q 10) and the host address as IP source. Frames are
// captured with tcpdump on veth1 in the peer namespace (libpcap puts the
// tags the kernel strips back into the frame).
func TestLabSelectedEntryTagsOnWire(t *testing.T) {
	if _, err := exec.LookPath("tcpdump"); err != nil {
		t.Fatal("tcpdump is needed for this lab test:", err)
	}
	p, _ := labTable(t)
	h, err := vlan.Open("")
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
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
	dir := os.Getenv("LAB_ARTIFACTS")
	if dir == "" {
		dir = t.TempDir()
	}
	for _, n := range lab.Nets {
		t.Run(n.Name, func(t *testing.T) {
			dst := n.PeerIPv4.Addr()
			s, err := Select(p.Entries, FromAddr(dst), Preferences{}, h)
			if err != nil {
				t.Fatal(err)
			}
			ah, err := ud.CreateAH(verbs.AHAttr{IsGlobal: true, Port: 1, SGIDIndex: uint8(s.Entry.Index), DGID: FromAddr(dst), HopLimit: 64})
			if err != nil {
				t.Fatal(err)
			}
			defer ah.Close()
			pcap := filepath.Join(dir, "gid-wire-"+n.Name+".pcap")
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			// No capture filter: libpcap's vlan keyword and the tag the
			// kernel keeps out of band do not mix well for QinQ.
			cmd := exec.CommandContext(ctx, "tcpdump", "-i", lab.PeerNetdev, "-U", "-w", pcap)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			if err := lab.StartInPeer(cmd); err != nil {
				t.Fatal(err)
			}
			time.Sleep(time.Second) // let tcpdump open the socket
			for i := 0; i < 5; i++ {
				if err := ud.Send(ah, 0x12, 0x11111111, []byte("roce-probe gid wire test"), time.Second); err != nil {
					t.Fatal(err)
				}
				time.Sleep(100 * time.Millisecond)
			}
			time.Sleep(500 * time.Millisecond)
			cmd.Process.Signal(os.Interrupt)
			if err := cmd.Wait(); err != nil && ctx.Err() != nil {
				t.Fatalf("tcpdump: %v: %s", err, stderr.String())
			}
			tags, src := parseCapture(t, pcap)
			if len(tags) != len(n.VLANs) {
				t.Fatalf("frame carries tags %v, want %v (selected index %d on %s)", tags, n.VLANs, s.Entry.Index, s.Entry.Netdev)
			}
			for i, v := range n.VLANs {
				if tags[i] != (vlan.Tag{ID: v.ID, Proto: vlan.Proto(v.Proto)}) {
					t.Errorf("tag %d = %v, want %d/%#04x", i, tags[i], v.ID, v.Proto)
				}
			}
			if src != n.HostIPv4.Addr().As4() {
				t.Errorf("IP source %v, want %v", src, n.HostIPv4.Addr())
			}
		})
	}
}

// parseCapture returns the VLAN tags (outermost first) and the IPv4
// source of the first RoCE v2 frame (UDP destination port 4791) in a pcap
// file.
func parseCapture(t *testing.T, path string) ([]vlan.Tag, [4]byte) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := pcapgo.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	for {
		data, _, err := r.ReadPacketData()
		if err != nil {
			t.Fatalf("no RoCE v2 frame in %s (%v)", path, err)
		}
		var tags []vlan.Tag
		off := 12
		for off+4 <= len(data) {
			et := binary.BigEndian.Uint16(data[off:])
			if et != 0x8100 && et != 0x88a8 {
				break
			}
			tags = append(tags, vlan.Tag{ID: binary.BigEndian.Uint16(data[off+2:]) & 0xfff, Proto: vlan.Proto(et)})
			off += 4
		}
		ip := off + 2
		if ip+24 > len(data) || binary.BigEndian.Uint16(data[off:]) != 0x0800 || data[ip+9] != 17 {
			continue
		}
		udp := ip + int(data[ip]&0x0f)*4
		if udp+4 > len(data) || binary.BigEndian.Uint16(data[udp+2:]) != 4791 {
			continue
		}
		var src [4]byte
		copy(src[:], data[ip+12:ip+16])
		return tags, src
	}
}
