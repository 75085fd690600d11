package host

import (
	"github.com/roce-probe/roce-probe/qos"
	"github.com/roce-probe/roce-probe/vlan"
)

// DCBSource is the SourceError.Source of a failed DCB read of netdev in
// namespace netns ("" for the collector's own): "dcb <netdev>" or
// "dcb <netns>/<netdev>". The collector names its errors with it and
// readers look them up by it.
func DCBSource(netns, netdev string) string {
	if netns == "" {
		return "dcb " + netdev
	}
	return "dcb " + netns + "/" + netdev
}

// QoSReports returns what decides the priority of netdev's traffic in
// namespace netns ("" for the snapshot's view): its qos.Report, with the
// DCB state of its real netdev and that netdev's DCQCN settings, followed,
// when the real netdev is a bond (RoCE LAG), by one report per slave
// (vlan.Bond.Members; SlaveOf names the bond): a bond has no DCB, each
// slave's applies to the traffic it carries. A report whose DCB is nil says
// why in DCBError. It needs the namespaces and dcb sections; its errors
// wrap vlan.ErrNoLink for an unknown netdev.
func (s *Snapshot) QoSReports(netns, netdev string) ([]qos.Report, error) {
	ns, err := s.Namespace(netns)
	if err != nil {
		return nil, err
	}
	return s.qosReports(ns, netdev)
}

// QoSReports returns the QoS reports (Snapshot.QoSReports) of the netdev
// of port port of RDMA device dev, each naming the device, port and
// driver; none for an InfiniBand port or one without a netdev. Its errors
// wrap ErrNoDevice for an unknown port.
func (v *View) QoSReports(dev string, port int) ([]qos.Report, error) {
	p, err := v.Port(dev, port)
	if err != nil {
		return nil, err
	}
	if p.LinkLayer != "Ethernet" || p.Netdev == "" {
		return nil, nil
	}
	rs, err := v.Snap.qosReports(v.NS, p.Netdev)
	if err != nil {
		return nil, err
	}
	info := v.Driver(dev)
	for i := range rs {
		rs[i].Device, rs[i].Port, rs[i].Driver = dev, port, &info
	}
	return rs, nil
}

func (s *Snapshot) qosReports(ns *vlan.Namespace, netdev string) ([]qos.Report, error) {
	if s.DCB == nil {
		return nil, &MissingError{Section: "dcb"}
	}
	desc, err := ns.Describe(netdev)
	if err != nil {
		return nil, err
	}
	one := func(nd, real string) (qos.Report, error) {
		d, _ := s.DCBOf(ns.Netns, real)
		r, err := qos.NewReport(ns, nd, d)
		if err != nil {
			return r, err
		}
		if d == nil {
			e := s.dcbError(ns.Netns, real)
			r.DCBError = &e
		}
		r.DCQCN = s.Settings.DCQCNOf(real)
		return r, nil
	}
	r, err := one(netdev, desc.Real)
	if err != nil {
		return nil, err
	}
	if b := desc.Boundary(); b != "" {
		// A pod's netdev: the real netdev and its DCB are in another
		// namespace, not unread.
		r.Real, r.DCBError = "", &b
	}
	out := []qos.Report{r}
	if desc.Bond != nil {
		// RoCE LAG: the bond has no DCB; each slave's applies to the
		// traffic it carries.
		for _, sl := range desc.Bond.Members() {
			r, err := one(sl, sl)
			if err != nil {
				return nil, err
			}
			r.SlaveOf = desc.Bond.Name
			out = append(out, r)
		}
	}
	return out, nil
}

// dcbError says why the snapshot has no DCB state for netdev: the
// collection error, or that nothing was read for it.
func (s *Snapshot) dcbError(netns, netdev string) string {
	for _, e := range s.ErrorsOf(DCBSource(netns, netdev)) {
		return e.Error
	}
	// Printed after "not read: " (and as dcb_error): not "not read" again.
	return "no DCB state was recorded for " + netdev
}
