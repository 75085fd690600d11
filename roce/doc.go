// Package roce provides gopacket layers for RoCE v1 and v2: the InfiniBand
// Base Transport Header (BTH) and its extension headers, the GRH of RoCE v1,
// and the invariant CRC (ICRC) that ends every RoCE packet.
package roce
