package topology

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"net/netip"
	"sort"
	"strings"
	"time"

	"github.com/roce-probe/roce-probe/internal/null"
)

// Source says where an attachment was learned.
type Source string

// Sources of an attachment.
const (
	// SourceConfig is the operator's word: the agent's topology
	// configuration (a value set per node, e.g. from NVIDIA topograph's
	// network.topology.nvidia.com/leaf node label).
	SourceConfig Source = "config"
	// SourceLLDP is an LLDP frame heard on the netdev's raw socket.
	SourceLLDP Source = "lldp"
	// SourceLLDPD is lldpd's neighbour table (lldpcli).
	SourceLLDPD Source = "lldpd"
)

// Attachment is a netdev's place in the fabric: the switch (the ToR) and
// the switch port it is plugged into, where that was learned, and how old
// the knowledge is. Switch is "" when it is not known, and Reason then
// says why.
type Attachment struct {
	Netdev string
	// Switch names the switch (Neighbor.Switch for LLDP and lldpd, the
	// configured name for SourceConfig); "" when unknown.
	Switch string
	// SwitchPort is the switch's port (Neighbor.SwitchPort); "" when not
	// known (always for SourceConfig).
	SwitchPort string
	Source     Source
	// Age is how long ago the neighbour was last heard; -1 when not
	// applicable or not known (configured, unknown).
	Age time.Duration
	// Neighbor is what LLDP or lldpd said; nil for configured and unknown
	// attachments.
	Neighbor *Neighbor
	// Reason says why Switch is unknown ("" when known).
	Reason string
}

// Known reports whether the attachment names a switch.
func (a Attachment) Known() bool { return a.Switch != "" }

type attachmentJSON struct {
	Netdev     string    `json:"netdev"`
	Switch     *string   `json:"switch"`
	SwitchPort *string   `json:"switch_port"`
	Source     *string   `json:"source"`
	Age        *float64  `json:"age_s"`
	LLDP       *Neighbor `json:"lldp"`
	Reason     *string   `json:"reason"`
}

// MarshalJSON writes {netdev, switch, switch_port, source, age_s, lldp,
// reason} (docs/json.md, "attachment"), null for what is not known.
func (a Attachment) MarshalJSON() ([]byte, error) {
	w := attachmentJSON{Netdev: a.Netdev, Switch: null.String(a.Switch), SwitchPort: null.String(a.SwitchPort),
		Source: null.String(string(a.Source)), LLDP: a.Neighbor, Reason: null.String(a.Reason)}
	if a.Age >= 0 && a.Source != "" && a.Source != SourceConfig {
		s := math.Round(a.Age.Seconds()*1000) / 1000
		w.Age = &s
	}
	return json.Marshal(w)
}

// UnmarshalJSON reads what MarshalJSON writes.
func (a *Attachment) UnmarshalJSON(b []byte) error {
	var w attachmentJSON
	if err := strictUnmarshal(b, &w); err != nil {
		return err
	}
	*a = Attachment{Netdev: w.Netdev, Age: -1, Neighbor: w.LLDP}
	if w.Switch != nil {
		a.Switch = *w.Switch
	}
	if w.SwitchPort != nil {
		a.SwitchPort = *w.SwitchPort
	}
	if w.Source != nil {
		a.Source = Source(*w.Source)
	}
	if w.Reason != nil {
		a.Reason = *w.Reason
	}
	if w.Age != nil {
		if *w.Age < 0 || math.IsNaN(*w.Age) || *w.Age > 1e9 {
			return fmt.Errorf("age_s %v: want 0..1e9 seconds", *w.Age)
		}
		a.Age = time.Duration(*w.Age * float64(time.Second))
	}
	return nil
}

func strictUnmarshal(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

// Validate checks what an attachment built by Attach always satisfies: a
// netdev name, a known source with a valid switch name, or no switch and
// a reason.
func (a Attachment) Validate() error {
	if a.Netdev == "" || len(a.Netdev) > 15 || strings.ContainsAny(a.Netdev, "/ \x00") {
		return fmt.Errorf("netdev name %q is not valid", a.Netdev)
	}
	if a.Switch == "" {
		if a.Reason == "" {
			return fmt.Errorf("%s: no switch and no reason", a.Netdev)
		}
		if a.Source != "" || a.SwitchPort != "" || a.Neighbor != nil {
			return fmt.Errorf("%s: no switch, yet a source, switch port or lldp neighbour", a.Netdev)
		}
		return nil
	}
	if !ValidSwitch(a.Switch) {
		return fmt.Errorf("%s: switch %q: want 1..%d characters of letters, digits, '_', '.', ':' and '-'", a.Netdev, a.Switch, MaxSwitchLen)
	}
	if a.Reason != "" {
		return fmt.Errorf("%s: a switch and a reason why it is unknown", a.Netdev)
	}
	switch a.Source {
	case SourceConfig:
		if a.Neighbor != nil {
			return fmt.Errorf("%s: a configured switch with an lldp neighbour", a.Netdev)
		}
	case SourceLLDP, SourceLLDPD:
		if a.Neighbor == nil {
			return fmt.Errorf("%s: source %s without its lldp neighbour", a.Netdev, a.Source)
		}
	default:
		return fmt.Errorf("%s: source %q: want %q, %q or %q", a.Netdev, a.Source, SourceLLDP, SourceLLDPD, SourceConfig)
	}
	return nil
}

type neighborJSON struct {
	ChassisID         string      `json:"chassis_id"`
	ChassisIDType     string      `json:"chassis_id_type"`
	PortID            string      `json:"port_id"`
	PortIDType        string      `json:"port_id_type"`
	SystemName        *string     `json:"system_name"`
	PortDescription   *string     `json:"port_description"`
	ManagementAddress *netip.Addr `json:"management_address"`
	TTL               uint16      `json:"ttl_s"`
}

// MarshalJSON writes the neighbour (docs/json.md, "lldp_neighbor"), null
// for the optional TLVs it did not send.
func (n Neighbor) MarshalJSON() ([]byte, error) {
	w := neighborJSON{ChassisID: n.ChassisID, ChassisIDType: n.ChassisIDType, PortID: n.PortID, PortIDType: n.PortIDType,
		SystemName: null.String(n.SystemName), PortDescription: null.String(n.PortDescription), TTL: n.TTL}
	if n.ManagementAddress.IsValid() {
		w.ManagementAddress = &n.ManagementAddress
	}
	return json.Marshal(w)
}

// UnmarshalJSON reads what MarshalJSON writes.
func (n *Neighbor) UnmarshalJSON(b []byte) error {
	var w neighborJSON
	if err := strictUnmarshal(b, &w); err != nil {
		return err
	}
	*n = Neighbor{ChassisID: w.ChassisID, ChassisIDType: w.ChassisIDType, PortID: w.PortID, PortIDType: w.PortIDType, TTL: w.TTL}
	if w.SystemName != nil {
		n.SystemName = *w.SystemName
	}
	if w.PortDescription != nil {
		n.PortDescription = *w.PortDescription
	}
	if w.ManagementAddress != nil {
		n.ManagementAddress = *w.ManagementAddress
	}
	return nil
}

// Heard is an LLDP frame heard on a netdev, and when.
type Heard struct {
	Neighbor Neighbor
	At       time.Time
}

// Observations are what Attach decides from, for a set of netdevs.
type Observations struct {
	// Now is when the attachments are decided (ages are measured to it).
	Now time.Time
	// Config names the switch per netdev; the key "" names it for every
	// netdev without its own entry (one ToR per node).
	Config map[string]string
	// LLDP holds the newest LLDP frame heard on each netdev.
	LLDP map[string]Heard
	// LLDPWhy says why no frame was heard, per netdev; the key "" for
	// every netdev (no raw socket: CAP_NET_RAW missing; not listened).
	LLDPWhy map[string]string
	// LLDPD is lldpd's neighbour table (ParseLLDPCli); LLDPDWhy says why
	// there is none (lldpcli not installed, lldpd not running).
	LLDPD    []LLDPDNeighbor
	LLDPDWhy string
}

// FirmwareNote is said of a netdev on which nothing was heard: a NIC
// whose firmware runs its own LLDP agent takes the switch's LLDP frames
// before the host sees them.
const FirmwareNote = "a NIC whose firmware runs an LLDP agent consumes the switch's LLDP frames: Intel E810 (ice) unless `ethtool --set-priv-flags NETDEV fw-lldp-agent off`, X710 (i40e) unless `disable-fw-lldp on`; NVIDIA ConnectX when its firmware LLDP is enabled (mlxconfig LLDP_NB_RX_MODE_P1/LLDP_NB_DCBX_P1)"

// Attach decides each netdev's attachment, sorted by netdev: the
// configured switch first (the operator's name, consistent over a fleet
// whatever each switch calls itself), else the LLDP frame heard on the
// netdev within its TTL, else lldpd's neighbour on it, else unknown with
// every source's reason. A frame whose TTL passed, or a shutdown LLDPDU
// (TTL 0), no longer counts.
func Attach(netdevs []string, o Observations) []Attachment {
	names := append([]string(nil), netdevs...)
	sort.Strings(names)
	names = compactSorted(names)
	lldpd := map[string]LLDPDNeighbor{}
	for _, n := range o.LLDPD {
		if _, dup := lldpd[n.Netdev]; !dup && n.Neighbor.Switch() != "" && n.Neighbor.TTL > 0 {
			lldpd[n.Netdev] = n
		}
	}
	out := make([]Attachment, 0, len(names))
	for _, nd := range names {
		a := Attachment{Netdev: nd, Age: -1}
		var why []string
		if sw, ok := o.Config[nd]; ok && sw != "" {
			a.Switch, a.Source = sw, SourceConfig
		} else if sw := o.Config[""]; sw != "" {
			a.Switch, a.Source = sw, SourceConfig
		}
		if a.Source == "" {
			if h, ok := o.LLDP[nd]; ok {
				age := max(o.Now.Sub(h.At), 0)
				switch {
				case h.Neighbor.TTL == 0:
					why = append(why, "LLDP: the switch sent a shutdown LLDPDU (TTL 0)")
				case age > time.Duration(h.Neighbor.TTL)*time.Second:
					why = append(why, fmt.Sprintf("LLDP: the last frame, %s ago, expired after its TTL of %d s", age.Round(time.Second), h.Neighbor.TTL))
				case h.Neighbor.Switch() == "":
					why = append(why, fmt.Sprintf("LLDP: neither the system name nor the chassis ID %q is a switch name", h.Neighbor.ChassisID))
				default:
					n := h.Neighbor
					a.Switch, a.SwitchPort, a.Source, a.Age, a.Neighbor = n.Switch(), n.SwitchPort(), SourceLLDP, age, &n
				}
			} else if w := o.LLDPWhy[nd]; w != "" {
				why = append(why, "LLDP: "+w)
			} else if w := o.LLDPWhy[""]; w != "" {
				why = append(why, "LLDP: "+w)
			} else {
				why = append(why, "LLDP: no frame heard")
			}
		}
		if a.Source == "" {
			if n, ok := lldpd[nd]; ok {
				nb := n.Neighbor
				a.Switch, a.SwitchPort, a.Source, a.Age, a.Neighbor = nb.Switch(), nb.SwitchPort(), SourceLLDPD, max(n.Age, -1), &nb
			} else if o.LLDPDWhy != "" {
				why = append(why, "lldpd: "+o.LLDPDWhy)
			} else {
				why = append(why, "lldpd: no neighbour on "+nd)
			}
		}
		if a.Source == "" {
			why = append(why, "no switch configured", FirmwareNote)
			a.Reason = strings.Join(why, "; ")
		}
		out = append(out, a)
	}
	return out
}

func compactSorted(s []string) []string {
	out := s[:0]
	for i, v := range s {
		if v != "" && (i == 0 || v != s[i-1]) {
			out = append(out, v)
		}
	}
	return out
}
