// Package topology says where each RoCE netdev is plugged into the fabric:
// the switch (the top-of-rack switch, ToR) and the switch port at the other
// end of its link.
//
// It decodes the two ways a Linux host learns that — an LLDP frame the
// switch sends to the netdev (DecodeLLDP, IEEE 802.1AB, through gopacket's
// LinkLayerDiscovery layers) and lldpd's neighbour table (ParseLLDPCli, the
// output of `lldpcli -f json show neighbors`) — and decides each netdev's
// Attachment from them and the operator's configuration (Attach): the
// switch, its port, the source (lldp, lldpd or config) and the age, or why
// it is not known. A NIC whose firmware runs its own LLDP agent consumes
// the switch's frames (FirmwareNote); the configuration then names the
// switch.
//
// The package is pure: package collect listens on the netdevs and runs
// lldpcli, the host snapshot holds the attachments, and roce-probe's agent
// tells its peers its ToR in probe replies (docs/snapshot.md, docs/agent.md).
package topology
