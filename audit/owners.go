package audit

import (
	"net/netip"

	"github.com/roce-probe/roce-probe/census"
	"github.com/roce-probe/roce-probe/roce"
)

// OwnersOf joins wire entries to the QP census c (nil: no owners). A
// frame's BTH carries the destination QP, so for connected transports
// (RC, UC, XRC) the local QP is the one whose destination QP (the
// census's dest_qp, RDMA_NLDEV_ATTR_RES_RQPN) it is; a UD frame's DETH
// names its source QP, the local QP itself. Two local QPs connected to
// QPs of the same number on different hosts are told apart by the frames'
// destination address where the census has their rdma_cm IDs.
func OwnersOf(c *census.Census) OwnerOf {
	if c == nil {
		return nil
	}
	return func(device string, tr roce.Transport, destQP uint32, srcQP *uint32, dst netip.Addr) []Owner {
		var out []Owner
		for _, q := range c.QPs {
			if q.Device != device {
				continue
			}
			match := false
			switch {
			case srcQP != nil:
				match = q.QPN == *srcQP
			case tr != roce.TransportUD:
				match = q.DestQP != nil && *q.DestQP == destQP
			}
			if match {
				out = append(out, Owner{Device: q.Device, Port: q.Port, QPN: q.QPN, PID: q.PID, Comm: q.Comm})
			}
		}
		if len(out) < 2 || !dst.IsValid() {
			return out
		}
		var narrowed []Owner
		for _, o := range out {
			for _, id := range c.CMIDs {
				if id.Device == device && id.QPN != nil && *id.QPN == o.QPN && id.Dst.IsValid() && id.Dst.Addr().Unmap() == dst {
					narrowed = append(narrowed, o)
					break
				}
			}
		}
		if len(narrowed) > 0 {
			return narrowed
		}
		return out
	}
}
