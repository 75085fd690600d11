// Package capture reads pcap and pcapng captures of Ethernet interfaces (and
// Linux cooked captures of tcpdump -i any, as the Ethernet frames they
// stand for) and summarises the RoCE packets in them per flow, apart from the wire-format
// layers of package roce (as gopacket's pcapgo is apart from its layers).
//
// NewReader tells pcap from pcapng by the magic number (a gzip-compressed
// capture is decompressed) and Reader.Next returns one frame at a time,
// for roce.Decoder.DecodeCaptured; ReadAhead reads on another goroutine.
// Reader.Summarize decodes the whole capture on all cores: a capture file
// of 4 MiB or more is cut at frame boundaries into chunks the cores take in
// turn, other captures are read by one goroutine and decoded in batches by
// the others, and the per-chunk Summaries are merged in capture order, so
// the result equals frame-by-frame decoding (docs/performance.md).
//
// Summary aggregates decoded packets per flow (FlowKey: RoCE version,
// addresses, UDP ports, destination QP and, with a DETH, source QP) into
// FlowSummary rows; Stats counts frames that are RoCE, not RoCE and
// malformed. This is what `roce-probe decode` uses.
package capture
