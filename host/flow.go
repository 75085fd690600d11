package host

import "github.com/roce-probe/roce-probe/qos"

// FlowParams are what an application sets on a flow: the address handle's
// sl and traffic class (verbs), or, for a connection rdma_cm sets up, the
// ToS it asks for (none: rdma_cm's default applies).
type FlowParams struct {
	// SL and TrafficClass are a verbs flow's ibv_ah_attr.sl and
	// grh.traffic_class; not used for an rdma_cm flow.
	SL, TrafficClass uint8
	// RDMACM makes it an rdma_cm flow: its sl and traffic class come from
	// the ToS.
	RDMACM bool
	// TOS is the rdma_cm flow's ToS (rdma_set_option
	// RDMA_OPTION_ID_TOS); nil when the application sets none, and
	// rdma_cm uses the port's configfs default_roce_tos.
	TOS *uint8
	// Path is how the address vector reaches the driver; "" lets
	// qos.Check pick (user-ah for verbs, connected-qp for rdma_cm).
	Path qos.Path
}

// Flow returns the qos.Flow of traffic from src with p, as this host
// sends it: src's entry, netdev stack (qos.LinkOf), driver and DCB, p's
// markings, and the settings the host applies behind the application's
// back, from the snapshot's settings section —
//   - for an rdma_cm flow without a ToS, the port's configfs
//     default_roce_tos (drivers/infiniband/core/cma.c,
//     cma_resolve_iboe_route: tos = id_priv->tos_set ? id_priv->tos :
//     default_roce_tos); when the snapshot does not have it, an entry
//     "not exposed" saying why, so that qos.Check assumes the kernel's
//     initial 0 and warns;
//   - the port's driver traffic class override (MLNX_OFED mlx5's
//     tc/<port>/traffic_class), which replaces a connected QP's traffic
//     class.
//
// It is the one builder of a flow: `roce-probe check` and the agent's
// flows check what it returns (qos.Check).
func (v *View) Flow(src *Source, p FlowParams) qos.Flow {
	dev, port := src.Port.Device, src.Port.Port
	f := qos.Flow{
		Device: dev, Port: port, GIDIndex: src.Entry.Index, GIDType: src.Entry.Type, Driver: src.Driver.Driver,
		Link: qos.LinkOf(src.Desc), DCB: src.DCB, Bond: src.Bond, Path: p.Path,
		SL: p.SL, TrafficClass: p.TrafficClass, RDMACM: p.RDMACM,
	}
	var st *Settings
	if v != nil {
		f.Predicted = v.Predicted
		if v.Snap != nil {
			st = v.Snap.Settings
		}
	}
	if p.RDMACM {
		if p.TOS != nil {
			f.TOS = *p.TOS
		} else {
			f.TOSDefault = st.RDMACMOf(dev, port)
			if f.TOSDefault == nil {
				why := "the snapshot has no settings section (take it with 'roce-probe collect')"
				if st != nil {
					why = "no rdma_cm entry for the port in the snapshot"
				}
				f.TOSDefault = &qos.RDMACMDefault{Device: dev, Port: port, Status: qos.SettingNotExposed, Reason: &why}
			}
		}
	}
	f.TCOverride = st.TCOverrideOf(dev, port)
	return f
}
