package probe

import (
	"github.com/roce-probe/roce-probe/qos"
	"github.com/roce-probe/roce-probe/vlan"
)

// MarkingsJSON is the JSON form of markings (docs/json.md, "markings"),
// one for every output that shows them (`send`, `listen`, the agent's
// /pairs): vlan and pcp are the outermost tag's, null for an untagged
// frame; vlan_chain lists every tag, [] untagged, null when not known
// (markings a probe payload reports carry only the outermost tag).
type MarkingsJSON struct {
	VLAN      *uint16         `json:"vlan"`
	PCP       *uint8          `json:"pcp"`
	VLANChain []vlan.ChainTag `json:"vlan_chain"`
	DSCP      uint8           `json:"dscp"`
	ECN       uint8           `json:"ecn"`
	ECNName   string          `json:"ecn_name"`
	TTL       uint8           `json:"ttl"`
	UDPSport  uint16          `json:"udp_sport"`
}

// JSON is m in its JSON form; chain is the frame's tags, outermost first,
// when known: nil with m tagged means they are not (m came in a payload).
func (m Markings) JSON(chain []vlan.ChainTag) *MarkingsJSON {
	j := &MarkingsJSON{DSCP: m.DSCP, ECN: m.ECN, ECNName: qos.ECN(m.ECN).String(), TTL: m.TTL, UDPSport: m.Sport, VLANChain: []vlan.ChainTag{}}
	if m.Tagged {
		v, p := m.VLAN, m.PCP
		j.VLAN, j.PCP = &v, &p
		j.VLANChain = chain
	}
	return j
}
