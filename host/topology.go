package host

import (
	"fmt"

	"github.com/roce-probe/roce-probe/topology"
)

// Topology is the snapshot's "topology" section: one attachment per RoCE
// netdev — the real netdevs below the RDMA ports (a bond's slaves each
// have theirs) —, its switch and switch port, or why they are not known
// (docs/snapshot.md, "Topology").
type Topology struct {
	Attachments []topology.Attachment `json:"attachments"`
}

// AttachmentOf returns netdev's attachment, nil when the snapshot has none
// for it.
func (t *Topology) AttachmentOf(netdev string) *topology.Attachment {
	if t == nil {
		return nil
	}
	for i := range t.Attachments {
		if t.Attachments[i].Netdev == netdev {
			return &t.Attachments[i]
		}
	}
	return nil
}

// Validate checks every attachment and that no netdev has two.
func (t *Topology) Validate() error {
	if t == nil {
		return nil
	}
	seen := map[string]bool{}
	for i, a := range t.Attachments {
		if err := a.Validate(); err != nil {
			return fmt.Errorf("topology.attachments[%d]: %w", i, err)
		}
		if seen[a.Netdev] {
			return fmt.Errorf("topology.attachments: netdev %s appears twice", a.Netdev)
		}
		seen[a.Netdev] = true
	}
	return nil
}
