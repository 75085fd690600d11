// Package roce provides gopacket layers for RoCE v1 and v2: the InfiniBand
// Base Transport Header (BTH), its extension headers (RDETH, DETH, RETH,
// AETH, ImmDt, IETH, AtomicETH, AtomicAckETH, XRCETH, FETH), the body of
// the RoCE v2 CNP, the GRH of RoCE v1, and the invariant CRC (ICRC) that
// ends every RoCE packet.
//
// Importing the package registers the layers with gopacket (layer types
// 1791-1804, UDP destination port 4791 and EtherType 0x8915), so
// gopacket.NewPacket decodes an Ethernet frame carrying RoCE v2 (IPv4 or
// IPv6, untagged, 802.1Q or 802.1ad/QinQ) or RoCE v1 down to a Payload
// layer that holds the data, the pad bytes and the ICRC, and says whether
// the ICRC is valid.
//
// Which extension headers follow a BTH depends on its opcode (see
// Opcode.Info). gopacket.NewPacket handles this itself; with a
// gopacket.DecodingLayerParser use NewDecodingLayers, which links the
// extension-header layers to one BTH. Decoder decodes a whole frame into a
// flat Packet and verifies its ICRC without allocating, faster than a
// DecodingLayerParser (see docs/performance.md). Reading capture files and
// per-flow summaries are in the subpackage roce/capture; `roce-probe decode`
// uses both.
//
// GID is the 128-bit GID of GRHs and GID tables (package gid names it
// gid.GID, an alias), with ParseGID and GIDFromAddr.
//
// To build frames, fill a FrameSpec (MACs, VLAN tags, addresses, DSCP/ECN,
// TTL, flow label, UDP ports, BTH, extension headers, payload) and call
// Build, or serialize layers with SerializeFrame (or
// gopacket.SerializeLayers followed by FillICRC). WalkFrame walks the
// Ethernet, VLAN, IP and UDP headers of a frame without allocating, with
// one documented decision per edge case (see Walk); Decoder, the ICRC
// functions and the probe's parser all use it. ICRC, VerifyICRC and
// VerifyFrameICRC compute and check ICRCs of raw bytes. The ICRC is a
// CRC-32 stored little-endian on the wire; tools that print it as a
// big-endian number (Wireshark's infiniband.invariant.crc) show it
// byte-swapped.
//
// FlowLabelToUDPSourcePort, FlowLabelFromQPNs, UDPSourcePort and
// RXESourcePort reproduce how Linux and rdma-core choose the RoCE v2 UDP
// source port.
//
// The RoCE v1 ICRC masks the GRH's TClass, FlowLabel and HopLmt (the IBTA
// rule for packets with a GRH). Unlike the v2 rule, which is checked
// against independent known-answer vectors, no independent RoCE v1 vector
// or capture is known, so the v1 ICRC is unconfirmed.
package roce
