//go:build lab && ibverbs && cgo

package main

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/netip"
	"path/filepath"
	"testing"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/afpacket"

	"github.com/roce-probe/roce-probe/internal/lab"
	"github.com/roce-probe/roce-probe/internal/verbs"
	"github.com/roce-probe/roce-probe/roce"
)

const (
	cntQKey   = 0x0c0ffee5
	cntPeerQP = 0x00c0de // where rxe0's SENDs go: the peer has no QP, the frames are only captured
	cntSrcQP  = 0x000123 // the source QP of the peer's frames
)

// rawUD is one UD SEND the peer puts on the wire for rxe0 (peerUD's
// arguments, and an ICRC broken or not), and whether rxe counts it in
// rcvd_pkts.
type rawUD struct {
	what      string // names it in messages
	counted   bool
	net       lab.Net
	v6        bool
	destQP    uint32
	qkey      uint32
	breakICRC bool
	payload   []byte
	frame     []byte
}

// peerUD builds a UD SEND Only from the peer to rxe0 on network n
// (roce.FrameSpec: the lab's MACs and addresses, valid lengths and ICRC).
func peerUD(t *testing.T, n lab.Net, v6 bool, destQP, qkey uint32, payload []byte) []byte {
	t.Helper()
	hostMAC, _ := net.ParseMAC(lab.HostMAC)
	peerMAC, _ := net.ParseMAC(lab.PeerMAC)
	s := roce.FrameSpec{DstMAC: hostMAC, SrcMAC: peerMAC, Src: n.PeerIPv4.Addr(), Dst: n.HostIPv4.Addr(), TTL: 64, IPID: 0x4242, SrcPort: 0xc123,
		BTH:     roce.BTH{Opcode: roce.OpcodeUDSendOnly, PKey: 0xffff, DestQP: destQP, PSN: 0x77},
		Headers: []gopacket.SerializableLayer{&roce.DETH{QKey: qkey, SrcQP: cntSrcQP}}, Payload: payload}
	if v6 {
		s.Src, s.Dst = n.PeerIPv6.Addr(), n.HostIPv6.Addr()
	}
	for _, v := range n.VLANs {
		s.VLANs = append(s.VLANs, roce.VLANTag{TPID: v.Proto, ID: v.ID})
	}
	f, err := s.Build()
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// sendRawFromPeer writes frames, in order, on the peer's end of the veth
// pair (AF_PACKET in the peer namespace).
func sendRawFromPeer(t *testing.T, frames [][]byte) {
	t.Helper()
	err := lab.InPeer(func() error {
		tp, err := afpacket.NewTPacket(afpacket.OptInterface(lab.PeerNetdev))
		if err != nil {
			return err
		}
		defer tp.Close()
		for _, f := range frames {
			if err := tp.WritePacketData(f); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// UD counters on both kernels, with each kernel's names, on the
// single-host lab: rxe0 sends UD SENDs to the peer through the library's
// cgo UD path (internal/verbs, as the ah lab tests use it) on four
// networks, IPv4 and IPv6, with payloads of 13 to 1000 bytes; the peer
// sends rxe0's QP raw UD SENDs, four it accepts and three it drops before
// counting (a bad ICRC, a wrong Q_Key, a QP that does not exist). Between
// `roce-probe counters --dev rxe0 -o json` before and after:
//
//   - sent_pkts rose by exactly the RoCE frames from rxe0 the capture on
//     the peer's veth shows, rcvd_pkts by the four accepted frames only
//     (rxe_rcv counts after hdr_check and the ICRC check);
//   - on 7.x sent_bytes and rcvd_bytes by exactly the lengths of those IP
//     datagrams (rxe counts from the IP header to the ICRC: not the
//     Ethernet frame, not the InfiniBand packet, not the payload); on 6.1
//     they are absent;
//   - each report equals sysfs (checkCounterSet: netlink = sysfs, no
//     lifespan, 7.x's PMA counters);
//
// and `counters --watch --interval 500ms -o ndjson`, running through it and
// stopped with SIGTERM (exit 0, whole lines), gives every counter a rate
// equal to its change over the report's interval, changes that add up to
// the same totals.
func TestLabCountersUD(t *testing.T) {
	dev := lab.RDMADevice
	vctx, err := verbs.Open(dev)
	if err != nil {
		t.Fatal(err)
	}
	defer vctx.Close()
	ud, err := vctx.NewUDConfig(verbs.UDConfig{Port: 1, QKey: cntQKey})
	if err != nil {
		t.Fatal(err)
	}
	defer ud.Close()
	capt, err := lab.CapturePeer()
	if err != nil {
		t.Fatal(err)
	}
	defer capt.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()

	before := readCounters(t, "", dev)
	checkCounterSet(t, before, dev)
	w := startCountersWatch(t, "--dev", dev, "--interval", "500ms")
	reps := w.after(t, ctx, time.Time{}) // sampling has started, before any traffic

	// rxe0 → the peer.
	host := map[netip.Addr]bool{}
	sends := []struct {
		net  string
		v6   bool
		size int
	}{{"untagged", false, 13}, {"untagged", true, 300}, {"vlan100", false, 1000}, {"vlan100", true, 17}, {"vlan200", false, 510}, {"qinq1000.10", true, 65}}
	for i, s := range sends {
		n, _ := lab.NetByName(s.net)
		src, dst := n.HostIPv4.Addr(), n.PeerIPv4.Addr()
		if s.v6 {
			src, dst = n.HostIPv6.Addr(), n.PeerIPv6.Addr()
		}
		host[src] = true
		idx, err := lab.GIDIndex(dev, src, n.HostNetdev)
		if err != nil {
			t.Fatal(err)
		}
		ah, err := ud.CreateAH(verbs.AHAttr{IsGlobal: true, Port: 1, SGIDIndex: uint8(idx), DGID: dst.As16(), HopLimit: 64})
		if err != nil {
			t.Fatal(err)
		}
		payload := bytes.Repeat([]byte{byte('a' + i)}, s.size)
		copy(payload, fmt.Sprintf("cnt-ud-%d-", i))
		if err := ud.Send(ah, cntPeerQP, cntQKey, payload, 5*time.Second); err != nil {
			t.Fatal(err)
		}
		ah.Close()
		if _, err := capt.Wait(ctx, func(f lab.Frame) bool { return bytes.Contains(f.Data, payload) }); err != nil {
			t.Fatalf("send %d (%s): %v", i, s.net, err)
		}
	}

	// The peer → rxe0, the last one accepted, so that the ones before it
	// have been through rxe_rcv when its completion arrives.
	untagged, _ := lab.NetByName("untagged")
	vlan100, _ := lab.NetByName("vlan100")
	qp := ud.QPN()
	raws := []rawUD{
		{what: "untagged IPv4", counted: true, net: untagged, destQP: qp, qkey: cntQKey, payload: []byte("peer to rxe0: counted, 40 bytes payload.")},
		{what: "bad ICRC", net: untagged, destQP: qp, qkey: cntQKey, breakICRC: true, payload: []byte("peer to rxe0, ICRC broken")},
		{what: "VLAN 100 IPv6", counted: true, net: vlan100, v6: true, destQP: qp, qkey: cntQKey, payload: bytes.Repeat([]byte("v"), 200)},
		{what: "wrong Q_Key", net: untagged, destQP: qp, qkey: cntQKey + 1, payload: []byte("peer to rxe0, Q_Key wrong")},
		{what: "no such QP", net: untagged, destQP: 0xfff0, qkey: cntQKey, payload: []byte("peer to rxe0, QP 0xfff0")},
		{what: "untagged IPv6, 1 byte", counted: true, net: untagged, v6: true, destQP: qp, qkey: cntQKey, payload: []byte("1")},
		{what: "untagged IPv4, last", counted: true, net: untagged, destQP: qp, qkey: cntQKey, payload: []byte("peer to rxe0, the last one")},
	}
	for i := range raws {
		r := &raws[i]
		r.frame = peerUD(t, r.net, r.v6, r.destQP, r.qkey, r.payload)
		if r.breakICRC {
			r.frame[len(r.frame)-1] ^= 0xff
		}
	}
	var all [][]byte
	var counted []lab.Frame
	for _, r := range raws {
		all = append(all, r.frame)
		if r.counted {
			counted = append(counted, lab.Frame{Data: r.frame})
		}
	}
	sendRawFromPeer(t, all)
	for range counted {
		wc, err := ud.Recv(10 * time.Second)
		if err != nil {
			t.Fatalf("rxe0 did not receive every frame it should accept: %v", err)
		}
		ok := false
		for _, r := range raws {
			ok = ok || (r.counted && bytes.Equal(wc.Payload, r.payload))
		}
		if wc.Status != verbs.WCSuccess || !ok {
			t.Fatalf("completion status %d (%s), payload %q: not one of the frames rxe should accept", wc.Status, wc.StatusText, wc.Payload)
		}
	}
	for _, r := range raws {
		if _, err := capt.Wait(ctx, func(f lab.Frame) bool { return bytes.Equal(f.Data, r.frame) }); err != nil {
			t.Fatalf("the peer's frame %q is not in the capture: %v", r.what, err)
		}
	}
	end := time.Now()

	after := readCounters(t, "", dev)
	checkCounterSet(t, after, dev)
	reps = append(reps, w.after(t, ctx, end)...)
	reps = append(reps, w.stop(t, ctx)...)
	frames := capt.Stop()
	_ = lab.WritePcapng(filepath.Join(lab.ArtifactDir(t), "counters-ud.pcapng"), lab.PeerNetdev, frames)

	tx := countRoCE(frames, func(p *roce.Packet) bool { return host[p.Src] })
	rx := countRoCE(counted, func(*roce.Packet) bool { return true })
	if tx.pkts != uint64(len(sends)) || tx.opcodes[roce.OpcodeUDSendOnly] != len(sends) {
		t.Errorf("the capture shows %v from rxe0, want the %d UD SENDs", tx, len(sends))
	}
	checkCounted(t, before, after, dev, tx, rx)

	total := checkRates(t, dev, before, reps)
	moving := 0
	for _, r := range reps {
		if c := r.port(t, dev).Counters["sent_pkts"]; c.Rate != nil && *c.Rate > 0 {
			moving++
		}
	}
	last := reps[len(reps)-1]
	for _, n := range []string{"sent_pkts", "rcvd_pkts", "sent_bytes", "rcvd_bytes"} {
		if _, ok := after.port(t, dev).Counters[n]; !ok {
			continue
		}
		if d := delta(t, before, after, dev, n); total[n] != d || last.must(t, dev, n) != after.must(t, dev, n) {
			t.Errorf("--watch: %s rose by %d over %d reports (last %d), the samples before and after by %d (after %d)", n, total[n], len(reps), last.must(t, dev, n), d, after.must(t, dev, n))
		}
	}
	if moving == 0 {
		t.Errorf("no --watch report has a sent_pkts rate above 0 although rxe0 sent %d packets during the watch", tx.pkts)
	}
	t.Logf("--watch: %d reports, sent_pkts moving in %d of them", len(reps), moving)
}
