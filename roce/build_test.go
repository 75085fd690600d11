package roce_test

import (
	"net"
	"net/netip"
	"strconv"
	"strings"
	"testing"

	"github.com/gopacket/gopacket"

	"github.com/roce-probe/roce-probe/roce"
)

var (
	macA = net.HardwareAddr{0x02, 0, 0, 0, 0, 0x0a}
	macB = net.HardwareAddr{0x02, 0, 0, 0, 0, 0x0b}
)

// builtSpecs cover every marking FrameSpec takes.
func builtSpecs() []roce.FrameSpec {
	ud := func(s roce.FrameSpec) roce.FrameSpec {
		s.SrcMAC, s.DstMAC = macA, macB
		s.BTH = roce.BTH{Opcode: roce.OpcodeUDSendOnly, PKey: 0x8001, DestQP: 0x123456, PSN: 0xabcdef}
		s.Headers = []gopacket.SerializableLayer{&roce.DETH{QKey: 0x11111111, SrcQP: 0x654321}}
		s.Payload = []byte("built by roce.FrameSpec")
		return s
	}
	return []roce.FrameSpec{
		ud(roce.FrameSpec{Src: netip.MustParseAddr("192.0.2.1"), Dst: netip.MustParseAddr("192.0.2.2"), TOS: 26<<2 | 2, TTL: 64, IPID: 0xbeef, SrcPort: 0xc0de}),
		ud(roce.FrameSpec{VLANs: []roce.VLANTag{{TPID: 0x88a8, PCP: 5, DEI: true, ID: 1000}, {PCP: 2, ID: 10}},
			Src: netip.MustParseAddr("fd00::1"), Dst: netip.MustParseAddr("fd00::2"), TOS: 46<<2 | 1, TTL: 3, FlowLabel: 0xabcde, SrcPort: 0xd00d}),
		ud(roce.FrameSpec{VLANs: []roce.VLANTag{{TPID: 0x9100, PCP: 7, ID: 4094}, {TPID: 0x8100, PCP: 1, ID: 1}},
			Src: netip.MustParseAddr("198.51.100.7"), Dst: netip.MustParseAddr("203.0.113.9"), TOS: 3, TTL: 255, IPID: 1, SrcPort: 0xffff}),
		ud(roce.FrameSpec{Version: 1, VLANs: []roce.VLANTag{{PCP: 4, ID: 300}},
			Src: netip.MustParseAddr("fe80::1"), Dst: netip.MustParseAddr("::ffff:192.0.2.2"), TOS: 0x60, TTL: 1, FlowLabel: 0x54321}),
	}
}

// What tshark reads from frames FrameSpec builds is every marking that was
// asked for (an independent decoder), and the checksums are right.
func TestFrameSpecTshark(t *testing.T) {
	specs := builtSpecs()
	var frames [][]byte
	for i := range specs {
		b, err := specs[i].Build()
		if err != nil {
			t.Fatal(err)
		}
		frames = append(frames, b)
	}
	fields := []string{"eth.src", "eth.dst", "vlan.id", "vlan.priority", "vlan.dei", "vlan.etype", "eth.type",
		"ieee8021ad.id", "ieee8021ad.priority", "ieee8021ad.dei",
		"ip.dsfield", "ip.ttl", "ip.id", "ip.flags.df", "ip.checksum.status", "ip.src", "ip.dst",
		"ipv6.tclass", "ipv6.flow", "ipv6.hlim", "ipv6.src", "ipv6.dst", "udp.srcport", "udp.dstport", "udp.checksum",
		"infiniband.grh.tclass", "infiniband.grh.flowlabel", "infiniband.grh.hoplmt", "infiniband.grh.sgid", "infiniband.grh.dgid",
		"infiniband.bth.opcode", "infiniband.bth.p_key", "infiniband.bth.destqp", "infiniband.bth.psn", "infiniband.bth.padcnt",
		"infiniband.deth.q_key", "infiniband.deth.srcqp"}
	rows := roce.TsharkRows(t, frames, []string{"-o", "ip.check_checksum:TRUE", "-E", "occurrence=a", "-E", "aggregator=,"}, fields)
	hex := func(v uint64) string { return "0x" + strconv.FormatUint(v, 16) }
	for i, s := range specs {
		got := rows[i]
		want := map[string]string{
			"eth.src": "02:00:00:00:00:0a", "eth.dst": "02:00:00:00:00:0b",
			"infiniband.bth.opcode": "100", "infiniband.bth.p_key": "32769", "infiniband.bth.destqp": "0x00123456",
			"infiniband.bth.psn": "11259375", "infiniband.bth.padcnt": "1",
			"infiniband.deth.q_key": "0x11111111", "infiniband.deth.srcqp": "0x00654321",
		}
		// tshark decodes 0x88a8 tags as ieee8021ad, the others as vlan
		tags := map[string][]string{}
		for j, v := range s.VLANs {
			tpid, p := v.TPID, "vlan."
			if tpid == 0 {
				tpid = 0x8100
			}
			if tpid == 0x88a8 {
				p = "ieee8021ad."
			}
			tags[p+"id"] = append(tags[p+"id"], strconv.Itoa(int(v.ID)))
			tags[p+"priority"] = append(tags[p+"priority"], strconv.Itoa(int(v.PCP)))
			tags[p+"dei"] = append(tags[p+"dei"], map[bool]string{true: "1", false: "0"}[v.DEI])
			if j == 0 {
				want["eth.type"] = hex(uint64(tpid))
			}
		}
		for k, v := range tags {
			want[k] = strings.Join(v, ",")
		}
		switch {
		case s.Version == 1:
			want["infiniband.grh.tclass"], want["infiniband.grh.flowlabel"], want["infiniband.grh.hoplmt"] = strconv.Itoa(int(s.TOS)), strconv.Itoa(int(s.FlowLabel)), strconv.Itoa(int(s.TTL))
			want["infiniband.grh.sgid"], want["infiniband.grh.dgid"] = s.Src.String(), s.Dst.String()
		case s.Src.Is4():
			want["ip.dsfield"], want["ip.ttl"], want["ip.id"], want["ip.flags.df"] = "0x"+strconv.FormatUint(uint64(s.TOS), 16), strconv.Itoa(int(s.TTL)), hex(uint64(s.IPID)), "1"
			want["ip.checksum.status"], want["ip.src"], want["ip.dst"] = "1", s.Src.String(), s.Dst.String() // 1: good
		default:
			want["ipv6.tclass"], want["ipv6.flow"], want["ipv6.hlim"] = "0x"+strconv.FormatUint(uint64(s.TOS), 16), hex(uint64(s.FlowLabel)), strconv.Itoa(int(s.TTL))
			want["ipv6.src"], want["ipv6.dst"] = s.Src.String(), s.Dst.String()
		}
		if s.Version != 1 {
			want["udp.srcport"], want["udp.dstport"], want["udp.checksum"] = strconv.Itoa(int(s.SrcPort)), "4791", "0x0000"
		}
		for k, v := range want {
			if g := got[k]; !strings.EqualFold(normalizeHex(g), normalizeHex(v)) {
				t.Errorf("frame %d: tshark %s = %q, want %q", i+1, k, g, v)
			}
		}
		// and the ICRC, which tshark does not check
		if _, ok, err := roce.VerifyFrameICRC(frames[i]); err != nil || !ok {
			t.Errorf("frame %d: ICRC %v %v", i+1, ok, err)
		}
	}
}

// normalizeHex drops the leading zeros of hex numbers (tshark pads some).
func normalizeHex(s string) string {
	var parts []string
	for _, p := range strings.Split(s, ",") {
		if strings.HasPrefix(p, "0x") {
			n, err := strconv.ParseUint(p[2:], 16, 64)
			if err == nil {
				p = "0x" + strconv.FormatUint(n, 16)
			}
		}
		parts = append(parts, p)
	}
	return strings.Join(parts, ",")
}

// Out-of-range markings are errors naming the field and what is allowed.
func TestFrameSpecErrors(t *testing.T) {
	good := builtSpecs()[0]
	for _, c := range []struct {
		name string
		f    func(*roce.FrameSpec)
		want string
	}{
		{"mac", func(s *roce.FrameSpec) { s.SrcMAC = s.SrcMAC[:5] }, "want 6 bytes each"},
		{"version", func(s *roce.FrameSpec) { s.Version = 3 }, "RoCE version 3: want 1 or 2"},
		{"families", func(s *roce.FrameSpec) { s.Dst = netip.MustParseAddr("fd00::2") }, "want two IPv4 or two IPv6 addresses"},
		{"no address", func(s *roce.FrameSpec) { s.Src = netip.Addr{} }, "want two IPv4 or two IPv6 addresses"},
		{"flow label", func(s *roce.FrameSpec) { s.FlowLabel = 0x100000 }, "flow label 0x100000 out of range: want 0..0xfffff"},
		{"vid", func(s *roce.FrameSpec) { s.VLANs = []roce.VLANTag{{ID: 4096}} }, "VLAN tag 0 (TPID 0x8100, VID 4096, PCP 0): want"},
		{"pcp", func(s *roce.FrameSpec) { s.VLANs = []roce.VLANTag{{}, {PCP: 8}} }, "VLAN tag 1 (TPID 0x8100, VID 0, PCP 8)"},
		{"tpid", func(s *roce.FrameSpec) { s.VLANs = []roce.VLANTag{{TPID: 0x9200}} }, "want TPID 0x8100, 0x88a8 or 0x9100"},
		{"qpn", func(s *roce.FrameSpec) { s.BTH.DestQP = 1 << 24 }, "DestQP 0x1000000 out of range"},
	} {
		s := good
		c.f(&s)
		if _, err := s.Build(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error saying %q", c.name, err, c.want)
		}
	}
}
